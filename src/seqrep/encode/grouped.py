"""Sentences with their documents, as one value: :class:`Grouped`.

Why: with document context a sentence's model rows hold its neighbours, so its document id
must reach the encoder with its words. As a parallel list with a ``None`` default, each call
site on the evaluation path (progress chunks, process shards, the forward pass) had to
remember to cut the ids as it cut the words; one that forgot read every sentence alone,
wrong without an error (issue 38: such a mutation survived the suite). A :class:`Grouped`
holds both, and its parts keep each sentence's document, so no step can drop them; "each
sentence is its own document" is said explicitly, with :meth:`Grouped.alone`.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from seqrep.core.contexts import labeler_context


@dataclass(frozen=True)
class Grouped:
    """Sentences' words and each one's document id.

    Attributes:
        words: the sentences' words, in input order.
        docs: each sentence's document id (consecutive sentences with one id are one
            document; ``None`` in it: a sentence of its own), or ``None`` when every
            sentence is its own document (:meth:`alone`; what a sentence-level labeler
            reads whatever the data holds).
    """

    words: list[Sequence[str]]
    docs: list[Hashable | None] | None

    @classmethod
    def of(cls, sentences: Sequence[Any], labeler: Any) -> Grouped:
        """``sentences`` (with ``words`` and ``doc_id``) as ``labeler`` reads them: their
        document ids where its rows hold documents, else each sentence alone."""
        return cls([s.words for s in sentences], labeler_context(labeler).doc_ids(sentences))

    @classmethod
    def alone(cls, words: Sequence[Sequence[str]]) -> Grouped:
        """Each sentence its own document."""
        return cls(list(words), None)

    def __len__(self) -> int:
        return len(self.words)

    def part(self, idx: Sequence[int]) -> Grouped:
        """The sentences at ``idx``, in that order, each with its document."""
        return Grouped([self.words[i] for i in idx],
                       None if self.docs is None else [self.docs[i] for i in idx])

    def chunks(self, size: int) -> list[list[int]]:
        """Sentence indices in chunks of about ``size``, for progress chunk by chunk.

        With documents a chunk ends only where a document does (a sentence cut from its
        neighbours would be read without them, so labeled differently) and the order is the
        input's. Without, the sentences go longest first (by characters): batches are
        length-sorted within a chunk, and chunks of the input order would pad far more
        (CoNLL-2003 test in chunks of two batches of 64: 2.1x the real tokens, against 1.2x
        sorted and 1.1x in one pass); longest first also meets a memory limit at once and
        keeps the ETA from promising too little.
        """
        from seqrep.encode.document import chunk_spans

        if self.docs is not None:
            return [list(range(i, j)) for i, j in chunk_spans(len(self), size, self.docs)]
        order = sorted(range(len(self)), key=lambda i: -sum(len(w) + 1 for w in self.words[i]))
        return [order[k:k + size] for k in range(0, len(order), size)]

    def shard(self, rank: int, world: int) -> list[int]:
        """The sentence indices process ``rank`` of ``world`` computes: every ``world``-th
        document (a document's sentences share rows, so they stay in one process), or every
        ``world``-th sentence when each is alone."""
        from seqrep.encode.document import documents

        if self.docs is None:
            return list(range(rank, len(self), world))
        return [i for group in documents(self.docs)[rank::world] for i in group]

    def logits(self, labeler: Any, batch_size: int) -> list[Any]:
        """``labeler``'s word logits of these sentences, read with their documents."""
        if not self.words:
            return []
        return labeler.word_logits(self.words, batch_size, docs=self.docs)
