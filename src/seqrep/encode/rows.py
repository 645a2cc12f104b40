"""Model rows and the sentence context's row builder.

A context builds its rows (:meth:`seqrep.core.contexts.Context.build_rows`) with a row builder::

    builder(encoder, sentences, tags, docs) -> list[Item]

``encoder`` is the :class:`~seqrep.encode.pipeline.Encoder` (what a builder reads of it is
:class:`RowEncoder`), ``tags`` the gold tags when training (None otherwise), ``docs`` one
document id per sentence (None: every sentence alone). Everything after the rows (length
batches, padding, reassembling words per sentence) is the same for every layout, so a new
layout is one builder over :func:`~seqrep.encode.repeat.lay_out` and one context entry.
The document layouts' builders are in :mod:`seqrep.encode.document`.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Protocol

from seqrep.encode.align import label_ids
from seqrep.encode.repeat import RepeatSpec, Segment


@dataclass(frozen=True)
class Item:
    """One model row: its segment and, when training, the label ids of the words it reads.

    ``sentence`` is the (first) sentence the row reads words of; ``places`` gives the
    ``(sentence, word)`` of each read word when the row holds several sentences (document
    context), and is None when every read word is ``(sentence, segment.words[j])``.
    """

    sentence: int
    segment: Segment
    labels: tuple[int, ...] | None = None
    places: tuple[tuple[int, int], ...] | None = None

    def targets(self) -> tuple[tuple[int, int], ...]:
        """``(sentence, word)`` of each word the row reads, in read order."""
        if self.places is not None:
            return self.places
        return tuple((self.sentence, w) for w in self.segment.words)

    def shifted(self, by: int) -> Item:
        """This row with its sentence indices moved by ``by``: the same row once its
        sentences come after ``by`` others in a longer list."""
        return Item(self.sentence + by, self.segment, self.labels,
                    None if self.places is None else tuple((s + by, w) for s, w in self.places))

    @property
    def starts(self) -> int:
        """Sentences whose first word this row reads (counts sentences trained on)."""
        return sum(w == 0 for _, w in self.targets())


class RowEncoder(Protocol):
    """What a row builder reads of the encoder (named structurally: the encoder asks the
    context, which names the builder, so the builder cannot import the encoder's module)."""

    spec: RepeatSpec
    label2id: dict[str, int]
    context_tokens: int
    context_overlap: float
    context_separator: tuple[int, ...]

    def segments(self, words: Sequence[str]) -> list[Segment]: ...

    def word_ids(self, words: Sequence[str]) -> tuple[list[list[int]], list[int]]: ...


def sentence_items(encoder: RowEncoder, i: int, words: Sequence[str],
                   tags: Sequence[Sequence[str]] | None) -> list[Item]:
    """The rows of sentence ``i`` alone (several windows when it is long), with the label
    ids of the words each reads when ``tags`` are given."""
    ids = label_ids(tags[i], encoder.label2id) if tags is not None else None
    return [Item(i, seg, None if ids is None else tuple(ids[w] for w in seg.words))
            for seg in encoder.segments(words)]


def sentence_rows(encoder: RowEncoder, sentences: Sequence[Sequence[str]],
                  tags: Sequence[Sequence[str]] | None = None,
                  docs: Sequence[Hashable | None] | None = None) -> list[Item]:
    """The sentence context's rows: each sentence alone (``docs`` is not read)."""
    return [item for i, words in enumerate(sentences)
            for item in sentence_items(encoder, i, words, tags)]
