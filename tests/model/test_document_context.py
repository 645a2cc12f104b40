"""Document context on a tiny labeler (issue 24): rows of several sentences of one document,
each word labeled once, labels independent of other documents, saved and reloaded with it."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from support import SENTENCES, document, neighbours_change_labels

from seqrep.model.labeler import SequenceLabeler

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
BUDGET = 24  # subtokens per window: the tiny BPE gives most words 1-4 subtokens


@pytest.fixture(scope="module", params=["document", "document-focus"])
def doc_labeler(tiny, request) -> SequenceLabeler:
    """Both layouts of document rows: the window in every copy, or only the read words in
    the last."""
    torch.manual_seed(0)
    return SequenceLabeler.from_model(tiny("llama"), labels=LABELS, repetitions=1,
                                      context=request.param, context_tokens=BUDGET).eval()


@pytest.fixture(scope="module")
def sentence_labeler(tiny, doc_labeler: SequenceLabeler) -> SequenceLabeler:
    """The same weights at sentence level."""
    lab = SequenceLabeler.from_model(tiny("llama"), labels=LABELS, repetitions=1).eval()
    lab.load_state_dict(doc_labeler.state_dict())
    return lab


def test_a_sentence_s_logits_are_those_of_its_rows_run_alone(doc_labeler) -> None:
    a, b = document(6), document(9)[3:]
    sentences, docs = a + b, ["a"] * len(a) + ["b"] * len(b)
    together = doc_labeler.word_logits(sentences, batch_size=4, docs=docs)
    alone = doc_labeler.word_logits(a, batch_size=1, docs=["a"] * len(a))
    for x, y in zip(together[: len(a)], alone):
        torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-5)
    # and each row by itself, through the plain forward pass
    items = doc_labeler.encoder.items(sentences, docs=docs)
    assert any(len({s for s, _ in it.targets()}) > 1 for it in items)  # rows span sentences
    with torch.no_grad():
        for it in items:
            row = doc_labeler(doc_labeler.encoder.collate([it]))
            for k, (s, w) in enumerate(it.targets()):
                torch.testing.assert_close(together[s][w], row[k], rtol=1e-4, atol=1e-5)


def test_every_word_of_a_40_sentence_document_is_labeled_once(doc_labeler) -> None:
    doc = document(40)
    items = doc_labeler.encoder.items(doc, docs=["d"] * 40)
    words = sum(map(len, doc))
    assert len(items) > 3  # the document is far longer than one window
    read = sorted(p for it in items for p in it.targets())
    assert read == [(s, w) for s, sent in enumerate(doc) for w in range(len(sent))]
    logits = doc_labeler.word_logits(doc, docs=["d"] * 40)
    assert [len(x) for x in logits] == [len(s) for s in doc]
    assert sum(len(x) for x in logits) == words
    assert all(bool(x.abs().sum(-1).gt(0).all()) for x in logits)  # no word left unfilled


def test_a_one_sentence_document_equals_sentence_level(doc_labeler, sentence_labeler) -> None:
    # one of them is longer than the budget (windowed at sentence level by max_subtokens)
    assert max(sum(map(len, doc_labeler.encoder.words(s))) for s in SENTENCES) > BUDGET
    for sent in SENTENCES:
        (doc,) = doc_labeler.word_logits([sent], docs=["x"])
        (alone,) = sentence_labeler.word_logits([sent], docs=None)
        torch.testing.assert_close(doc, alone, rtol=1e-5, atol=1e-6)
    # and a sentence without a document id is labeled alone, as at sentence level
    got = doc_labeler.word_logits(SENTENCES, docs=[None] * len(SENTENCES))
    for x, y in zip(got, sentence_labeler.word_logits(SENTENCES, docs=None)):
        torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-6)


def test_neighbouring_sentences_change_the_labels(doc_labeler, sentence_labeler) -> None:
    assert neighbours_change_labels(doc_labeler, sentence_labeler)


def test_a_budget_below_the_longest_sentence_windows_it(tiny) -> None:
    lab = SequenceLabeler.from_model(tiny("llama"), labels=LABELS, repetitions=1,
                                     context="document", context_tokens=4)
    long = list(SENTENCES[1]) * 3  # 36 words, far over 4 subtokens
    items = lab.encoder.items([long, SENTENCES[0]], docs=["d", "d"])
    assert sorted(p for it in items for p in it.targets()) == \
        [(0, w) for w in range(36)] + [(1, w) for w in range(4)]
    logits = lab.word_logits([long, SENTENCES[0]], docs=["d", "d"])
    assert [len(x) for x in logits] == [36, 4]


def test_document_context_is_saved_and_used_after_reload(doc_labeler, tmp_path: Path) -> None:
    doc = document(8)
    before = doc_labeler.word_logits(doc, docs=["d"] * 8)
    doc_labeler.save_pretrained(tmp_path / "lab")
    again = SequenceLabeler.from_pretrained(tmp_path / "lab")
    assert again.config.context == doc_labeler.config.context
    assert again.config.context.startswith("document") and again.config.context_tokens == BUDGET
    assert again.config.context_separator == "\n"
    after = again.word_logits(doc, docs=["d"] * 8)
    for x, y in zip(before, after):
        torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-6)


def test_a_model_s_positions_cut_the_budget(tiny) -> None:
    # BERT-like, 512 positions, [CLS] [SEP] around k = 2 copies: at most 255 per copy
    lab = SequenceLabeler.from_model(tiny("bert", 1), labels=LABELS, repetitions=1,
                                     context="document", context_tokens=1000)
    assert lab.config.context_tokens == 255
    sentence_level = SequenceLabeler.from_model(tiny("bert", 1), labels=LABELS,
                                                repetitions=1, context_tokens=1000)
    assert sentence_level.config.context_tokens == 1000  # unused there, left as given
