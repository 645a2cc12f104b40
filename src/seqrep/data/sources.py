"""What every reader shares: reading a file as UTF-8 and turning tag columns into IOB2.

Both raise :class:`seqrep.errors.DataError` naming the file and line, so that a bad file
reaches the user as one readable line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from seqrep.data.tags import TagError, convert_tags, detect_scheme, normalize_scheme, split_tag
from seqrep.errors import ConfigError, DataError


def read_text(path: str | Path) -> str:
    """Read a whole file as UTF-8 (a leading byte-order mark is dropped).

    Args:
        path: the file.

    Returns:
        its text.

    Raises:
        DataError: the file is missing, unreadable, not UTF-8 (naming the line) or empty.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DataError(path, "no such file") from None
    except IsADirectoryError:
        raise DataError(path, "expected a file, got a directory") from None
    except OSError as err:
        raise DataError(path, f"cannot read file ({err.strerror})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise DataError(path, f"not valid UTF-8 (byte 0x{data[err.start]:02x} at offset "
                              f"{err.start}); expected a UTF-8 text file", line) from None
    if not text.strip():
        raise DataError(path, "the file is empty; expected at least one sentence")
    return text


def check_scheme(scheme: str | None) -> str | None:
    """Resolve a scheme name (``None`` means detect); unknown names raise ConfigError."""
    if scheme is None:
        return None
    try:
        return normalize_scheme(scheme)
    except ValueError as err:
        raise ConfigError(f"scheme: {err}") from None


def _check_plain(sequences: Sequence[Sequence[str]], source: str | Path,
                 line_of: Callable[[int, int], int | None]) -> None:
    """Plain labels were detected: a file that mixes them with prefixed tags is an error."""
    if not any(split_tag(t)[0] in ("B", "I", "E", "S") for tags in sequences for t in tags):
        return
    i, j = next((i, j) for i, tags in enumerate(sequences) for j, t in enumerate(tags)
                if split_tag(t)[0] == "")
    raise DataError(source, f"tag {sequences[i][j]!r} has no B-/I- prefix but other tags have "
                            "one; expected O or PREFIX-LABEL (pass scheme TOKEN to read every tag "
                            "as a plain label)", line_of(i, j))


def to_iob2(sequences: Sequence[Sequence[str]], scheme: str | None, strict: bool,
            source: str | Path, line_of: Callable[[int, int], int | None]
            ) -> tuple[list[list[str]], int, str]:
    """Convert every tag sequence of a file to IOB2.

    Args:
        sequences: one tag sequence per sentence.
        scheme: the tag scheme, or ``None`` to detect it over the whole file
            (:func:`seqrep.data.tags.detect_scheme`). TOKEN labels (e.g. POS) become width-1
            spans ``B-NN``; a file that mixes plain labels with prefixed tags is an error unless
            the scheme is given.
        strict: raise on an invalid sequence instead of repairing it.
        source: the file, for error messages.
        line_of: ``(sentence index, word index) -> line number`` for error messages.

    Returns:
        ``(tags, repaired, scheme)``: IOB2 tags per sentence, the number of repaired tags and
        the scheme that was read.

    Raises:
        DataError: a tag does not fit the scheme (or, under ``strict``, an invalid sequence).
    """
    resolved = check_scheme(scheme) or detect_scheme(sequences)
    if scheme is None and resolved == "TOKEN":
        _check_plain(sequences, source, line_of)
    out: list[list[str]] = []
    repaired = 0
    for i, tags in enumerate(sequences):
        try:
            iob2, fixed = convert_tags(tags, resolved, "IOB2", strict=strict)
        except TagError as err:
            raise DataError(source, f"{err} (scheme {resolved})", line_of(i, err.index)) from None
        out.append(iob2)
        repaired += fixed
    return out, repaired, resolved
