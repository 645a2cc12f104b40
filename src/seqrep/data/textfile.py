"""Reading a data file as text: UTF-8 with byte-order marks dropped, an error naming the file
(and, for bad UTF-8, the line), and the line breaks every reader splits on.

A path that is not a regular file (a FIFO, or the ``/dev/fd/63`` of a shell's ``<(cat file)``)
can be read only once. :func:`read_start` (what format detection looks at) reads such a pipe
whole and keeps its bytes; the next :func:`read_text` of it takes them, so the reader sees the
input from its first byte.
"""

from __future__ import annotations

import os
import re
import stat
import threading
from pathlib import Path

from seqrep.errors import DataError

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
