"""``seqrep predict`` reads a ``.parquet`` input (any case of the suffix) as its JSONL
records: a ``text`` or ``words`` column and an optional ``doc_id``. A column of another type,
bytes that are not UTF-8 or a corrupt page is one line naming the file, the column (or the row
group) and what was expected, before the model labels anything."""

from __future__ import annotations

from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from seqrep.errors import DataError  # noqa: E402
from seqrep.model.labeler import SequenceLabeler  # noqa: E402
from seqrep.predict.inputs import count_records, read_records  # noqa: E402

TEXTS = ["Obama visited Paris.", "Maria left Tokyo today!", "Then they left."]


def _write(path: Path, **columns: pa.Array) -> Path:
    pq.write_table(pa.table(columns), path)
    return path


def _not_utf8(values: list[bytes]) -> pa.Array:
    return pa.array(values, pa.binary()).view(pa.string())  # view does not validate


@pytest.mark.parametrize("column, values, expected", [
    ("text", pa.array([t.encode() for t in TEXTS], pa.binary()), "string"),
    ("text", pa.array([1, 2, 3], pa.date32()), "string"),
    ("text", pa.array([1, 2, 3], pa.timestamp("s")), "string"),
    ("text", pa.array([1, 2, 3], pa.decimal128(5, 2)), "string"),
    ("text", pa.array([1, 2, 3]), "string"),
    ("text", _not_utf8([b"fine", b"\xff\xfe", b"x"]), "UTF-8"),
    ("words", pa.array([[b"a"], [b"b"], [b"c"]], pa.list_(pa.binary())), "list of strings"),
    ("words", pa.array(["a", "b", "c"]), "list of strings"),
    ("words", pa.array([["a"], ["b"], [None]], pa.list_(pa.string())), "words"),
    ("doc_id", pa.array([b"a", b"a", b"b"], pa.binary()), "string"),
    ("doc_id", pa.array([1, 2, 3], pa.timestamp("ms")), "string"),
    ("doc_id", _not_utf8([b"a", b"\xc3", b"b"]), "UTF-8"),
])
def test_a_column_of_another_type_is_one_line(tmp_path, column, values, expected):
    columns = {"text": pa.array(TEXTS)} if column == "doc_id" else {}
    path = _write(tmp_path / "in.parquet", **columns, **{column: values})
    with pytest.raises(DataError) as err:
        list(read_records(path))
    message = str(err.value)
    assert len(message.splitlines()) == 1 and str(path) in message, message
    assert column in message and expected in message, message


def _corrupt_second_row_group(path: Path) -> Path:
    """A parquet file of two row groups whose second one's page bytes are scrambled."""
    texts = [f"text number {i} " * 3 for i in range(200)]
    pq.write_table(pa.table({"text": texts}), path, row_group_size=100, compression="snappy")
    column = pq.ParquetFile(path).metadata.row_group(1).column(0)
    start = column.dictionary_page_offset or column.data_page_offset
    data = bytearray(path.read_bytes())
    for i in range(start + 30, start + column.total_compressed_size - 5):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))
    return path


def test_a_corrupt_page_is_refused_before_the_first_text(tmp_path):
    records = read_records(_corrupt_second_row_group(tmp_path / "in.parquet"))
    with pytest.raises(DataError, match="row group 2") as err:
        next(records)  # nothing of the first row group comes out first
    assert "in.parquet" in str(err.value)


@pytest.fixture(scope="module")
def labeler_folder(tiny, tmp_path_factory) -> Path:
    lab = SequenceLabeler.from_model(tiny("llama"), labels=["O", "B-PER", "I-PER"],
                                     finetune="frozen")
    return lab.save_pretrained(tmp_path_factory.mktemp("parquet_inputs") / "lab")


def test_predict_refuses_a_corrupt_file_before_the_model_loads(labeler_folder, tmp_path,
                                                               capsys, monkeypatch):
    from support import cli

    import seqrep.export

    def fail(*a: object, **k: object) -> None:
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(seqrep.export, "load_labeler", fail)
    source = _corrupt_second_row_group(tmp_path / "in.parquet")
    for output in ((), ("--output", str(tmp_path / "out.jsonl"))):
        code, _, err = cli(capsys, "predict", str(labeler_folder), "--input", str(source),
                           *output)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert "row group 2" in err and "in.parquet" in err
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("name", ["texts.PARQUET", "texts.Parquet"])
def test_the_parquet_suffix_is_read_in_any_case(tmp_path, name):
    path = _write(tmp_path / name, text=pa.array(TEXTS))
    assert [(n, t) for n, t, _, _ in read_records(path)] == list(enumerate(TEXTS, 1))
    assert count_records(path) == 3


def test_the_jsonl_suffix_is_read_in_any_case(tmp_path):
    path = tmp_path / "texts.JSONL"
    path.write_text('{"text": "a b", "doc_id": "d1"}\n{"words": ["c", "d"]}\n',
                    encoding="utf-8")
    assert list(read_records(path)) == [(1, "a b", False, "d1"), (2, "c d", True, None)]


def test_parquet_rows_carry_their_documents_and_words(tmp_path):
    path = _write(tmp_path / "in.parquet",
                  text=pa.array(["a b", None, "e"]),
                  words=pa.array([None, ["c", "d"], ["unused"]], pa.list_(pa.string())),
                  doc_id=pa.array(["d1", "d1", None]))
    assert list(read_records(path)) == [(1, "a b", False, "d1"), (2, "c d", True, "d1"),
                                        (3, "e", False, None)]
    assert list(read_records(path, skip=2)) == [(3, "e", False, None)]


def test_categorical_columns_read_as_their_values(tmp_path):
    # pandas writes a categorical column as an arrow dictionary: its values are the strings
    path = _write(tmp_path / "in.parquet", text=pa.array(TEXTS).dictionary_encode(),
                  doc_id=pa.array(["d1", "d1", "d2"]).dictionary_encode())
    assert list(read_records(path)) == [(1, TEXTS[0], False, "d1"), (2, TEXTS[1], False, "d1"),
                                        (3, TEXTS[2], False, "d2")]
