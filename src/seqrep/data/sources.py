"""What every reader shares: reading a file as UTF-8, parsing JSON, showing a bad value and
turning tag columns into IOB2.

They raise :class:`seqrep.errors.DataError` naming the file and line, so that a bad file
reaches the user as one readable line.

A path that is not a regular file (a FIFO, or the ``/dev/fd/63`` of a shell's ``<(cat file)``)
can be read only once. :func:`read_start` (what format detection looks at) reads such a pipe
whole and keeps its bytes; the next :func:`read_text` of it takes them, so the reader sees the
input from its first byte.
"""

from __future__ import annotations

import json
import os
import re
import stat
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from seqrep.data.tags import (
    SCHEMES,
    TagError,
    bare_prefix,
    convert_tags,
    detect_scheme,
    label_problem,
    looks_like_tag,
    normalize_scheme,
    split_tag,
)
from seqrep.errors import ConfigError, DataError

# Pipes read ahead by read_start: (device, inode) -> their bytes, taken by the next read.
_READ_AHEAD: dict[tuple[int, int], bytes] = {}
_LOCK = threading.Lock()


def _pipe(path: Path) -> tuple[int, int] | None:
    """``(device, inode)`` of a path that is neither a regular file nor a folder (a FIFO, a
    pipe's ``/dev/fd/N``), which can be read only once; ``None`` for any other path."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
        return None
    return st.st_dev, st.st_ino


def _read_bytes(path: Path) -> bytes:
    """The bytes of ``path``: for a pipe read ahead by :func:`read_start`, the bytes it kept."""
    key = _pipe(path)
    if key is not None:
        with _LOCK:
            if key in _READ_AHEAD:
                return _READ_AHEAD.pop(key)
    return path.read_bytes()


def _read_error(path: Path, err: OSError) -> DataError:
    if isinstance(err, FileNotFoundError):
        return DataError(path, "no such file")
    if isinstance(err, IsADirectoryError):
        return DataError(path, "expected a file, got a directory")
    return DataError(path, f"cannot read file ({err.strerror})")


def read_start(path: str | Path, size: int = 1 << 16) -> bytes:
    """The first ``size`` bytes of a file, or all of a pipe (kept for the next
    :func:`read_text` of it, so that looking at its start loses nothing).

    Raises:
        DataError: the file cannot be read.
    """
    path = Path(path)
    key = _pipe(path)
    try:
        if key is None:
            with path.open("rb") as f:
                return f.read(size)
        with _LOCK:
            if key in _READ_AHEAD:
                return _READ_AHEAD[key]
        data = path.read_bytes()
    except OSError as err:
        raise _read_error(path, err) from None
    with _LOCK:
        _READ_AHEAD[key] = data
    return data


def forget(path: str | Path) -> None:
    """Drop the bytes :func:`read_start` kept for a pipe that no reader took."""
    key = _pipe(Path(path))
    if key is not None:
        with _LOCK:
            _READ_AHEAD.pop(key, None)


def read_text(path: str | Path) -> str:
    """Read a whole file as UTF-8 (leading byte-order marks are dropped). A pipe or FIFO is
    read once: after :func:`read_start`, from the bytes it kept.

    Args:
        path: the file.

    Returns:
        its text.

    Raises:
        DataError: the file is missing, unreadable, not UTF-8 (naming the line) or empty.
    """
    path = Path(path)
    try:
        data = _read_bytes(path)
    except OSError as err:
        raise _read_error(path, err) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise DataError(path, f"not valid UTF-8 (byte 0x{data[err.start]:02x} at offset "
                              f"{err.start}); expected a UTF-8 text file", line) from None
    text = text.lstrip("\ufeff")  # a second mark (a file saved twice with one) is no text
    if not text.strip():
        raise DataError(path, "the file is empty; expected at least one sentence")
    return text


_LINE_END = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """The lines of a data file: ``\\n``, ``\\r\\n`` and a lone ``\\r`` (old Mac files) each end
    one; other Unicode separators (U+2028, U+0085) stay inside their line."""
    return _LINE_END.split(text)


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
