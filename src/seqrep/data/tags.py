"""Pure converters between tag sequences and spans, for IOB1, IOB2 (BIO), BIOES (BILOU), IO
and TOKEN (one label per word, as for POS).

A span is ``(start, end, label)`` over word indices with ``end`` exclusive.

Repair policy for IOB2 (the convention seqeval's lenient mode and conlleval follow): an ``I-X``
that does not continue an open ``X`` span (it follows ``O``, the sentence start, or a span of
another type) starts a new ``X`` span. Each such tag counts as one repair; with ``strict=True``
it raises :class:`TagError` instead. BIOES repairs likewise (a stray ``I-``/``E-`` starts a span).

Prefixes are read in either case: ``b-org``, ``i-org`` and ``o`` are IOB2 like ``B-org``,
``I-org`` and ``O``. Only the prefix is normalised; the label keeps its spelling, so ``b-org``
is written back as ``B-org`` (readers refuse a file that spells one label in two cases, such as
``B-ORG`` and ``b-org``, see :func:`seqrep.data.iob2.to_iob2`). The TOKEN scheme takes tags
literally: there only ``O`` is outside, and ``o`` or ``b-org`` are plain labels.

A bare prefix (``B-``, ``i_``) has no label: :func:`tags_to_spans` raises :class:`TagError` for
it in every scheme rather than read the label ``B-``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence

SCHEMES = ("IOB1", "IOB2", "BIOES", "IO", "TOKEN")
ALIASES = {"BIO": "IOB2", "BILOU": "BIOES", "IOBES": "BIOES", "POS": "TOKEN"}
_PREFIXES = {"B", "I", "E", "S", "L", "U"}
_LETTERS = "BIESLUbieslu"

SpanTuple = tuple[int, int, str]


class TagError(ValueError):
    """An invalid tag sequence under ``strict=True``; ``index`` is the offending word."""

    def __init__(self, message: str, index: int) -> None:
        super().__init__(message)
        self.index = index


def normalize_scheme(scheme: str) -> str:
    """Upper-case a scheme name and resolve aliases; raise ValueError for unknown names."""
    s = ALIASES.get(scheme.upper(), scheme.upper())
    if s not in SCHEMES:
        raise ValueError(f"unknown tag scheme {scheme!r}; expected one of {', '.join(SCHEMES)}"
                         f" (aliases: {', '.join(ALIASES)})")
    return s


def split_tag(tag: str) -> tuple[str, str | None]:
    """Split a tag into prefix and label; the prefix is read in either case.

    ``"B-PER"`` -> ``("B", "PER")``; ``"b-org"`` -> ``("B", "org")``; ``"O"`` and ``"o"`` ->
    ``("O", None)``; ``"NOUN"`` -> ``("", "NOUN")``; a bare prefix ``"B-"`` -> ``("", "B-")``
    (see :func:`bare_prefix`).
    """
    if tag in ("O", "o"):
        return "O", None
    if len(tag) > 2 and tag[1] in "-_" and tag[0] in _LETTERS:
        prefix = {"L": "E", "U": "S"}.get(tag[0].upper(), tag[0].upper())
        return prefix, tag[2:]
    return "", tag


def bare_prefix(tag: str) -> bool:
    """True for a prefix with no label: ``B-``, ``i_``, ``S-`` ..."""
    return len(tag) == 2 and tag[1] in "-_" and tag[0] in _LETTERS


def looks_like_tag(label: str) -> bool:
    """True for a label that is itself a prefixed tag (``B-PER``, ``i_x``, ``B-``), which
    would be written as ``B-B-PER``."""
    return bare_prefix(label) or split_tag(label)[0] in ("B", "I", "E", "S")


def label_problem(label: str, noun: str = "tag") -> str | None:
    """What makes ``label`` (a tag, or a span label: ``noun``) unusable, or ``None``: a control
    or other unprintable character (shown escaped, with its code point), or spaces around it."""
    bad = next((c for c in label if not c.isprintable()), None)
    if bad is not None:
        kind = "control" if unicodedata.category(bad) == "Cc" else "unprintable"
        shown = bad.encode("unicode_escape").decode("ascii")
        return (f"holds the {kind} character {shown} (U+{ord(bad):04X}); expected printable "
                "characters")
    if label != label.strip():
        return f"has spaces around it; expected the {noun} alone"
    return None


def tags_to_spans(tags: Sequence[str], scheme: str = "IOB2",
                  strict: bool = False) -> tuple[list[SpanTuple], int]:
    """Read spans from tags.

    Args:
        tags: one tag per word.
        scheme: the tag scheme of ``tags`` (see module docstring).
        strict: raise :class:`TagError` on an invalid sequence instead of repairing it.

    Returns:
        ``(spans, repaired)``: spans in order and the number of repaired tags.
    """
    scheme = normalize_scheme(scheme)
    spans: list[SpanTuple] = []
    repaired = 0
    start, label = -1, None  # the open span, if label is not None

    def close(end: int) -> None:
        nonlocal label
        if label is not None:
            spans.append((start, end, label))
        label = None

    for i, tag in enumerate(tags):
        if bare_prefix(tag):
            raise TagError(f"tag {tag!r} at word {i + 1} is a prefix with no label "
                           "(expected PREFIX-LABEL such as B-PER)", i)
        prefix, lab = split_tag(tag)
        if scheme == "TOKEN":
            close(i)
            if tag != "O":
                spans.append((i, i + 1, tag))
            continue
        if prefix == "O":
            close(i)
            continue
        if prefix == "":
            raise TagError(f"tag {tag!r} at word {i + 1} has no B-/I- prefix "
                           f"(expected O or PREFIX-LABEL for {scheme})", i)
        continues = label == lab
        if scheme == "IO" or (scheme == "IOB1" and prefix == "I"):
            starts = not continues
        elif prefix == "B" or prefix == "S":
            starts = True
        else:  # I or E in IOB2/BIOES, or E/S in IOB1 (treated alike)
            starts = not continues
            if starts:
                if strict:
                    raise TagError(f"invalid {scheme} sequence: {tag!r} at word {i + 1} follows "
                                   f"{tags[i - 1]!r}" if i else
                                   f"invalid {scheme} sequence: {tag!r} starts the sentence", i)
                repaired += 1
        if starts:
            close(i)
            start, label = i, lab
        if scheme == "BIOES" and prefix in ("E", "S"):
            close(i + 1)
    close(len(tags))
    return spans, repaired


def strict_spans(tags: Sequence[str]) -> list[SpanTuple]:
    """Spans of IOB2 tags as seqeval's strict mode reads them, the rule evaluation scores by:
    a span is ``B-X`` followed by any ``I-X``; an ``I-`` that continues no open span of its
    type belongs to no span (it is not repaired)."""
    spans: list[SpanTuple] = []
    start, label = -1, None
    for i, tag in enumerate(list(tags) + ["O"]):
        prefix, lab = split_tag(tag)
        if prefix == "I" and label is not None and lab == label:
            continue
        if label is not None:
            spans.append((start, i, label))
        start, label = (i, lab) if prefix == "B" else (-1, None)
    return spans


def spans_to_tags(spans: Iterable[SpanTuple], n: int, scheme: str = "IOB2") -> list[str]:
    """Write spans as ``n`` tags in ``scheme``.

    Overlapping or out-of-range spans raise ValueError.
    """
    scheme = normalize_scheme(scheme)
    tags = ["O"] * n
    prev_end, prev_label = -1, None
    for start, end, label in sorted(spans):
        if not 0 <= start < end <= n:
            raise ValueError(f"span ({start}, {end}, {label!r}) outside 0..{n}")
        if any(t != "O" for t in tags[start:end]):
            raise ValueError(f"span ({start}, {end}, {label!r}) overlaps another span")
        if scheme == "TOKEN":
            for i in range(start, end):
                tags[i] = label
            continue
        for i in range(start, end):
            tags[i] = f"I-{label}"
        if scheme == "IOB2" or (scheme == "IOB1" and prev_end == start and prev_label == label):
            tags[start] = f"B-{label}"
        elif scheme == "BIOES":
            if end - start == 1:
                tags[start] = f"S-{label}"
            else:
                tags[start], tags[end - 1] = f"B-{label}", f"E-{label}"
        prev_end, prev_label = end, label
    return tags


def convert_tags(tags: Sequence[str], source: str, target: str = "IOB2",
                 strict: bool = False) -> tuple[list[str], int]:
    """Convert tags between schemes; returns ``(tags, repaired)``."""
    spans, repaired = tags_to_spans(tags, source, strict=strict)
    return spans_to_tags(spans, len(tags), target), repaired


def detect_scheme(sequences: Iterable[Sequence[str]]) -> str:
    """Guess the scheme of a corpus' tag sequences.

    Prefixes count in either case (``b-org`` is ``B-org``). TOKEN if some tag has no prefix
    (``NN``, or a bare ``B-``); BIOES if any ``E-``/``S-``/``L-``/``U-``; IO if there is
    no ``B-`` at all; IOB1 if more ``I-X`` tags start a span (after ``O`` or another type) than
    ``B-X`` tags do (IOB1 uses B only between two adjacent spans of one type, IOB2 starts every
    span with B); otherwise IOB2. Counting rather than requiring "every B follows an X" keeps a
    few annotation slips from flipping the verdict: CoNLL-2003's eng.train is IOB1 but has two
    ``B-MISC`` after ``O`` (lines 152428 and 175436).
    """
    any_prefixed = any_b = any_bioes = False
    i_starts = b_after_other = 0
    for tags in sequences:
        prev = None
        for tag in tags:
            prefix, lab = split_tag(tag)
            if prefix == "":
                return "TOKEN"
            if prefix not in ("O",):
                any_prefixed = True
            if prefix in ("E", "S"):
                any_bioes = True
            elif prefix == "B":
                any_b = True
                if prev != lab:
                    b_after_other += 1
            elif prefix == "I" and prev != lab:
                i_starts += 1
            prev = lab
    if not any_prefixed:
        return "IOB2"
    if any_bioes:
        return "BIOES"
    if not any_b:
        return "IO"
    if i_starts > b_after_other:
        return "IOB1"
    return "IOB2"
