"""The batch-token budget has one name in the code, ``batch_tokens`` (``BATCH_TOKENS`` its
default), on every function that takes it; and ``--batch-size`` counts sentences in
inference under document context, as it does in training (issue 38's small debts). The
options users type keep their names (``--batch-tokens``, ``--max-batch-tokens``,
``--max-tokens``)."""

from __future__ import annotations

import inspect

import pytest
from support import document, sharp_document_labeler

import seqrep.encode.batch
from seqrep.encode import BATCH_TOKENS
from seqrep.encode.batch import length_batches
from seqrep.encode.pipeline import Encoder, EncodesSentences
from seqrep.export.runtime import OnnxLabeler
from seqrep.model.labeler import SequenceLabeler
from seqrep.predict.labeler import Labeler
from seqrep.serve.batcher import Batcher


@pytest.mark.parametrize("fn", [
    length_batches, Encoder.plan, Encoder.batches, EncodesSentences.batches,
    SequenceLabeler.map_words, SequenceLabeler.word_states, SequenceLabeler.word_logits,
    SequenceLabeler.layer_states, OnnxLabeler.word_logits, Labeler.word_logits,
    Batcher.__init__], ids=lambda f: f.__qualname__)
def test_the_budget_has_one_name(fn) -> None:  # noqa: ANN001
    params = inspect.signature(fn).parameters
    assert "batch_tokens" in params, list(params)
    assert not {"max_tokens", "max_batch_tokens"} & set(params), list(params)


def test_no_second_name_for_the_default() -> None:
    assert BATCH_TOKENS == 4096  # the documented default (docs/guides/cpu.md, serve.md)
    assert not hasattr(seqrep.encode.batch, "MAX_TOKENS")


def test_batch_size_counts_sentences_under_document_context(tiny) -> None:
    """Each inference batch labels at most ``batch_size`` sentences (a row alone may read
    more), counted by hand from the rows' targets; rows would give larger batches."""
    lab = sharp_document_labeler(tiny("llama"), ["O", "B-PER", "I-PER"])
    sentences = document(12)
    docs = [0] * len(sentences)
    batches = list(lab.batches(sentences, 3, None, docs))
    assert batches
    for _, items in batches:
        counted = len({s for it in items for s, _ in it.targets()})
        assert counted <= 3 or len(items) == 1, counted
    rows = sum(len(items) for _, items in batches)
    assert rows < 3 * len(batches), "every batch of three rows: rows were counted"


def test_every_labeling_entry_has_one_default_batch_size() -> None:
    """The sentences a batch holds: one default everywhere a labeling starts (core's copy of
    it, which sits below encode, included)."""
    from seqrep.core.labeler_methods import LabelerMethods
    from seqrep.encode import BATCH_SENTENCES
    from seqrep.labeling import predict_words
    from seqrep.predict.tagger import predict_text

    assert BATCH_SENTENCES == 64
    for fn in (LabelerMethods.predict, LabelerMethods.predict_words, LabelerMethods.evaluate,
               SequenceLabeler.word_logits, OnnxLabeler.word_logits, predict_text,
               predict_words):
        assert inspect.signature(fn).parameters["batch_size"].default == 64, fn
