"""The one reader of folders and caches that may come from anyone.

A run folder, an ONNX export, a Hub snapshot and its ``refs``, a ``save_to_disk`` folder: each
is checked here before a library (transformers, huggingface_hub, datasets, pyarrow) opens a
file of it. The rules are the same everywhere:

- no link leaves the folder (or the cache it belongs to): a link is followed only when its
  target lies inside ``within``;
- only regular files and folders: a device (``/dev/zero``), a FIFO or a socket is refused
  before it is opened, so nothing reads forever or blocks;
- sizes are bounded: entries, depth, and each file's bytes where its kind has a limit;
- a small file is read through :func:`read_bytes`: opened without following a link and without
  blocking, checked to be a regular file on the open descriptor, read up to a bound.

Each refusal is one line of the caller's error class naming the entry and what was expected.
"""

from __future__ import annotations

import errno
import mmap
import os
import stat
from collections.abc import Callable
from pathlib import Path

from seqrep.errors import DataError, SeqrepError

MAX_ENTRIES = 100_000
MAX_DEPTH = 16
Limit = Callable[[str], "int | None"]


def refuse(error: type[SeqrepError], path: Path | str, why: str) -> SeqrepError:
    """``error`` naming ``path``: a :class:`DataError` takes the path as its source."""
    if issubclass(error, DataError):
        return error(path, why)
    return error(f"{path}: {why}")


def inside(path: Path, root: Path) -> bool:
    """Whether ``path`` (resolved) lies in ``root`` (resolved) or is it."""
    return path == root or path.is_relative_to(root)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _resolved(path: Path, error: type[SeqrepError]) -> Path:
    """Where a link leads, or one line for a loop (Python raises RuntimeError or OSError)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        raise refuse(error, path, "is a link that loops; expected a file") from None


def check_entry(path: Path, within: Path, error: type[SeqrepError], *,
                folder_ok: bool = True, limit: int | None = None) -> os.stat_result:
    """``path`` is a regular file (or, with ``folder_ok``, a folder), directly or through
    links that stay inside ``within``, of at most ``limit`` bytes; its stat (of the target)."""
    within = within.resolve()
    try:
        st = path.lstat()
    except FileNotFoundError:
        raise refuse(error, path, "missing") from None
    except OSError as err:
        raise refuse(error, path, f"cannot be read ({err.strerror})") from None
    if stat.S_ISLNK(st.st_mode):
        target = _resolved(path, error)
        if not inside(target, within):
            raise refuse(error, path, f"links to {target}, outside {within}; a link may "
                                      f"only point inside the folder")
        try:
            st = target.stat()
        except OSError:
            raise refuse(error, path, "is a broken link") from None
    if stat.S_ISDIR(st.st_mode):
        if not folder_ok:
            raise refuse(error, path, "is a folder; expected a file")
        return st
    if not stat.S_ISREG(st.st_mode):
        raise refuse(error, path, f"is {_kind(st.st_mode)}; expected a regular file")
    if limit is not None and st.st_size > limit:
        raise refuse(error, path, f"{st.st_size} bytes; a file of this kind holds at most "
                                  f"{limit}")
    return st


def check_folder(root: Path, error: type[SeqrepError], *, within: Path | None = None,
                 limit: Limit | None = None, max_entries: int = MAX_ENTRIES,
                 max_depth: int = MAX_DEPTH, links: bool = True) -> list[str]:
    """Walk ``root`` without following links out of ``within`` (default: ``root``) and
    return its files, relative with ``/``. Refused in one line: ``root`` itself a link out
    of ``within``, an entry that is a device, FIFO, socket or broken link, a link leaving
    ``within`` (or any link, without ``links``), more than ``max_entries`` entries or
    ``max_depth`` levels, a file over ``limit(relative name)`` bytes."""
    root = Path(root)
    within = (within or root).resolve()
    if root.is_symlink() and not inside(_resolved(root, error), within):
        raise refuse(error, root, f"links to {root.resolve()}, outside {within}")
    if not root.is_dir():
        raise refuse(error, root, "not a folder")
    files: list[str] = []
    count = 0
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        if depth > max_depth:
            raise refuse(error, folder, f"nested deeper than {max_depth} folders")
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as err:
            raise refuse(error, folder, f"cannot be listed ({err.strerror})") from None
        for entry in entries:
            count += 1
            if count > max_entries:
                raise refuse(error, root, f"holds more than {max_entries} entries")
            path = Path(entry.path)
            rel = path.relative_to(root).as_posix()
            if entry.is_symlink() and not links:
                raise refuse(error, path, "is a link; expected a plain file or folder")
            st = check_entry(path, within, error,
                             limit=limit(rel) if limit is not None else None)
            if stat.S_ISDIR(st.st_mode):
                if entry.is_symlink():
                    raise refuse(error, path, "is a link to a folder; expected a plain "
                                              "folder")
                stack.append((path, depth + 1))
            else:
                files.append(rel)
    return sorted(files)


def read_bytes(path: Path, max_bytes: int, error: type[SeqrepError], *,
               within: Path | None = None, what: str = "the expected file") -> bytes:
    """The bytes of a small file, read bounded: a link is followed only inside ``within``
    (none at all without it), the file is opened non-blocking and checked to be a regular
    file on its descriptor (a FIFO or a device swapped in after a check is still refused),
    and more than ``max_bytes`` is refused without reading the rest."""
    path = Path(path)
    target = path
    if path.is_symlink():
        if within is None:
            raise refuse(error, path, f"is a link; expected {what} as a plain file")
        check_entry(path, within, error, folder_ok=False)
        target = path.resolve()
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(target, flags)
    except FileNotFoundError:
        raise refuse(error, path, f"missing; expected {what}") from None
    except OSError as err:
        why = "is a link" if err.errno == errno.ELOOP else f"cannot be read ({err.strerror})"
        raise refuse(error, path, f"{why}; expected {what}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):  # before fdopen, which refuses a folder with its own error
        os.close(fd)
        raise refuse(error, path, f"is {_kind(mode)}; expected {what}")
    with os.fdopen(fd, "rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise refuse(error, path, f"larger than {max_bytes} bytes; expected {what}")
    return data


def map_file(path: Path, error: type[SeqrepError], *, within: Path | None = None,
             what: str = "the expected file") -> mmap.mmap | bytes:
    """A large file's bytes, mapped read-only (``b""`` when it is empty), for a reader that
    takes a buffer (pyarrow): a link is followed only to a target inside ``within`` (without
    ``within``, anywhere: a path the user named), and the file is opened non-blocking and
    checked to be a regular file on its descriptor, so a FIFO or a device is refused without
    blocking and without being read."""
    path = Path(path)
    if within is not None:
        check_entry(path, within, error, folder_ok=False)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise refuse(error, path, f"missing; expected {what}") from None
    except OSError as err:
        raise refuse(error, path, f"cannot be read ({err.strerror}); expected {what}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise refuse(error, path, f"is {_kind(st.st_mode)}; expected {what}")
        if st.st_size == 0:
            return b""
        try:
            return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as err:
            raise refuse(error, path, f"cannot be mapped ({err}); expected {what}") from None
    finally:
        os.close(fd)
