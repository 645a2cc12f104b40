"""Hugging Face data that anyone may have made: a ``save_to_disk`` folder with a FIFO, a link
out or a tampered ``state.json``; columns of other types or of bytes that are not UTF-8;
ClassLabel names that are no tags; ``hf:`` names that are paths; streaming and formatted
Dataset objects. Each ends in a corpus or in one line naming the file and what was expected,
checked before ``datasets`` or ``pyarrow`` opens a file, so nothing hangs."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from inprocess import seqrep
from tampering import cli, edit_json, released, replace

datasets = pytest.importorskip("datasets")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from seqrep import load_corpus  # noqa: E402
from seqrep.data.conll import read_conll  # noqa: E402
from seqrep.errors import ConfigError, DataError, SeqrepError  # noqa: E402

NAMES = ["O", "B-PER", "I-PER", "B-LOC"]
PAIRS = [(["Ada", "Lovelace", "met", "Bob"], ["B-PER", "I-PER", "O", "B-PER"]),
         (["Paris", "is", "big"], ["B-LOC", "O", "O"]),
         (["Bob", "left", "Rome"], ["B-PER", "O", "B-LOC"])]
ARROW = "data-00000-of-00001.arrow"


def _features(names: list[str] = NAMES, tags: object = None) -> datasets.Features:
    return datasets.Features({"tokens": datasets.List(datasets.Value("string")),
                              "ner_tags": datasets.List(tags or datasets.ClassLabel(names=names))})


def _dataset(pairs=PAIRS, names: list[str] = NAMES) -> datasets.Dataset:
    return datasets.Dataset.from_dict(
        {"tokens": [w for w, _ in pairs], "ner_tags": [[names.index(t) for t in ts]
                                                       for _, ts in pairs]},
        features=_features(names))


def _conll(tmp_path: Path, pairs=PAIRS) -> list:
    """The sentences of ``pairs`` written as a CoNLL file and read back (the reference)."""
    path = tmp_path / "same.txt"
    path.write_text("\n\n".join("\n".join(f"{w} {t}" for w, t in zip(*p, strict=True))
                                for p in pairs) + "\n", encoding="utf-8")
    return read_conll(path).sentences


def _saved(tmp_path: Path, name: str = "saved", ds: datasets.Dataset | None = None) -> Path:
    folder = tmp_path / name
    (ds or _dataset()).save_to_disk(str(folder))
    return folder


def _one_line(code: object, err: str, *words: str) -> str:
    assert code == 2, (code, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in lines[0], err
    return lines[0]


# 5. save_to_disk folders: the whole folder checked, state.json and dataset_info.json read
# bounded, before datasets or pyarrow reads a file of it

@pytest.mark.parametrize("where, what, says", [
    (ARROW, "<fifo>", "FIFO"),
    ("state.json", "<fifo>", "FIFO"),
    ("dataset_info.json", "<fifo>", "FIFO"),
    ("extra.arrow", "<fifo>", "FIFO"),  # a FIFO beside the files is refused too
    (ARROW, "<link>/dev/zero", "outside"),
    (ARROW, "<link>../other/" + ARROW, "outside"),
    (ARROW, "<link>" + ARROW, "loops"),  # found by the fuzz: a RuntimeError in resolve()
    ("state.json", "<dir>", "folder"),  # found by the fuzz: an IsADirectoryError
])
@pytest.mark.parametrize("kind", ["dataset", "dict"])
def test_a_fifo_or_a_link_out_of_a_saved_folder_is_refused_before_it_is_opened(
        tmp_path, kind, where, what, says):
    _saved(tmp_path, "other", _dataset(PAIRS[:1]))
    if kind == "dict":
        root = tmp_path / "dict"
        datasets.DatasetDict({"train": _dataset()}).save_to_disk(str(root))
        folder = root / "train"
        what = what.replace("<link>../", "<link>../../")
    else:
        root = folder = _saved(tmp_path)
    replace(folder / where, what)
    with released([folder / where]):
        code, _, err = cli("data", "stats", str(root), seconds=20)
    _one_line(code, err, where, says)


@pytest.mark.parametrize("filename", [f"../other/{ARROW}", f"../../other/{ARROW}",
                                      "sub/" + ARROW, "/etc/hostname", ".", "", 3])
def test_state_json_names_only_files_of_its_own_folder(tmp_path, filename):
    folder = _saved(tmp_path / "x" / "y", "saved")
    other = _saved(tmp_path / "x" / "y", "other", _dataset(PAIRS[:1]))
    shutil.copytree(other, tmp_path / "x" / "other")  # both ../ and ../../ lead to a dataset
    (folder / "sub").mkdir()
    shutil.copy(folder / ARROW, folder / "sub" / ARROW)

    def point(state: dict) -> None:
        state["_data_files"] = [{"filename": filename}]

    edit_json(folder / "state.json", point)
    with pytest.raises(DataError) as err:
        load_corpus(folder)
    assert "state.json" in str(err.value) and "_data_files" in str(err.value)


@pytest.mark.parametrize("change, field", [
    (lambda s: s.update(_format_type="custom"), "_format_type"),
    (lambda s: s.update(_format_type=5), "_format_type"),
    (lambda s: s.update(_format_columns=["nope"]), "_format_columns"),
    (lambda s: s.update(_format_columns=3), "_format_columns"),
    (lambda s: s.update(_format_kwargs=[1]), "_format_kwargs"),
    (lambda s: s.update(_output_all_columns="yes"), "_output_all_columns"),
    (lambda s: s.update(_data_files="x"), "_data_files"),
    (lambda s: s.update(_data_files=[]), "_data_files"),
    (lambda s: s.update(_data_files=[["x"]]), "_data_files"),
    (lambda s: s.pop("_data_files") and None, "_data_files"),
    (lambda s: [s], "state.json"),
])
def test_a_tampered_state_json_is_one_line(tmp_path, change, field):
    folder = _saved(tmp_path)
    edit_json(folder / "state.json", change)
    code, _, err = cli("data", "stats", str(folder), seconds=20)
    _one_line(code, err, "state.json", field)


def test_state_and_info_json_are_read_bounded_and_checked(tmp_path):
    folder = _saved(tmp_path)
    state = (folder / "state.json").read_text()
    (folder / "state.json").write_text(state + " " * (2 << 20))  # valid JSON, 2 MiB
    code, _, err = cli("data", "stats", str(folder), seconds=20)
    _one_line(code, err, "state.json", "bytes")
    (folder / "state.json").write_text(state)
    (folder / "dataset_info.json").write_text("{\"features\": ")
    code, _, err = cli("data", "stats", str(folder), seconds=20)
    _one_line(code, err, "dataset_info.json")


def test_a_saved_format_is_read_as_the_plain_rows(tmp_path):
    for fmt in ("numpy", "torch", "pandas", "arrow"):
        folder = _saved(tmp_path, fmt, _dataset().with_format(fmt, columns=["tokens"]))
        assert load_corpus(folder).sentences == _conll(tmp_path)


@pytest.mark.parametrize("name", ["hf:../d", "hf:./d", "hf:..", "hf:org/..", "hf:a/b/c",
                                  "hf:.hidden/x", "hf:org/name:../x", "hf:org--x/y"])
def test_hf_names_that_are_paths_are_refused_before_loading(name, monkeypatch):
    asked = []
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: asked.append(a))
    with pytest.raises(ConfigError, match="expected hf:ORG/NAME"):
        load_corpus(name)
    assert asked == []


def test_an_hf_name_that_is_a_local_folder_is_refused(tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: asked.append(a))
    monkeypatch.chdir(tmp_path)
    _saved(tmp_path, "mine")
    with pytest.raises(ConfigError, match="local folder"):
        load_corpus("hf:mine")
    assert asked == []


# 6. columns of other types, and text that is not UTF-8: one line naming file and column

def _not_utf8(values: list[bytes]) -> pa.Array:
    """A string column holding bytes that are not UTF-8 (``view`` does not validate)."""
    return pa.array(values, pa.binary()).view(pa.string())


def _table(tokens: pa.Array | None = None, tags: pa.Array | None = None,
           **extra: pa.Array) -> pa.Table:
    tokens = tokens if tokens is not None else pa.array([w for w, _ in PAIRS],
                                                        pa.list_(pa.string()))
    tags = tags if tags is not None else pa.array([t for _, t in PAIRS], pa.list_(pa.string()))
    return pa.table({"tokens": tokens, "ner_tags": tags, **extra})


def _list_of(values: pa.Array, sizes: tuple[int, ...] = (4, 3, 3)) -> pa.Array:
    offsets = [0]
    for n in sizes:
        offsets.append(offsets[-1] + n)
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values)


WORDS = [w for ws, _ in PAIRS for w in ws]
TAGS = [t for _, ts in PAIRS for t in ts]


@pytest.mark.parametrize("table, column, expected", [
    (_table(tokens=_list_of(_not_utf8([w.encode() for w in WORDS[:-1]] + [b"\xff"]))),
     "tokens", "UTF-8"),
    (_table(tags=_list_of(_not_utf8([t.encode() for t in TAGS[:-1]] + [b"O\xc3"]))),
     "ner_tags", "UTF-8"),
    (_table(doc_id=_not_utf8([b"a", b"\xe9", b"b"])), "doc_id", "UTF-8"),
    (_table(tokens=_list_of(pa.array([w.encode() for w in WORDS], pa.binary()))),
     "tokens", "string"),
    (_table(tokens=_list_of(pa.array(range(10), pa.date32()))), "tokens", "string"),
    (_table(tags=_list_of(pa.array(range(10), pa.timestamp("s")))), "ner_tags", "ClassLabel"),
    (_table(doc_id=pa.array([b"a", b"b", b"c"], pa.binary())), "doc_id", "string"),
    (_table(doc_id=pa.array([1, 2, 3], pa.timestamp("ms"))), "doc_id", "string"),
    (_table(tokens=pa.array(["a b c d", "x y z", "p q r"])), "tokens", "list"),
])
def test_columns_of_other_types_are_one_line_in_data_stats_and_train(tmp_path, tiny, table,
                                                                      column, expected):
    path = tmp_path / "bad.parquet"
    pq.write_table(table, path)
    code, _, err = cli("data", "stats", str(path), seconds=30)
    _one_line(code, err, str(path), column, expected)
    out = tmp_path / "run"
    ran = seqrep("train", "--model", tiny("llama"), "--dataset", str(path), "--test-split", "",
                 "--max-steps", "1", "-o", str(out))
    _one_line(ran.returncode, ran.stderr, column, expected)
    assert not out.exists()


# 7. ClassLabel names: only the names rows use are tags; each must be one

def _parquet_ids(path: Path, names: list[str], ids: list[list[int]], words=None) -> Path:
    """A parquet file of ClassLabel ids as ``Dataset.to_parquet`` writes it (the features in
    the schema's metadata), written through pyarrow so that any id can be stored."""
    schema = _features(names).arrow_schema
    words = words or [[f"w{k}" for k in range(len(row))] for row in ids]
    pq.write_table(pa.table({"tokens": words, "ner_tags": ids}, schema=schema), path)
    return path


@pytest.mark.parametrize("names, ids", [
    (["O", "B-PER", "I-PER", ""], [[0, 1, 3]]),
    (["O", ""], [[0, 1, 1]]),
    (["", "PER"], [[0, 1, 0]]),
])
def test_an_empty_classlabel_name_is_refused_in_one_line(tmp_path, names, ids):
    path = _parquet_ids(tmp_path / "empty.parquet", names, ids)
    with pytest.raises(DataError, match='ClassLabel name ""'):
        load_corpus(path)
    code, _, err = cli("data", "stats", str(path), seconds=30)
    _one_line(code, err, str(path), "ner_tags", '""')


def test_classlabel_names_no_row_uses_are_not_read(tmp_path):
    names = NAMES + ["X", " spaced ", ""]  # no row uses the last three
    ds = _dataset(names=names)
    assert load_corpus(ds).sentences == _conll(tmp_path)
    path = _parquet_ids(tmp_path / "unused.parquet", names,
                        [[names.index(t) for t in ts] for _, ts in PAIRS],
                        [w for w, _ in PAIRS])
    code, out, err = cli("data", "stats", str(path), "--json", seconds=30)
    assert code == 0, err
    assert json.loads(out)["spans"] == 5  # counted by hand: 2 + 1 + 2
    # a name a row does use is still checked: 'X' beside prefixed tags
    used = _parquet_ids(tmp_path / "used.parquet", names, [[0, 1, 4]])
    code, _, err = cli("data", "stats", str(used), seconds=30)
    _one_line(code, err, "ClassLabel names", "'X'")


@pytest.mark.parametrize("bad", [4, -1, 99])
def test_a_tag_id_out_of_the_names_is_refused(tmp_path, bad):
    path = _parquet_ids(tmp_path / "ids.parquet", NAMES, [[0, 1], [0, bad]])
    with pytest.raises(DataError) as err:
        load_corpus(path)
    assert "row 2" in str(err.value) and "from 0 to 3" in str(err.value)


def test_a_lone_dataset_is_one_split():
    assert [s.words for s in load_corpus(_dataset())] == [tuple(w) for w, _ in PAIRS]
    for split in ("validation", "test"):
        with pytest.raises(ConfigError, match="does not apply to a Dataset"):
            load_corpus(_dataset(), split)


@pytest.mark.parametrize("fmt", ["torch", "numpy", "pandas", "arrow", "polars"])
def test_a_formatted_dataset_reads_as_the_plain_one(tmp_path, fmt):
    if fmt == "polars":
        pytest.importorskip("polars")
    assert load_corpus(_dataset().with_format(fmt)).sentences == _conll(tmp_path)
    picked = _dataset().select([2, 0]).with_format(fmt, columns=["ner_tags"])
    assert load_corpus(picked).sentences == _conll(tmp_path, [PAIRS[2], PAIRS[0]])
    split = datasets.DatasetDict({"train": _dataset().with_format(fmt)})
    assert load_corpus(split).sentences == _conll(tmp_path)


def test_streaming_datasets_are_refused_in_one_line(tmp_path, tiny):
    from seqrep import train_labeler

    streamed = _dataset().to_iterable_dataset()
    for value in (streamed, datasets.IterableDatasetDict({"train": streamed})):
        with pytest.raises(SeqrepError, match="materialize") as err:
            load_corpus(value)
        assert len(str(err.value).splitlines()) == 1
        with pytest.raises(SeqrepError, match="materialize"):
            train_labeler(value, model=tiny("llama"), output=tmp_path / "run", quiet=True)
        assert not (tmp_path / "run").exists()


def test_a_fifo_named_as_an_arrow_file_is_refused(tmp_path):
    os.mkfifo(tmp_path / "data.arrow")
    with released([tmp_path / "data.arrow"]):
        code, _, err = cli("data", "stats", str(tmp_path / "data.arrow"), seconds=20)
    _one_line(code, err, "data.arrow", "FIFO")


def test_a_categorical_document_column_reads_as_its_values(tmp_path):
    path = tmp_path / "docs.parquet"
    pq.write_table(_table(doc_id=pa.array(["a", "a", "b"]).dictionary_encode()), path)
    assert [s.doc_id for s in load_corpus(path)] == ["a", "a", "b"]
