"""Sentences and their documents travel as one value on the evaluation path (issue 38): a
part of it (a progress chunk, a process's shard) keeps each sentence's document, so no call
site can drop the ids; and evaluation of a document labeler, in chunks and in shards, gives
what labeling each document alone gives, computed here without the evaluation code."""

from __future__ import annotations

import pytest
import torch
from support import document, sharp_document_labeler

from seqrep.data.types import Sentence

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


@pytest.fixture(scope="module")
def doc_labeler(tiny):  # noqa: ANN001, ANN201
    return sharp_document_labeler(tiny("llama"), LABELS)


def _sentences() -> list[Sentence]:
    """Three documents of 7 sentences (ids a, b, c), tags all O (scores are not checked)."""
    return [Sentence(w, ["O"] * len(w), doc_id=d) for d in "abc" for w in document(7)]


def _by_hand(labeler, sentences: list[Sentence]) -> list[torch.Tensor]:  # noqa: ANN001
    """Each document labeled alone, one call per document: a sentence's labels depend on its
    own document only (seqrep.encode.document), so this is what every route must give."""
    out: list[torch.Tensor] = []
    for d in dict.fromkeys(s.doc_id for s in sentences):
        words = [s.words for s in sentences if s.doc_id == d]
        out += labeler.word_logits(words, 64, docs=[d] * len(words))
    return out


def _strict(tags: list[str]) -> list[str]:
    """Tags as strict IOB2 reads them: an I-X that continues no X span is written O."""
    out: list[str] = []
    for t in tags:
        prev = out[-1] if out else "O"
        out.append("O" if t.startswith("I-") and prev[2:] != t[2:] else t)
    return out


def test_a_part_keeps_each_sentences_document(doc_labeler) -> None:  # noqa: ANN001
    from seqrep.encode.grouped import Grouped

    sents = _sentences()
    grouped = Grouped.of(sents, doc_labeler)
    assert grouped.docs == [s.doc_id for s in sents] and len(grouped) == 21
    part = grouped.part([20, 3, 8])
    assert part.words == [sents[i].words for i in (20, 3, 8)]
    assert part.docs == ["c", "a", "b"]
    chunks = grouped.chunks(3)  # a chunk ends only where a document does
    assert chunks == [list(range(0, 7)), list(range(7, 14)), list(range(14, 21))]
    alone = Grouped.alone([s.words for s in sents])
    assert alone.docs is None and alone.part([1]).docs is None


def test_every_evaluation_route_keeps_the_documents(doc_labeler, monkeypatch) -> None:  # noqa: ANN001
    """One pass, chunks smaller than a document, and two processes' shards all give each
    document's own logits; dropping the ids anywhere on the way would read every sentence
    alone, which differs (checked last, so the check bites)."""
    import accelerate.utils

    from seqrep.evaluate import chunked_logits, evaluate, sharded_logits

    sents = _sentences()
    ref = _by_hand(doc_labeler, sents)
    tags = [_strict([LABELS[i] for i in x.argmax(-1).tolist()]) for x in ref]  # greedy

    def same(logits: list[torch.Tensor]) -> bool:
        return len(logits) == len(ref) and all(
            torch.allclose(a, b, atol=1e-4) for a, b in zip(logits, ref, strict=True))

    for chunk in (None, 3):
        kept: list[list[str]] = []
        evaluate(doc_labeler, sents, batch_size=2, keep=kept, chunk=chunk,
                 progress=None if chunk is None else (lambda n: None))
        assert kept == tags, chunk
        assert same(chunked_logits(doc_labeler, sents, 2, chunk=chunk or 64))

    class Process:
        def __init__(self, rank: int) -> None:
            self.num_processes, self.process_index = 2, rank

    from seqrep.encode.grouped import Grouped

    parts: list = []

    def gather(obj: list) -> list:
        parts.extend(obj)
        return list(parts)

    monkeypatch.setattr(accelerate.utils, "gather_object", gather)
    sharded_logits(doc_labeler, Grouped.of(sents, doc_labeler), 2, Process(0))
    assert same(sharded_logits(doc_labeler, Grouped.of(sents, doc_labeler), 2, Process(1)))
    # each process computed whole documents: rank 0 a and c, rank 1 b
    assert sorted(parts[0][0]) == list(range(7)) + list(range(14, 21))

    alone = doc_labeler.word_logits([s.words for s in sents], 2, docs=None)
    assert not same(alone)


def test_public_calls_read_each_sentence_alone_unless_told_and_the_cache_must_be_told(
        doc_labeler, tmp_path) -> None:  # noqa: ANN001
    """The public calls take ``docs`` as an optional keyword (a text is its own document
    unless told otherwise): leaving it out is ``docs=None`` said explicitly, the same
    numbers. The teacher's label cache, an internal call whose ids decide what a student
    learns, still has no default: a call site that forgets them fails at once."""
    import inspect

    import torch

    from seqrep.export.runtime import OnnxLabeler
    from seqrep.predict.labeler import Labeler
    from seqrep.predict.tagger import predict_tags
    from seqrep.train.teacher_cache import label_cache

    words = [["Maria", "left", "."], ["Boris", "came", "."]]
    with pytest.raises(TypeError, match="docs"):
        label_cache(lambda: doc_labeler, [tuple(w) for w in words], tmp_path / "cache",
                    len(LABELS), quiet=True)
    for method in (Labeler.word_logits, OnnxLabeler.word_logits, OnnxLabeler.word_states):
        assert inspect.signature(method).parameters["docs"].default is None
    for a, b in zip(doc_labeler.word_logits(words, 2), doc_labeler.word_logits(
            words, 2, docs=None), strict=True):
        assert torch.equal(a, b)
    assert predict_tags(doc_labeler, words) == predict_tags(doc_labeler, words, docs=None)
