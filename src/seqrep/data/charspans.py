"""Character-offset spans -> word spans, for readers of text with character annotations.

A character span ``[start, end)`` is mapped onto the words cut by
:func:`seqrep.data.tokenize.split_words` under an explicit ``alignment`` (as spaCy's
``char_span`` does):

- ``"expand"`` (default): every word the span overlaps, so a span cut mid-word grows to the
  word boundaries ("dress cod" -> "dress code");
- ``"contract"``: only the words wholly inside the span;
- ``"strict"``: the span must start and end on word boundaries, or the reader raises.

A span label must be a bare label: one that is itself a tag (``B-PER``, which would be written
``B-B-PER``) or that holds a control character is an error (:func:`span_label_problem`).

Spans that cover no word, overlap an earlier span, or repeat one are not placed; the result
lists each of them so the reader can report it (nothing is dropped silently).
:func:`place_on_words` does all of it for one text: it cuts the words, places the spans,
raises under ``"strict"`` and writes the notes.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from seqrep.data.quote import brief, cut
from seqrep.data.tags import bare_prefix, label_problem, looks_like_tag
from seqrep.data.tokenize import split_words
from seqrep.errors import ConfigError, DataError

ALIGNMENTS = ("expand", "contract", "strict")


@dataclass(frozen=True)
class CharSpan:
    """A labeled character span ``text[start:end]``; ``ref`` names it in reports."""

    start: int
    end: int
    label: str
    ref: str = ""


@dataclass
class Placement:
    """Word spans placed for one text, and the character spans that needed care.

    Attributes:
        spans: ``(start, end, label)`` word spans, sorted and non-overlapping.
        moved: ``(char_span, word_start, word_end)`` for spans that did not fall on word
            boundaries and were expanded or contracted.
        unplaced: character spans that cover no word under the alignment.
        overlapping: ``(char_span, other)``: spans dropped because their words overlap those of
            an earlier placed span ``other`` (sorted by start, longer first).
        duplicates: ``(char_span, other)``: spans whose words and label repeat ``other``.
    """

    spans: list[tuple[int, int, str]] = field(default_factory=list)
    moved: list[tuple[CharSpan, int, int]] = field(default_factory=list)
    unplaced: list[CharSpan] = field(default_factory=list)
    overlapping: list[tuple[CharSpan, CharSpan]] = field(default_factory=list)
    duplicates: list[tuple[CharSpan, CharSpan]] = field(default_factory=list)


def check_alignment(alignment: str) -> str:
    """Return ``alignment`` if it is known, else raise ConfigError listing the allowed ones."""
    if alignment not in ALIGNMENTS:
        raise ConfigError(f"unknown alignment {alignment!r}; expected one of "
                          f"{', '.join(ALIGNMENTS)}")
    return alignment


def span_label_problem(label: str) -> str | None:
    """What makes a span label unusable, or ``None``: a control or unprintable character, spaces
    around it, or a tag prefix (``B-PER``: the prefixes are added on reading)."""
    problem = label_problem(label, "label")
    if problem is None and bare_prefix(label):
        return "is a tag prefix with no label; expected a label such as PER"
    if problem is None and looks_like_tag(label):
        return (f"looks like a tag; expected the label alone ({label[2:]!r}): the B-/I- "
                "prefixes are added on reading")
    return problem


def char_to_words(offsets: Sequence[tuple[int, int]], start: int, end: int,
                  alignment: str = "expand") -> tuple[int, int, bool] | None:
    """Map the character span ``[start, end)`` to words.

    Args:
        offsets: ``(start, end)`` character offsets of the words, in order.
        start: first character of the span.
        end: one past its last character.
        alignment: ``"expand"``, ``"contract"`` or ``"strict"`` (see the module docstring).

    Returns:
        ``(first_word, end_word, exact)`` with ``end_word`` exclusive and ``exact`` true when the
        span starts and ends on word boundaries; ``None`` when no word fits (under ``"strict"``,
        also when the span is not exact).
    """
    starts = [s for s, _ in offsets]
    ends = [e for _, e in offsets]
    # Words overlapping the span: word.end > start and word.start < end.
    first = bisect_right(ends, start)
    last = bisect_left(starts, end)
    if first >= last:
        return None
    exact = starts[first] == start and ends[last - 1] == end
    if exact or alignment == "expand":
        return first, last, exact
    if alignment == "strict":
        return None
    if starts[first] < start:
        first += 1
    if ends[last - 1] > end:
        last -= 1
    return (first, last, False) if first < last else None


def place_spans(offsets: Sequence[tuple[int, int]], char_spans: Sequence[CharSpan],
                alignment: str = "expand") -> Placement:
    """Place character spans on words, keeping the first of any overlapping ones.

    Spans are taken in order of start (longer first on ties); one whose words overlap an already
    placed span is not placed. Under ``"strict"``, a span off word boundaries is ``unplaced``.

    Args:
        offsets: ``(start, end)`` character offsets of the words, in order.
        char_spans: the spans to place.
        alignment: ``"expand"``, ``"contract"`` or ``"strict"``.

    Returns:
        a :class:`Placement`.
    """
    check_alignment(alignment)
    out = Placement()
    taken: dict[int, CharSpan] = {}  # word index -> the placed span covering it
    placed: dict[tuple[int, int, str], CharSpan] = {}
    for cs in sorted(char_spans, key=lambda c: (c.start, -c.end)):
        hit = char_to_words(offsets, cs.start, cs.end, alignment)
        if hit is None:
            out.unplaced.append(cs)
            continue
        first, last, exact = hit
        key = (first, last, cs.label)
        if key in placed:
            out.duplicates.append((cs, placed[key]))
            continue
        clash = next((taken[i] for i in range(first, last) if i in taken), None)
        if clash is not None:
            out.overlapping.append((cs, clash))
            continue
        if not exact:
            out.moved.append((cs, first, last))
        placed[key] = cs
        for i in range(first, last):
            taken[i] = cs
    out.spans = sorted(placed)
    return out


def _describe(cs: CharSpan, noun: str) -> str:
    return f"{noun} {cs.ref!r} ({cs.label}, chars {cs.start}-{cs.end})"


def placement_notes(placed: Placement, where: str, text: str,
                    offsets: Sequence[tuple[int, int]], noun: str = "span") -> list[str]:
    """Describe each span that did not land exactly on words, one note per span.

    Notes read ``"<kind>: <where>: <detail>"`` with kind ``cut mid-word`` (the span was moved to
    word boundaries), ``no word``, ``overlapping`` or ``duplicate`` (the span is not labeled).

    Args:
        placed: the result of :func:`place_spans`.
        where: names the file and record, e.g. ``"train.xml sentence 856"``.
        text: the text the offsets point into.
        offsets: the word offsets the spans were placed on.
        noun: what a span is called in the notes (``"aspect term"``, ``"slot"``).

    Returns:
        the notes, in the order moved, unplaced, overlapping, duplicates.
    """
    notes = []
    for cs, first, last in placed.moved:
        words = text[offsets[first][0]:offsets[last - 1][1]]
        notes.append(f"cut mid-word: {where}: {_describe(cs, noun)} does not fall on word "
                     f"boundaries; labeled the words {words!r}")
    for cs in placed.unplaced:
        notes.append(f"no word: {where}: {_describe(cs, noun)} covers no whole word; not labeled")
    for cs, other in placed.overlapping:
        notes.append(f"overlapping: {where}: {_describe(cs, noun)} overlaps "
                     f"{_describe(other, noun)}; not labeled (a word holds one tag)")
    for cs, other in placed.duplicates:
        notes.append(f"duplicate: {where}: {_describe(cs, noun)} repeats "
                     f"{_describe(other, noun)} on the same words; labeled once")
    return notes


def place_on_words(text: str, char_spans: Sequence[CharSpan], alignment: str, where: str,
                   noun: str = "span", source: object = None,
                   line: int | Callable[[CharSpan], int | None] | None = None,
                   ) -> tuple[list[tuple[int, int]], Placement, list[str]]:
    """Cut ``text`` into words and place ``char_spans`` on them, as every reader does.

    Args:
        text: the text the spans point into.
        char_spans: the spans to place.
        alignment: ``"expand"``, ``"contract"`` or ``"strict"``.
        where: names the file and record, e.g. ``"train.xml sentence 856"``.
        noun: what a span is called in messages (``"aspect term"``, ``"slot"``).
        source: the file named by the error under ``"strict"``.
        line: the line the error names: a number, or a function giving the line of a span.

    Returns:
        ``(offsets, placement, notes)``: the words' offsets from
        :func:`seqrep.data.tokenize.split_words`, the :class:`Placement` and its
        :func:`placement_notes`.

    Raises:
        DataError: under ``"strict"``, for the first span that is not on word boundaries (or
            covers no word), naming the span and the record; under any alignment, for a span
            label that is a tag or holds a control character (:func:`span_label_problem`).
    """
    for cs in char_spans:
        problem = span_label_problem(cs.label)
        if problem is not None:
            raise DataError(source, f"{noun} {brief(cs.ref)} label {brief(cs.label)} {problem}, "
                                    f"in {cut(where, 160)}", line(cs) if callable(line) else line)
    offsets = split_words(text)
    placed = place_spans(offsets, char_spans, alignment)
    if alignment == "strict" and placed.unplaced:
        cs = placed.unplaced[0]
        raise DataError(source, f"{cut(_describe(cs, noun), 160)} does not fall on word "
                                f"boundaries (alignment='strict'), in {cut(where, 160)}",
                        line(cs) if callable(line) else line)
    return offsets, placed, placement_notes(placed, where, text, offsets, noun)
