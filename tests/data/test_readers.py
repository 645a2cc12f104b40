from __future__ import annotations

from pathlib import Path

import pytest

from seqrep.data.readers import READERS, detect_format, read_corpus, reader_options
from seqrep.errors import ConfigError, DataError, SeqrepError


@pytest.mark.parametrize("name, fmt", [
    ("tiny.conll", "conll"),
    ("tiny.conllu", "conllu"),
    ("tiny.jsonl", "jsonl"),
    ("tiny_absa.xml", "semeval-xml"),
    ("tiny_absa.txt", "absa-tokenized"),
    ("nlupp", "nlupp"),
    ("nlupp/data/banking/fold0.json", "nlupp"),
])
def test_detect_format(fixtures: Path, name: str, fmt: str) -> None:
    assert detect_format(fixtures / name) == fmt
    assert len(read_corpus(fixtures / name)) > 0


def test_detect_from_content(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    path.write_text("\n\nGood food.####Good=O food=T-POS .=O\n")
    assert detect_format(path) == "absa-tokenized"
    path.write_text("Good O\n")
    assert detect_format(path) == "conll"
    with pytest.raises(DataError, match="no such file"):
        detect_format(tmp_path / "missing.txt")


def test_a_folder_is_parallel_or_nlupp_or_an_error_listing_the_layouts(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("a O\n")
    with pytest.raises(DataError, match=r"a folder matching no known layout; expected seq\.in \+ "
                                        r"seq\.out, or train/ valid/ test/ folders each holding "
                                        r"them, or NLU\+\+ <domain>/fold<k>\.json folders"):
        read_corpus(tmp_path)


def test_options_reach_the_reader(fixtures: Path) -> None:
    corpus = read_corpus(fixtures / "tiny.conll", tag_column=1, strict=True, scheme=None)
    assert corpus[0].tags[0] == "B-NNP"
    assert read_corpus(fixtures / "tiny_absa.txt", polarity=True).span_types() == [
        "NEG", "NEU", "POS"]
    assert read_corpus(fixtures / "tiny.conllu", label_column="xpos")[1].tags[0] == "B-NNP"
    assert len(read_corpus(fixtures / "nlupp", domains=["hotels"], folds=[0])) == 2


def test_unknown_format_and_options_list_the_allowed_ones(fixtures: Path) -> None:
    with pytest.raises(SeqrepError, match="unknown format 'csv'; expected one of conll, conllu, "
                                          "semeval-xml, absa-tokenized, nlupp, jsonl, "
                                          "parallel, parquet, arrow, hf-saved$"):
        read_corpus(fixtures / "tiny.conll", format="csv")
    with pytest.raises(ConfigError, match="the conll reader has no option 'polarity'; its options "
                                          "are tag_column, scheme, strict, word_column"):
        read_corpus(fixtures / "tiny.conll", polarity=True)


def test_every_reader_lists_its_options() -> None:
    # one name means one thing everywhere, so that the command line can offer the same names
    assert {fmt: reader_options(fmt) for fmt in READERS} == {
        "conll": ["tag_column", "scheme", "strict", "word_column"],
        "conllu": ["label_column", "scheme", "strict"],
        "semeval-xml": ["polarity", "alignment"],
        "absa-tokenized": ["polarity"],
        "nlupp": ["domains", "folds", "alignment"],
        "jsonl": ["scheme", "strict", "alignment"],
        "parallel": ["scheme", "strict"],
        "parquet": ["scheme", "strict", "tokens_column", "tags_column", "doc_column"],
        "arrow": ["scheme", "strict", "tokens_column", "tags_column", "doc_column"],
        "hf-saved": ["scheme", "strict", "tokens_column", "tags_column", "doc_column"],
    }
