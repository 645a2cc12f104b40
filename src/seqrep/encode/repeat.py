"""Build one sentence's model input before any padding: the sentence k = r + 1 times in a row.

Layout of a segment (one window of a sentence)::

    [prefix] copy_1 [sep] copy_2 [sep] ... copy_k [suffix]

where ``prefix``/``suffix`` are the tokenizer's own special tokens (BOS, or CLS/SEP for
encoders) and each copy holds the subtokens of the window's words. Only the states of the read
copies are used: the last copy by default (it has seen the whole window), or every copy
(``read="mean"``). Within a copy, a word is read at its first subtoken (``subtoken="first"``),
its last, or the mean of its subtokens; a word's ``lead`` space-only tokens are skipped.

A sentence whose subtokens exceed ``max_subtokens`` per copy is cut into overlapping windows of
whole words; each word is read from the window where it has the most context on both sides, so
every word gets exactly one state and nothing is truncated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

SUBTOKEN_READS = ("first", "last", "mean")  # where in a copy a word is read
COPY_READS = ("last", "mean")  # which copies are read


@dataclass(frozen=True)
class Segment:
    """One model input row (before padding) and where to read word states from it.

    Attributes:
        input_ids: ``(length,)`` token ids.
        words: sentence word indices whose states this segment provides.
        reads: for each entry of ``words``, the positions to average over.
    """

    input_ids: tuple[int, ...]
    words: tuple[int, ...]
    reads: tuple[tuple[int, ...], ...]

    def __len__(self) -> int:
        return len(self.input_ids)


@dataclass(frozen=True)
class RepeatSpec:
    """How to lay out and read a repeated sequence (see module docstring)."""

    repetitions: int = 1
    prefix: tuple[int, ...] = ()
    suffix: tuple[int, ...] = ()
    separator: tuple[int, ...] = ()
    subtoken: str = "first"
    read: str = "last"
    max_subtokens: int = 256

    def __post_init__(self) -> None:
        if self.repetitions < 0:
            raise ValueError(f"repetitions must be >= 0, got {self.repetitions}")
        if self.subtoken not in SUBTOKEN_READS:
            raise ValueError(f"subtoken must be first, last or mean, got {self.subtoken!r}")
        if self.read not in COPY_READS:
            raise ValueError(f"read must be last or mean, got {self.read!r}")
        if self.max_subtokens < 1:
            raise ValueError(f"max_subtokens must be >= 1, got {self.max_subtokens}")

    @property
    def copies(self) -> int:
        """k = r + 1."""
        return self.repetitions + 1


def build_segment(word_ids: Sequence[Sequence[int]], spec: RepeatSpec,
                  words: Sequence[int] | None = None,
                  owned: Sequence[int] | None = None,
                  leads: Sequence[int] | None = None) -> Segment:
    """Lay out one window of words ``k`` times and note the read positions.

    Args:
        word_ids: subtoken ids of every word of the window.
        spec: layout and read options.
        leads: per word, leading space-only tokens not to read (default none).
        words: sentence indices of the window's words (default ``0..n-1``).
        owned: the subset of ``words`` this segment reports states for (default all).

    Returns:
        The segment.
    """
    return lay_out(word_ids, spec, words, owned, leads)


def focus_segment(word_ids: Sequence[Sequence[int]], spec: RepeatSpec,
                  words: Sequence[int] | None = None,
                  owned: Sequence[int] | None = None,
                  leads: Sequence[int] | None = None) -> Segment:
    """:func:`build_segment` with the last copy (at r >= 1) holding only the owned words, in
    their order; the earlier copies hold the whole window (document context's focus layout:
    the read words still see the whole window, in fewer tokens)."""
    words = list(range(len(word_ids))) if words is None else list(words)
    owned_set = set(words if owned is None else owned)
    return lay_out(word_ids, spec, words, owned, leads,
                   last=[j for j, w in enumerate(words) if w in owned_set])


def lay_out(word_ids: Sequence[Sequence[int]], spec: RepeatSpec,
            words: Sequence[int] | None = None, owned: Sequence[int] | None = None,
            leads: Sequence[int] | None = None, last: Sequence[int] | None = None
            ) -> Segment:
    """The segment of :func:`build_segment`, with ``last`` the window positions (indices
    into ``word_ids``) the last copy holds where there are several copies (None: all, as in
    every other copy); what a layout varies, so each layout is a few lines over this."""
    words = list(range(len(word_ids))) if words is None else list(words)
    owned_set = set(words if owned is None else owned)
    every = range(len(word_ids))
    ids: list[int] = list(spec.prefix)
    starts: list[dict[int, int]] = []  # per copy: start position of each word laid out
    for c in range(spec.copies):
        if c and spec.separator:
            ids.extend(spec.separator)
        copy_starts: dict[int, int] = {}
        for j in (last if last is not None and 0 < c == spec.copies - 1 else every):
            copy_starts[j] = len(ids)
            ids.extend(word_ids[j])
        starts.append(copy_starts)
    ids.extend(spec.suffix)

    read_copies = [spec.copies - 1] if spec.read == "last" else range(spec.copies)
    out_words, reads = [], []
    for j, sent_idx in enumerate(words):
        if sent_idx not in owned_set:
            continue
        n_sub, lead = len(word_ids[j]), (leads[j] if leads else 0)
        offsets = {"first": [lead], "last": [n_sub - 1],
                   "mean": list(range(lead, n_sub))}[spec.subtoken]
        reads.append(tuple(starts[c][j] + o for c in read_copies for o in offsets))
        out_words.append(sent_idx)
    return Segment(tuple(ids), tuple(out_words), tuple(reads))


def windows(lengths: Sequence[int], limit: int, overlap: int) -> list[tuple[int, int, list[int]]]:
    """Cut a sentence into windows of whole words with at most ``limit`` subtokens each.

    Args:
        lengths: subtokens per word.
        limit: maximum subtokens in one window (one copy).
        overlap: subtokens of context shared by consecutive windows.

    Returns:
        ``(start, end, owned)`` per window: words ``start:end`` are encoded, ``owned`` are the
        words read from this window (each word owned by exactly one window: the one where its
        distance to the nearest cut edge is largest).
    """
    n = len(lengths)
    spans: list[tuple[int, int]] = []
    start = 0
    while True:
        end, total = start, 0
        while end < n and (total + lengths[end] <= limit or end == start):
            total += lengths[end]
            end += 1
        spans.append((start, end))
        if end >= n:
            break
        # next window starts so that about `overlap` subtokens of this one are repeated
        nxt, back = end, 0
        while nxt - 1 > start + 1 and back + lengths[nxt - 1] <= overlap:
            nxt -= 1
            back += lengths[nxt]
        start = max(nxt, start + 1)

    def margin(i: int, s: int, e: int) -> float:
        left = float("inf") if s == 0 else i - s
        right = float("inf") if e == n else e - 1 - i
        return min(left, right)

    # Starts grow and ends never shrink from one window to the next, so the windows holding
    # word i are a run spans[lo..] whose first one only moves forward as i does: each word
    # looks only at the windows that hold it (about two, at half overlap), and the work is
    # linear in the document, where scanning every window for every word took 20 minutes
    # for a 1M-word book. Strict ">" keeps the earliest of equally good windows, as max() did.
    owned: list[list[int]] = [[] for _ in spans]
    lo = 0
    for i in range(n):
        while spans[lo][1] <= i:
            lo += 1
        best, best_margin = lo, margin(i, *spans[lo])
        k = lo + 1
        while k < len(spans) and spans[k][0] <= i:
            m = margin(i, *spans[k])
            if m > best_margin:
                best, best_margin = k, m
            k += 1
        owned[best].append(i)
    return [(s, e, o) for (s, e), o in zip(spans, owned)]


def encode_sentence(word_ids: Sequence[Sequence[int]], spec: RepeatSpec,
                    overlap: int | None = None,
                    leads: Sequence[int] | None = None) -> list[Segment]:
    """Segments for one sentence: one if it fits ``spec.max_subtokens`` per copy, else windows.

    Args:
        word_ids: subtoken ids of every word.
        spec: layout and read options.
        leads: per word, leading space-only tokens not to read.
        overlap: context shared by windows, in subtokens (default a quarter of the limit).

    Returns:
        Segments whose ``words`` together cover every word exactly once (none for no words).
    """
    if not word_ids:
        return []
    lengths = [len(w) for w in word_ids]
    if sum(lengths) <= spec.max_subtokens:
        return [build_segment(word_ids, spec, leads=leads)]
    overlap = spec.max_subtokens // 4 if overlap is None else overlap
    segments = []
    for s, e, owned in windows(lengths, spec.max_subtokens, overlap):
        if owned:
            segments.append(build_segment(word_ids[s:e], spec, range(s, e), owned,
                                          leads[s:e] if leads else None))
    return segments
