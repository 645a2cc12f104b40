from __future__ import annotations

from pathlib import Path

import pytest

from seqrep.data import load_corpus
from seqrep.data.types import Corpus, Sentence
from seqrep.errors import DataError


def test_sentences_with_words_drops_empty_ones() -> None:
    corpus = Corpus([Sentence((), ()), Sentence(("a",), ("O",))], name="x.jsonl")
    assert [s.words for s in corpus.sentences_with_words()] == [("a",)]


def test_a_corpus_without_words_says_so_in_one_line() -> None:
    corpus = Corpus([Sentence((), ()), Sentence((), ())], name="snips/validation")
    with pytest.raises(DataError, match=r"^snips/validation: no sentence has words \(2 "
                                        r"sentences, all empty\); expected at least one$"):
        corpus.sentences_with_words()
    with pytest.raises(DataError, match=r"^x: no sentence has words \(0 sentences"):
        Corpus([], name="x").sentences_with_words()


def test_loaded_corpora_carry_a_name_for_that_message(fixtures: Path) -> None:
    corpus = load_corpus(fixtures / "tiny.jsonl")
    assert corpus.name.endswith("tiny.jsonl")
    assert len(corpus.sentences_with_words()) == 5
