"""Turning a file's tag columns into IOB2: the scheme read or detected over the whole file,
tags no scheme reads refused, invalid sequences repaired (or refused under ``strict``), every
error naming the file and line."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from seqrep.data.options import check_scheme
from seqrep.data.quote import brief, cut
from seqrep.data.tags import (
    TagError,
    bare_prefix,
    convert_tags,
    detect_scheme,
    label_problem,
    looks_like_tag,
    split_tag,
)
from seqrep.errors import DataError


def _check_plain(sequences: Sequence[Sequence[str]], source: str | Path,
                 line_of: Callable[[int, int], int | None]) -> None:
    """Plain labels were detected: a file that mixes them with prefixed tags is an error."""
    if not any(split_tag(t)[0] in ("B", "I", "E", "S") for tags in sequences for t in tags):
        return
    i, j = next((i, j) for i, tags in enumerate(sequences) for j, t in enumerate(tags)
                if split_tag(t)[0] == "")
    raise DataError(source, f"tag {brief(sequences[i][j])} has no B-/I- prefix but other tags have "
                            "one; expected O or PREFIX-LABEL (pass scheme TOKEN to read every tag "
                            "as a plain label)", line_of(i, j))


def _check_tags(sequences: Sequence[Sequence[str]], source: str | Path,
                line_of: Callable[[int, int], int | None]) -> None:
    """Tags no scheme reads: a control character or spaces in one, or a bare prefix."""
    for i, tags in enumerate(sequences):
        for j, tag in enumerate(tags):
            problem = label_problem(tag)
            if problem is not None:
                raise DataError(source, f"tag {brief(tag)} {problem}", line_of(i, j))
            if bare_prefix(tag):
                raise DataError(source, f"tag {tag!r} has an empty label; expected O or "
                                        "PREFIX-LABEL such as B-PER", line_of(i, j))


def _check_letters(sequences: Sequence[Sequence[str]], source: str | Path,
                   line_of: Callable[[int, int], int | None]) -> None:
    """Plain labels were detected: if they are only prefix letters (``B I O``), they are
    IOB tags without labels, not labels."""
    found = {t for tags in sequences for t in tags}
    letters = [c for c in "BIESLUO" if c in found or c.lower() in found]
    if not found <= set("BIESLUObiesluo") or letters in ([], ["O"]):
        return
    i, j = next((i, j) for i, tags in enumerate(sequences) for j, t in enumerate(tags)
                if t not in ("O", "o"))
    raise DataError(source, f"tag {sequences[i][j]!r} is a prefix with no label (the tags are "
                            f"only {'/'.join(letters)} letters); expected PREFIX-LABEL such as "
                            "B-X, or pass scheme TOKEN to read each tag as a plain label",
                    line_of(i, j))


def _check_labels(sequences: Sequence[Sequence[str]], source: str | Path,
                  line_of: Callable[[int, int], int | None]) -> None:
    """Labels of prefixed tags: one that is itself a tag (``B-B-PER``), or one label spelled
    in two cases (``B-ORG`` and ``b-org``), is an error."""
    seen: dict[str, tuple[str, int, int]] = {}  # casefolded label -> first spelling, where
    for i, tags in enumerate(sequences):
        for j, tag in enumerate(tags):
            prefix, label = split_tag(tag)
            if label is None or prefix == "":
                continue
            if looks_like_tag(label):
                raise DataError(source, f"tag {brief(tag)} has two prefixes (its label "
                                        f"{brief(label)} is itself a tag); expected "
                                        "PREFIX-LABEL such as B-PER", line_of(i, j))
            spelling, fi, fj = seen.setdefault(label.casefold(), (label, i, j))
            if spelling != label:
                line = line_of(fi, fj)
                where = f"line {line}" if line is not None else f"sentence {fi + 1}"
                raise DataError(source, f"tag {brief(tag)} has the label {brief(label)}, which "
                                        f"{where} spells {brief(spelling)}; expected one "
                                        "spelling per label (prefixes may be either case, "
                                        "labels are case-sensitive)", line_of(i, j))


def _check_io(sequences: Sequence[Sequence[str]], source: str | Path,
              line_of: Callable[[int, int], int | None]) -> None:
    """Scheme IO was given: a ``B-X`` right after a tag of type X starts a new span in IOB1
    and IOB2, and IO would merge the two spans into one (chunk data lost 5 % of its spans)."""
    for i, tags in enumerate(sequences):
        for j in range(1, len(tags)):
            prefix, label = split_tag(tags[j])
            before = split_tag(tags[j - 1])
            if prefix == "B" and before[0] in ("B", "I") and before[1] == label:
                raise DataError(source, f"tag {brief(tags[j])} starts a span right after "
                                        f"another {brief(label)} span, which scheme IO would "
                                        "merge into one; these are IOB tags (pass scheme IOB2 "
                                        "or IOB1, or leave the scheme out to detect it)",
                                line_of(i, j))


def to_iob2(sequences: Sequence[Sequence[str]], scheme: str | None, strict: bool,
            source: str | Path, line_of: Callable[[int, int], int | None]
            ) -> tuple[list[list[str]], int, str]:
    """Convert every tag sequence of a file to IOB2.

    Args:
        sequences: one tag sequence per sentence.
        scheme: the tag scheme, or ``None`` to detect it over the whole file
            (:func:`seqrep.data.tags.detect_scheme`). TOKEN labels (e.g. POS) become width-1
            spans ``B-NN``; a file that mixes plain labels with prefixed tags is an error unless
            the scheme is given, and so is one whose tags are only the letters ``B I O``.
            Prefixes are read in either case (``b-org`` becomes ``B-org``: the label keeps its
            spelling), so a label spelled in two cases (``B-ORG``, ``b-org``) is an error.
        strict: raise on an invalid sequence instead of repairing it.
        source: the file, for error messages.
        line_of: ``(sentence index, word index) -> line number`` for error messages.

    Returns:
        ``(tags, repaired, scheme)``: IOB2 tags per sentence, the number of repaired tags and
        the scheme that was read.

    Raises:
        DataError: a tag does not fit the scheme (or, under ``strict``, an invalid sequence);
            a tag with a control character, spaces around it, an empty label (``B-``) or two
            prefixes (``B-B-PER``).
    """
    _check_tags(sequences, source, line_of)
    resolved = check_scheme(scheme) or detect_scheme(sequences)
    if scheme is None and resolved == "TOKEN":
        _check_plain(sequences, source, line_of)
        _check_letters(sequences, source, line_of)
    if resolved == "IO":
        _check_io(sequences, source, line_of)
    if resolved != "TOKEN":
        _check_labels(sequences, source, line_of)
    out: list[list[str]] = []
    repaired = 0
    for i, tags in enumerate(sequences):
        try:
            iob2, fixed = convert_tags(tags, resolved, "IOB2", strict=strict)
        except TagError as err:
            raise DataError(source, f"{cut(str(err), 200)} (scheme {resolved})",
                            line_of(i, err.index)) from None
        out.append(iob2)
        repaired += fixed
    return out, repaired, resolved
