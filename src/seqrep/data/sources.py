"""What every reader shares: reading a file as UTF-8, parsing JSON, showing a bad value and
turning tag columns into IOB2.

They raise :class:`seqrep.errors.DataError` naming the file and line, so that a bad file
reaches the user as one readable line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from seqrep.data.tags import (
    SCHEMES,
    TagError,
    convert_tags,
    detect_scheme,
    normalize_scheme,
    split_tag,
)
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


def _printable(text: str) -> str:
    """``text`` with line breaks and other unprintable characters escaped."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text)


def cut(text: str, limit: int = 60) -> str:
    """``text`` for a one-line message: unprintable characters escaped, cut to ``limit``."""
    text = _printable(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def brief(text: str, limit: int = 60) -> str:
    """``repr(text)`` for a one-line message, cut to about ``limit`` characters."""
    r = repr(text)
    return r if len(r) <= limit else r[: limit - 4] + "..." + r[0]


def show(value: Any, limit: int = 60) -> str:
    """A JSON value as JSON (``true``, ``null``, ``"x"``) for a one-line message: unprintable
    characters escaped, cut to ``limit`` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return cut(text, limit)


def _lone_surrogate(value: Any) -> str | None:
    """The first string in a parsed JSON value that holds half of a UTF-16 pair, if any."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if any("\ud800" <= c <= "\udfff" for c in item):
                return item
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def parse_json(text: str, source: str | Path, line: int | None = None) -> Any:
    """Parse JSON; a syntax error, nesting too deep for the parser or a string that is not
    valid Unicode (an escaped lone surrogate such as ``"\\ud800"``) raises DataError.

    Args:
        text: the JSON text (a whole file, or one line of a JSON Lines file).
        source: the file, for error messages.
        line: the line ``text`` is; ``None`` for a whole file (a syntax error then names the
            line the parser stopped at).

    Raises:
        DataError: naming the file and line.
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        where = err.lineno if line is None else line
        raise DataError(source, f"invalid JSON ({err.msg.removesuffix(' at')}, column "
                                f"{err.colno})", where) from None
    except RecursionError:
        raise DataError(source, "invalid JSON (nested too deeply for the parser; expected "
                                "records nested a few levels)", line) from None
    except ValueError as err:  # an integer of more digits than Python converts (4300)
        raise DataError(source, f"invalid JSON ({cut(str(err).split(';')[0], 120)})",
                        line) from None
    bad = _lone_surrogate(value)
    if bad is not None:
        char = next(c for c in bad if "\ud800" <= c <= "\udfff")
        raise DataError(source, f"the string {show(bad)} holds a lone surrogate "
                                f"\\u{ord(char):04x}; expected valid Unicode (escape a character "
                                "outside the BMP as a pair, or write it as UTF-8)", line)
    return value


def check_flag(name: str, value: Any) -> bool:
    """A true/false option; anything else raises ConfigError naming it."""
    if not isinstance(value, bool):
        raise ConfigError(f"{name}: expected true or false, got {value!r}")
    return value


def check_index(name: str, value: Any) -> int:
    """A column index option: an integer, or a string holding one (negative counts from the
    end); anything else raises ConfigError naming it."""
    if isinstance(value, str) and value.strip().lstrip("-").isdecimal():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigError(f"{name}: expected a column index (an integer), got {value!r}")
    return value


def check_scheme(scheme: str | None) -> str | None:
    """Resolve a scheme name (``None`` means detect); unknown names raise ConfigError."""
    if scheme is None:
        return None
    if not isinstance(scheme, str):
        raise ConfigError(f"scheme: expected a scheme name ({', '.join(SCHEMES)}), got "
                          f"{scheme!r}")
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
    raise DataError(source, f"tag {brief(sequences[i][j])} has no B-/I- prefix but other tags have "
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
    for i, tags in enumerate(sequences):
        for j, tag in enumerate(tags):
            if len(tag) == 2 and tag[1] in "-_" and tag[0] in "BIESLU":
                raise DataError(source, f"tag {tag!r} has an empty label; expected O or "
                                        "PREFIX-LABEL such as B-PER", line_of(i, j))
    resolved = check_scheme(scheme) or detect_scheme(sequences)
    if scheme is None and resolved == "TOKEN":
        _check_plain(sequences, source, line_of)
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
