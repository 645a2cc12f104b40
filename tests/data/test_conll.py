from __future__ import annotations

from pathlib import Path

import pytest

from seqrep.data.conll import read_conll
from seqrep.errors import ConfigError, DataError


def write(tmp_path: Path, text: str, name: str = "x.conll", encoding: str = "utf-8") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return path


def test_fixture_documents_sentences_and_spans(fixtures: Path) -> None:
    corpus = read_conll(fixtures / "tiny.conll")
    assert len(corpus) == 5
    assert [s.doc_id for s in corpus] == ["doc1", "doc1", "doc2", "doc2", "doc2"]
    first = corpus[0]
    assert first.words == ("EU", "rejects", "German", "call", ".")
    assert first.tags == ("B-ORG", "O", "B-MISC", "O", "O")
    assert first.meta["line"] == 3
    assert [(s.start, s.end, s.label) for s in corpus[4].spans] == [
        (0, 2, "PER"), (3, 4, "LOC"), (5, 8, "LOC")]
    assert corpus.repaired == 0
    assert corpus.stats()["spans_per_label"] == {"LOC": 3, "MISC": 1, "ORG": 2, "PER": 2}


def test_tag_column_index_and_token_scheme(fixtures: Path) -> None:
    pos = read_conll(fixtures / "tiny.conll", tag_column=1)
    assert pos[0].tags == ("B-NNP", "B-VBZ", "B-JJ", "B-NN", "B-.")
    assert pos.stats()["spans"] == pos.stats()["tokens"] == 23
    chunks = read_conll(fixtures / "tiny.conll", tag_column=-2)
    assert chunks[0].tags == ("B-NP", "B-VP", "B-NP", "I-NP", "O")


def test_iob1_is_detected_and_converted(tmp_path: Path) -> None:
    path = write(tmp_path, "Peter I-PER\nand O\nPaul I-PER\nMary B-PER\n\nBerlin I-LOC\n")
    corpus = read_conll(path)
    assert corpus[0].tags == ("B-PER", "O", "B-PER", "B-PER")
    assert corpus.repaired == 0
    # read as IOB2 instead, every span-opening I- is a repair
    assert read_conll(path, scheme="IOB2").repaired == 3


def test_bioes_and_tabs_with_spaces_in_words(tmp_path: Path) -> None:
    path = write(tmp_path, "New York\tNNP\tB-LOC\nCity\tNNP\tE-LOC\nis\tVBZ\tO\nok\tJJ\tS-X\n")
    corpus = read_conll(path)
    assert corpus[0].words == ("New York", "City", "is", "ok")
    assert corpus[0].tags == ("B-LOC", "I-LOC", "O", "B-X")


def test_whitespace_only_lines_break_sentences_and_docstart_is_no_sentence(tmp_path: Path) -> None:
    path = write(tmp_path,
                 "-DOCSTART- O\na O\n \t \nb B-X\n\n\n-DOCSTART- O\n-DOCSTART- O\nc O\r\n")
    corpus = read_conll(path)
    assert [s.words for s in corpus] == [("a",), ("b",), ("c",)]
    assert [s.doc_id for s in corpus] == ["doc1", "doc1", "doc3"]


def test_repairs_are_counted_and_strict_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "a B-X\nb O\nc I-X\n\nd I-Y\n\ne B-Z\n\nf B-Z\ng O\nh B-X\n")
    corpus = read_conll(path)  # detected as IOB2: 4 spans open with B-, 2 with I-
    assert corpus.repaired == 2
    assert corpus[0].tags == ("B-X", "O", "B-X")
    with pytest.raises(DataError, match=r"x\.conll:3: invalid IOB2 sequence: 'I-X'"):
        read_conll(path, strict=True)


@pytest.mark.parametrize("text, pattern", [
    ("a NN B-X\nb NN\n", r"x\.conll:2: expected 3 columns like line 1, got 2"),
    ("a B-X\n", None),  # fine: two columns
    ("a NN B-X\n", None),
    ("\n\n  \n", r"x\.conll: the file is empty"),
    ("-DOCSTART- O\n\n", r"x\.conll: no sentences found"),
    ("a\nb\n", r"x\.conll:1: the tag column \(-1\) is the word column"),
    ("a B-X\nb PER\n", r"x\.conll:2: tag 'PER' has no B-/I- prefix but other tags have one"),
    ("a B-X\n\nb O\nc PER\n", r"x\.conll:4: tag 'PER' has no B-/I- prefix"),
])
def test_malformed_files(tmp_path: Path, text: str, pattern: str | None) -> None:
    path = write(tmp_path, text)
    if pattern is None:
        read_conll(path)
    else:
        with pytest.raises(DataError, match=pattern):
            read_conll(path)


def test_missing_tag_column_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "\na NN B-X\n")
    with pytest.raises(DataError, match=r"x\.conll:2: tag column 5 does not exist: the line "
                                        r"has 3 columns \(indices 0\.\.2 or -3\.\.-1\)"):
        read_conll(path, tag_column=5)
    with pytest.raises(DataError, match="tag column -4 does not exist"):
        read_conll(path, tag_column=-4)


def test_non_utf8_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "a O\n\nCafé B-X\n", encoding="latin-1")
    with pytest.raises(DataError, match=r"x\.conll:3: not valid UTF-8 \(byte 0xe9"):
        read_conll(path)


def test_missing_file_and_bad_scheme(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no such file"):
        read_conll(tmp_path / "nope.conll")
    with pytest.raises(ConfigError, match="unknown tag scheme 'BILUO'"):
        read_conll(write(tmp_path, "a O\n"), scheme="BILUO")


def test_real_conll2003_train(conll2003_dir: Path) -> None:
    corpus = read_conll(conll2003_dir / "eng.train")
    stats = corpus.stats()
    assert (stats["sentences"], stats["tokens"], stats["spans"]) == (14_041, 203_621, 23_499)
    assert stats["spans_per_label"] == {"PER": 6_600, "LOC": 7_140, "ORG": 6_321, "MISC": 3_438}
    # IOB1 (with two B-MISC after O, lines 152428 and 175436) read without repairs
    assert corpus.repaired == 0
    assert corpus[0].doc_id == "doc1" and corpus[-1].doc_id == "doc946"
    # POS as plain labels: one width-1 span per word
    pos = read_conll(conll2003_dir / "eng.testb", tag_column=1)
    assert pos.stats()["spans"] == pos.stats()["tokens"] == 46_435


@pytest.mark.parametrize("options, pattern", [
    ({"tag_column": "x"}, r"tag_column: expected a column index \(an integer\), got 'x'"),
    ({"tag_column": True}, r"tag_column: expected a column index"),
    ({"tag_column": 1.0}, r"tag_column: expected a column index"),
    ({"word_column": "²"}, r"word_column: expected a column index"),
    ({"strict": 1}, r"strict: expected true or false, got 1"),
])
def test_option_types_are_config_errors(tmp_path: Path, options: dict, pattern: str) -> None:
    with pytest.raises(ConfigError, match=pattern):
        read_conll(write(tmp_path, "a NN O\n"), **options)
    # an integer in a string (from a config file or the command line) is a column index
    assert read_conll(write(tmp_path, "a NN O\n"), tag_column="1")[0].tags == ("B-NN",)


def test_a_long_bad_line_is_cut_in_the_message(tmp_path: Path) -> None:
    path = write(tmp_path, "a NN O\n" + "b " * 500 + "\n")
    with pytest.raises(DataError, match=r"x\.conll:2: expected 3 columns like line 1, got 500: "
                                        r"'b b b .*\.\.\.'$") as err:
        read_conll(path)
    assert len(str(err.value)) < 200


CONLLU = ("# sent_id = 1\n# text = Obama visited Paris .\n"
          "1\tObama\tObama\tPROPN\tNNP\t_\t2\tnsubj\t_\t_\n"
          "2\tvisited\tvisit\tVERB\tVBD\t_\t0\troot\t_\t_\n"
          "3\tParis\tParis\tPROPN\tNNP\t_\t2\tobj\t_\t_\n\n")


def test_a_conllu_file_read_as_conll_says_to_use_conllu(tmp_path: Path) -> None:
    """``--format conll`` on a CoNLL-U file: the column-count error says which format to use
    (issue 37, item 21); a plain CoNLL file's error gives no such hint."""
    from inprocess import seqrep

    path = tmp_path / "x.conllu"
    path.write_text(CONLLU, encoding="utf-8")
    with pytest.raises(DataError, match=r"x\.conllu:2: expected 4 columns like line 1, got 7"
                                        r".*looks like CoNLL-U.*--format conllu"):
        read_conll(path)
    ran = seqrep("data", "stats", str(path), "--format", "conll")
    assert ran.returncode == 2 and ran.stderr.count("\n") == 1, ran.stderr
    assert "--format conllu" in ran.stderr and "Traceback" not in ran.stderr
    with pytest.raises(DataError) as err:
        read_conll(write(tmp_path, "a NN B-X\nb NN\n"))
    assert "CoNLL-U" not in str(err.value)
