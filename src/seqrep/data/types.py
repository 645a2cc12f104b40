"""Plain objects for labeled text: a Span over words, a Sentence and a Corpus (one split).

Labels are stored as IOB2 tags, one per word; spans are derived from them. POS-style labels
(no B-/I- prefix) become width-1 spans ``B-NOUN``, so NER, slots and POS share one path.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from seqrep.data.tags import spans_to_tags, tags_to_spans
from seqrep.errors import DataError


@dataclass(frozen=True)
class Span:
    """Labeled words ``words[start:end]`` (``end`` exclusive)."""

    start: int
    end: int
    label: str

    def __post_init__(self) -> None:
        if not 0 <= self.start < self.end:
            raise ValueError(f"Span needs 0 <= start < end, got start={self.start} end={self.end}")


@dataclass(frozen=True)
class Sentence:
    """Words with one IOB2 tag each, plus optional metadata.

    Args:
        words: the words (tokens) of the sentence.
        tags: one IOB2 tag per word (``O``, ``B-X``, ``I-X``).
        doc_id: document the sentence belongs to, if known.
        text: the original text, if the words were cut from one.
        offsets: ``(start, end)`` character offsets of each word in ``text``.
        meta: anything else a reader keeps (sentence id, CoNLL-U comments ...).
    """

    words: tuple[str, ...]
    tags: tuple[str, ...]
    doc_id: str | None = None
    text: str | None = None
    offsets: tuple[tuple[int, int], ...] | None = None
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "words", tuple(self.words))
        object.__setattr__(self, "tags", tuple(self.tags))
        if len(self.words) != len(self.tags):
            raise ValueError(f"{len(self.words)} words but {len(self.tags)} tags")
        if self.offsets is not None:
            object.__setattr__(self, "offsets", tuple(tuple(o) for o in self.offsets))
            if len(self.offsets) != len(self.words):
                raise ValueError(f"{len(self.words)} words but {len(self.offsets)} offsets")

    @classmethod
    def from_spans(cls, words: list[str] | tuple[str, ...], spans: list[Span],
                   **kw: Any) -> Sentence:
        """Build a sentence from words and (non-overlapping) spans."""
        tags = spans_to_tags([(s.start, s.end, s.label) for s in spans], len(words))
        return cls(tuple(words), tuple(tags), **kw)

    @property
    def spans(self) -> tuple[Span, ...]:
        """The labeled spans, read from the IOB2 tags."""
        return tuple(Span(s, e, lab) for s, e, lab in tags_to_spans(self.tags)[0])

    def __len__(self) -> int:
        return len(self.words)


@dataclass
class Corpus:
    """One split of a dataset: its sentences and what reading them took.

    Args:
        sentences: the sentences, in file order.
        name: where they came from (file path or dataset name and split).
        repaired: number of invalid tag sequences that were repaired on reading.
        notes: problems worth reporting (e.g. spans that overlap no word).
    """

    sentences: list[Sentence]
    name: str = ""
    repaired: int = 0
    notes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.sentences)

    def __iter__(self):  # noqa: ANN204 - iterator of Sentence
        return iter(self.sentences)

    def __getitem__(self, i: int) -> Sentence:
        return self.sentences[i]

    def sentences_with_words(self) -> list[Sentence]:
        """The sentences that have at least one word, in order.

        Raises:
            DataError: none has (the corpus is empty, or all its sentences are), naming the
                corpus, so that a split with nothing to train or evaluate on is one line and
                not a crash further on.
        """
        kept = [s for s in self.sentences if len(s)]
        if not kept:
            raise DataError(self.name or "corpus", f"no sentence has words ({len(self)} "
                                                   "sentences, all empty); expected at least one")
        return kept

    def notes_line(self) -> str | None:
        """One line counting the reader's notes by kind (spans moved, or left out of the gold
        because they overlap or repeat another), for every command that reads the corpus;
        ``None`` when there are none. ``seqrep data stats`` lists them."""
        if not self.notes:
            return None
        kinds = Counter(n.split(":", 1)[0] for n in self.notes)
        n = len(self.notes)
        return (f"{self.name or 'corpus'}: {n} reader note{'s' if n != 1 else ''} ("
                + ", ".join(f"{v} {k}" for k, v in kinds.most_common())
                + "): spans placed or kept other than written; `seqrep data stats` lists them")

    def span_types(self) -> list[str]:
        """The sorted span labels (entity types) found in the corpus."""
        return sorted({s.label for sent in self.sentences for s in sent.spans})

    def tag_set(self) -> list[str]:
        """The IOB2 tag inventory: ``O`` first, then ``B-X``, ``I-X`` for each label X."""
        return ["O"] + [f"{p}-{lab}" for lab in self.span_types() for p in ("B", "I")]

    def stats(self) -> dict[str, Any]:
        """Counts of sentences, tokens, spans and spans per label (the ``data stats`` keys)."""
        per_label: Counter[str] = Counter()
        for sent in self.sentences:
            per_label.update(s.label for s in sent.spans)
        return {
            "sentences": len(self.sentences),
            "tokens": sum(len(s) for s in self.sentences),
            "spans": sum(per_label.values()),
            "spans_per_label": dict(sorted(per_label.items())),
            "labels": sorted(per_label),
            "repaired": self.repaired,
        }
