"""Reader edge cases that used to read silently wrong: CR-only line endings, a doubled byte-order
mark, JSONL records of both shapes or with one label in two cases across the shapes, ABSA terms
outside a sentence, and a tag column of 0 dropped on its way from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seqrep.config import ReaderConfig
from seqrep.data.absa import read_semeval_xml
from seqrep.data.conll import read_conll
from seqrep.data.jsonl import read_jsonl
from seqrep.data.parallel import read_parallel
from seqrep.errors import DataError


def test_parallel_files_with_cr_only_line_endings(tmp_path: Path) -> None:
    # classic Mac line endings: three sentences, not one of 8 words
    (tmp_path / "seq.in").write_bytes(b"play jazz\rbook a table\rhi\r")
    (tmp_path / "seq.out").write_bytes(b"O B-genre\rO O B-obj\rO\r")
    corpus = read_parallel(tmp_path)
    assert [s.words for s in corpus] == [("play", "jazz"), ("book", "a", "table"), ("hi",)]
    assert [s.meta["line"] for s in corpus] == [1, 2, 3]


def test_conll_with_cr_only_line_endings(tmp_path: Path) -> None:
    path = tmp_path / "x.txt"
    path.write_bytes(b"Obama B-PER\rleft O\r\rParis B-LOC\r")
    corpus = read_conll(path)
    assert [s.words for s in corpus] == [("Obama", "left"), ("Paris",)]
    assert corpus[1].meta["line"] == 4


def test_score_reads_cr_only_line_endings(tmp_path: Path) -> None:
    from seqrep.evaluate import score_file

    path = tmp_path / "p.txt"
    path.write_bytes(b"Obama B-PER B-PER\rleft O O\r\rParis B-LOC O\r")
    result = score_file(path)  # 1 of 2 gold spans predicted, no false positive
    assert result["sentences"] == 2
    assert (result["precision"], result["recall"]) == (1.0, 0.5)


def test_double_bom_does_not_make_docstart_a_sentence(tmp_path: Path) -> None:
    path = tmp_path / "x.txt"
    path.write_bytes(b"\xef\xbb\xbf\xef\xbb\xbf-DOCSTART- -X- O O\n\nObama NNP B-NP B-PER\n")
    corpus = read_conll(path)
    assert [s.words for s in corpus] == [("Obama",)]
    assert corpus[0].doc_id == "doc1"


def test_a_mark_inside_joined_files_does_not_make_docstart_a_sentence(tmp_path: Path) -> None:
    # two files joined by cat, the second saved with a byte-order mark: two documents
    path = tmp_path / "x.txt"
    path.write_bytes(b"-DOCSTART- -X- O O\n\nObama NNP B-NP B-PER\n\n"
                     b"\xef\xbb\xbf-DOCSTART- -X- O O\n\nParis NNP B-NP B-LOC\n")
    corpus = read_conll(path)
    assert [s.words for s in corpus] == [("Obama",), ("Paris",)]
    assert [s.doc_id for s in corpus] == ["doc1", "doc2"]


def _jsonl(tmp_path: Path, *records: dict) -> Path:
    path = tmp_path / "x.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_jsonl_record_of_both_shapes_is_refused(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, {"tokens": ["a"], "tags": ["O"]},
                  {"tokens": ["Obama", "left"], "tags": ["B-PER", "O"], "text": "Obama left",
                   "spans": [{"start": 6, "end": 10, "label": "LOC"}]})
    with pytest.raises(DataError, match=r"x\.jsonl:2: .*both"):
        read_jsonl(path)
    # tags beside text and spans, without tokens: the tags would be dropped as well
    path = _jsonl(tmp_path, {"text": "Obama left", "tags": ["B-PER", "O"], "spans": []})
    with pytest.raises(DataError, match=r"x\.jsonl:1: .*both"):
        read_jsonl(path)


def test_jsonl_label_case_clash_across_shapes(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, {"tokens": ["Obama"], "tags": ["B-PER"]},
                  {"text": "Merkel", "spans": [{"start": 0, "end": 6, "label": "per"}]})
    with pytest.raises(DataError, match=r"x\.jsonl:2: label 'per' is spelled 'PER' on line 1"):
        read_jsonl(path)
    path = _jsonl(tmp_path, {"text": "Merkel", "spans": [{"start": 0, "end": 6, "label": "Per"}]},
                  {"text": "Obama", "spans": [{"start": 0, "end": 5, "label": "PER"}]})
    with pytest.raises(DataError, match=r"x\.jsonl:2: "):
        read_jsonl(path)
    # one spelling in both shapes reads
    path = _jsonl(tmp_path, {"tokens": ["Obama"], "tags": ["B-PER"]},
                  {"text": "Merkel", "spans": [{"start": 0, "end": 6, "label": "PER"}]})
    assert [s.tags for s in read_jsonl(path)] == [("B-PER",), ("B-PER",)]


def test_absa_term_outside_a_sentence_gets_a_note(tmp_path: Path) -> None:
    path = tmp_path / "x.xml"
    path.write_text('<sentences>\n<aspectTerm term="food" from="0" to="4"/>\n'
                    '<sentence id="s1"><text>The food was good</text>\n'
                    '<aspectTerms><aspectTerm term="food" from="4" to="8"/></aspectTerms>\n'
                    '</sentence>\n<aspectTerm term="wine" from="0" to="4"/>\n</sentences>\n',
                    encoding="utf-8")
    corpus = read_semeval_xml(path)
    assert len(corpus) == 1 and [s.label for s in corpus[0].spans] == ["ASP"]
    outside = [n for n in corpus.notes if n.startswith("outside a sentence")]
    assert len(outside) == 2
    assert "x.xml line 2" in outside[0] and "'food'" in outside[0]
    assert "x.xml line 6" in outside[1] and "'wine'" in outside[1]


def test_tag_column_zero_reaches_the_reader(tmp_path: Path) -> None:
    assert ReaderConfig(tag_column=0, word_column=1).options() == {"tag_column": 0,
                                                                    "word_column": 1}
    assert ReaderConfig(tag_column=-1).options() == {"tag_column": -1}
    assert ReaderConfig().options() == {}


def test_tag_column_zero_on_the_command_line(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    from seqrep.cli.app import main

    path = tmp_path / "x.txt"
    path.write_text("B-PER Obama X\nO left X\n", encoding="utf-8")
    main(["data", "stats", str(path), "--tag-column", "0", "--word-column", "1", "--json"])
    assert json.loads(capsys.readouterr().out)["labels"] == ["PER"]


def test_grid_reader_tag_column_zero() -> None:
    from seqrep.lab.grid import expand

    runs = expand({"models": ["m"], "datasets": ["d.txt"], "strategies": [{"repetitions": 1}],
                   "reader": {"tag_column": 0}})
    assert runs[0].reader.options() == {"tag_column": 0}
