"""Contexts as table objects (:mod:`seqrep.core.contexts`): what callers ask of sentence and
document context, and the config's one validation against the table. Expected values are
written out by hand (the help text and notice as they read before the table existed)."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from seqrep.config import LabelerConfig, TrainConfig
from seqrep.core.contexts import (
    CONTEXTS,
    DOCUMENT,
    FOCUS,
    SENTENCE,
    context_of,
    labeler_context,
)
from seqrep.data.splits import pick
from seqrep.data.types import Sentence
from seqrep.errors import ConfigError


def _sents(*docs: str | None) -> list[Sentence]:
    return [Sentence(["w"], ["O"], doc_id=d) for d in docs]


def test_the_table_names_sentence_then_document() -> None:
    assert list(CONTEXTS) == ["sentence", "document", "document-focus"]
    assert context_of("sentence") is SENTENCE and context_of("document") is DOCUMENT
    assert context_of("document-focus") is FOCUS
    assert context_of(DOCUMENT) is DOCUMENT
    assert context_of(None) is SENTENCE  # records stored before the setting existed
    assert not SENTENCE.documents and DOCUMENT.documents and FOCUS.documents
    # each names its row builder: the focus layout's is the only focus one
    from seqrep.core.table import resolve
    from seqrep.encode.document import document_rows, focus_rows
    from seqrep.encode.rows import sentence_rows

    assert [resolve(c.rows) for c in (SENTENCE, DOCUMENT, FOCUS)] == [sentence_rows,
                                                                       document_rows, focus_rows]
    with pytest.raises(ConfigError, match=r"context='page'; expected one of sentence, "
                                          r"document, document-focus"):
        context_of("page")


def test_a_labeler_without_a_context_reads_sentences() -> None:
    assert labeler_context(object()) is SENTENCE
    assert labeler_context(SimpleNamespace(config=SimpleNamespace())) is SENTENCE
    assert labeler_context(SimpleNamespace(config=SimpleNamespace(context="document"))) \
        is DOCUMENT


def test_document_ids_reach_encoding_with_document_context_only() -> None:
    sents = _sents("a", "a", None)
    assert SENTENCE.doc_ids(sents) is None and SENTENCE.docs([1, 2]) is None
    assert DOCUMENT.doc_ids(sents) == ["a", "a", None] and DOCUMENT.docs([1, 2]) == [1, 2]


def test_subsets_take_whole_documents_under_document_context() -> None:
    assert SENTENCE.subset_unit("sentence") == "sentence"
    assert SENTENCE.subset_unit("document") == "document"
    assert DOCUMENT.subset_unit("sentence") == "document"
    # two documents of 2 and 3 sentences: a limit of 3 in document order takes both whole
    sents = _sents("a", "a", "b", "b", "b")
    assert pick(sents, 3, "sentence") == [0, 1, 2]
    assert pick(sents, 3, "document") == [0, 1, 2, 3, 4]


def test_the_notice_is_said_with_document_context_only() -> None:
    splits = {"train": _sents("d1"), "test": _sents(None, None)}
    assert SENTENCE.notice(splits) is None
    assert DOCUMENT.notice(splits) == (
        "notice: context=document, but test has no document ids (no -DOCSTART- or doc_id): "
        "each sentence there is a document of its own, labeled as at sentence level")


def test_the_notice_names_every_bare_split_and_skips_empty_ones() -> None:
    # an empty split (no dev set) has no sentences to be alone; two bare splits "have"
    assert DOCUMENT.notice({"train": _sents("d1"), "dev": []}) is None
    assert DOCUMENT.notice({"dev": _sents(None), "test": _sents(None)}) == (
        "notice: context=document, but dev and test have no document ids (no -DOCSTART- or "
        "doc_id): each sentence there is a document of its own, labeled as at sentence level")


def test_report_cells_and_run_names() -> None:
    """The lab's (seqrep.lab.cells): how its reports show a context, and run names."""
    from seqrep.lab.cells import context_cell, run_suffix

    def cell(context: str, tokens: int, separator: str) -> str:
        return context_cell({"context": context, "context_tokens": tokens,
                             "context_separator": separator})

    assert cell("sentence", 256, " | ") == "sentence"
    assert cell("document", 256, "\n") == "document 256"
    assert cell("document", 128, " | ") == "document 128, separator ' | '"
    assert cell("document-focus", 256, "\n") == "document-focus 256"
    assert [run_suffix(c.name) for c in (SENTENCE, DOCUMENT, FOCUS)] == ["", "-doc", "-docf"]


def test_the_configs_validate_against_the_table_and_help_lists_it() -> None:
    with pytest.raises(ConfigError, match=r"context='page'; expected one of sentence, document"):
        LabelerConfig(context="page")
    with pytest.raises(ConfigError, match=r"subset_unit='page'; expected one of sentence, doc"):
        TrainConfig(subset_unit="page")
    # a subset takes sentences or documents: a layout of document rows is no unit
    with pytest.raises(ConfigError, match=r"subset_unit='document-focus'; expected one of "
                                          r"sentence, document$"):
        TrainConfig(subset_unit="document-focus")
    assert FOCUS.subset_unit("sentence") == "document"
    help_text = next(f.metadata["help"] for f in dataclasses.fields(LabelerConfig)
                     if f.name == "context")
    assert help_text == (
        "what a model row holds: sentence (each sentence alone), document (consecutive "
        "sentences of one document, in windows of --context-tokens, each word read where it "
        "has the most context; a sentence without a document id stays alone) or "
        "document-focus (as document, with only the words a window reads in its last copy)")
