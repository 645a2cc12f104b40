"""A tampering fuzz (hypothesis) of Hugging Face data on disk: ``save_to_disk`` folders (a
Dataset's and a DatasetDict's) whose ``state.json``, ``dataset_info.json`` or
``dataset_dict.json`` fields are replaced by random JSON, whose files are replaced by links
(inside, outside, to a device, broken), FIFOs, folders, garbage or truncated copies; and parquet
files whose columns (for prediction inputs and for training) are of random arrow types. Every
case ends in a result or in one line of a SeqrepError, never another exception, and never
hangs: each read runs under a deadline, with any FIFO released after a few seconds so that a
read which opens one fails instead of blocking.

Budget: 40 derandomized examples per test (a few seconds each); ``SEQREP_FUZZ_EXAMPLES=N``
runs N fresh random ones.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tampering import deadline, edit_json, released, replace

datasets = pytest.importorskip("datasets")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from seqrep import load_corpus  # noqa: E402
from seqrep.data.types import Corpus  # noqa: E402
from seqrep.errors import SeqrepError  # noqa: E402
from seqrep.predict.inputs import count_records, read_records  # noqa: E402

_N = int(os.environ.get("SEQREP_FUZZ_EXAMPLES") or 0)
FUZZ = settings(max_examples=_N or 40, derandomize=not _N, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
ARROW = "data-00000-of-00001.arrow"
NAMES = ["O", "B-PER", "I-PER", "B-LOC"]
ROWS = {"tokens": [["Ada", "met", "Bob"], ["Paris", "is", "big"]],
        "ner_tags": [[1, 0, 1], [3, 0, 0]], "doc_id": ["d1", "d2"]}


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    """A Dataset's save_to_disk folder (``one``) and a DatasetDict's (``dict``)."""
    root = tmp_path_factory.mktemp("saved")
    features = datasets.Features({"tokens": datasets.List(datasets.Value("string")),
                                  "ner_tags": datasets.List(datasets.ClassLabel(names=NAMES)),
                                  "doc_id": datasets.Value("string")})
    ds = datasets.Dataset.from_dict(ROWS, features=features)
    ds.save_to_disk(str(root / "one"))
    datasets.DatasetDict({"train": ds, "test": ds}).save_to_disk(str(root / "dict"))
    return root


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 2**63) | st.floats() | st.text(max_size=8)
    | st.sampled_from(["custom", "numpy", "torch", "tokens", ARROW, "../one/" + ARROW,
                       "/dev/zero", ".", "..", "train", "ClassLabel", "List", "Value"]),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["filename", "_type", "names", "feature", "dtype",
                                       "tokens", "ner_tags", "splits"]) | st.text(max_size=4),
                      inner, max_size=3),
    max_leaves=8)

FILES = ["state.json", "dataset_info.json", ARROW, "extra"]
PUT = st.one_of(
    st.sampled_from(["<fifo>", "<dir>", "<gone>", "<link>/dev/zero", "<link>/dev/null",
                     "<link>../../outside.arrow", "<link>missing", "<link>" + ARROW,
                     "<link>state.json", "<truncate>", b"", b"{}", b"[]", b"\xff\xfe",
                     b"null"]),
    st.binary(min_size=1, max_size=64))


@st.composite
def tamperings(draw: Any) -> list[tuple[Any, ...]]:
    """One to three edits: ("json", file, path of keys, new value or "<del>"), or ("file",
    file, what to put there)."""
    edits = []
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            file = draw(st.sampled_from(["state.json", "dataset_info.json"]))
            keys = {"state.json": ["_data_files", "_fingerprint", "_format_columns",
                                   "_format_kwargs", "_format_type", "_output_all_columns",
                                   "_split"],
                    "dataset_info.json": ["features", "splits", "citation"]}[file]
            key = draw(st.sampled_from(keys))
            sub = draw(st.sampled_from([None, "tokens", "ner_tags", "doc_id"])) \
                if key == "features" else None
            edits.append(("json", file, key, sub, draw(json_values | st.just("<del>"))))
        else:
            edits.append(("file", draw(st.sampled_from(FILES)), draw(PUT)))
    return edits


def _edit_json(path: Path, key: str, sub: str | None, value: Any) -> None:
    def change(data: Any) -> None:
        if not isinstance(data, dict):
            return
        target = data
        if sub is not None:
            target = data.get(key)
            if not isinstance(target, dict):
                return
            key_ = sub
        else:
            key_ = key
        if value == "<del>":
            target.pop(key_, None)
        else:
            target[key_] = value

    try:
        edit_json(path, change)
    except (OSError, ValueError):  # the file was replaced by something that is no JSON
        pass


def _apply(folder: Path, edits: list[tuple[Any, ...]]) -> list[Path]:
    """Make the edits in ``folder``; the FIFOs made."""
    fifos = []
    for edit in edits:
        if edit[0] == "json":
            _, file, key, sub, value = edit
            if (folder / file).is_file() and not (folder / file).is_symlink():
                _edit_json(folder / file, key, sub, value)
            continue
        _, file, put = edit
        path = folder / file
        if put == "<truncate>":
            if path.is_file() and not path.is_symlink():
                path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
            continue
        replace(path, put)
        if put == "<fifo>":
            fifos.append(path)
    return fifos


def _ends_well(read: Any, fifos: list[Path]) -> str:
    """``read()`` gives a result or one SeqrepError line, within a deadline."""
    try:
        with released(fifos), deadline(30):
            result = read()
    except SeqrepError as err:
        assert len(str(err).strip().splitlines()) == 1, str(err)
        return type(err).__name__
    if isinstance(result, Corpus):
        assert all(len(s.words) == len(s.tags) for s in result)
    return "read"


@FUZZ
@given(edits=tamperings(), kind=st.sampled_from(["one", "dict"]))
def test_a_tampered_saved_folder_reads_or_is_one_line(saved, edits, kind):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "x" / kind
        shutil.copytree(saved / kind, root)
        (Path(tmp) / "outside.arrow").write_bytes((saved / "one" / ARROW).read_bytes())
        folder = root / "train" if kind == "dict" else root
        if kind == "dict" and edits and edits[0][0] == "json" and edits[0][2] == "citation":
            _edit_json(root / "dataset_dict.json", "splits", None, edits[0][4])
        fifos = _apply(folder, edits)
        _ends_well(lambda: load_corpus(root), fifos)


# parquet files with columns of random arrow types

def _not_utf8() -> pa.Array:
    return pa.array([b"ok", b"\xff", None], pa.binary()).view(pa.string())


COLUMNS = {
    "string": lambda: pa.array(["Ada met Bob", "Paris", None]),
    "large_string": lambda: pa.array(["a b", "c", "d"], pa.large_string()),
    "dictionary": lambda: pa.array(["a", "a", "b"]).dictionary_encode(),
    "not_utf8": _not_utf8,
    "binary": lambda: pa.array([b"a", b"b", None], pa.binary()),
    "int": lambda: pa.array([1, 2, None]),
    "float": lambda: pa.array([1.5, float("nan"), None]),
    "bool": lambda: pa.array([True, False, None]),
    "date32": lambda: pa.array([1, 2, 3], pa.date32()),
    "timestamp": lambda: pa.array([1, 2, 3], pa.timestamp("s")),
    "duration": lambda: pa.array([1, 2, 3], pa.duration("s")),
    "decimal": lambda: pa.array([1, 2, 3], pa.decimal128(5, 2)),
    "null": lambda: pa.array([None, None, None]),
    "struct": lambda: pa.array([{"a": "x"}, {"a": "y"}, None]),
    "list_string": lambda: pa.array([["Ada", "met"], ["O", "B-PER"], []]),
    "list_not_utf8": lambda: pa.ListArray.from_arrays(pa.array([0, 1, 2, 3], pa.int32()),
                                                      _not_utf8()),
    "list_binary": lambda: pa.array([[b"a"], [b"b"], None], pa.list_(pa.binary())),
    "list_int": lambda: pa.array([[0, 1], [3, 99], [-1]]),
    "list_null": lambda: pa.array([[None], [], None], pa.list_(pa.string())),
    "list_list": lambda: pa.array([[["a"]], [], None]),
    "large_list": lambda: pa.array([["a", "b"], ["c"], []], pa.large_list(pa.string())),
}
column_kinds = st.sampled_from(sorted(COLUMNS)) | st.none()


@FUZZ
@given(kinds=st.tuples(column_kinds, column_kinds, column_kinds),
       training=st.booleans(), names=st.booleans())
def test_parquet_columns_of_random_types_read_or_are_one_line(kinds, training, names):
    fields = ("tokens", "ner_tags", "doc_id") if training else ("text", "words", "doc_id")
    columns = {f: COLUMNS[k]() for f, k in zip(fields, kinds, strict=True) if k is not None}
    if not columns:
        columns = {"other": pa.array([1, 2, 3])}
    table = pa.table(columns)
    if training and names and "ner_tags" in columns:  # the ClassLabel names in the metadata
        features = datasets.Features({"ner_tags": datasets.List(datasets.ClassLabel(
            names=NAMES))})
        table = table.replace_schema_metadata(features.arrow_schema.metadata)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("data.parquet" if training else "in.PARQUET")
        pq.write_table(table, path)
        if training:
            _ends_well(lambda: load_corpus(path), [])
        else:
            _ends_well(lambda: list(read_records(path)), [])
            _ends_well(lambda: count_records(path), [])
