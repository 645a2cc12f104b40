"""Atomic writes (a file or folder appears complete or not at all) and bounded reads of the
small JSON files seqrep keeps in its folders."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from seqrep.errors import DataError, ModelError, SeqrepError, first_line

# the JSON records of a run, export or cache folder are a few kB (a config with 2,048 labels:
# about 60 kB); a metrics or bench record a few hundred kB at most
MAX_JSON_BYTES = 1 << 22
# no seqrep record nests deeper than about 6; a record this deep was made by hand
MAX_JSON_DEPTH = 64


def umask() -> int:
    """The process's umask (read without changing it)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def share_modes(folder: Path) -> None:
    """Give every file and folder under ``folder`` the mode the umask gives a new one:
    some writers (safetensors) create their files 0600, which would keep the weights of a
    shared run from other accounts while the rest of it is readable."""
    mask = umask()
    for root, dirs, files in os.walk(folder):
        for names, mode in ((dirs, 0o777), (files, 0o666)):
            for name in names:
                path = os.path.join(root, name)
                if not os.path.islink(path):  # a link's target is not ours to change
                    os.chmod(path, mode & ~mask)


@contextlib.contextmanager
def atomic_dir(target: Path, kind: str | None = None) -> Iterator[Path]:
    """Yield a temporary folder beside ``target``; on success it replaces ``target``.

    A crash inside the block leaves ``target`` as it was (the temporary folder is removed).
    Inside a folder seqrep claimed (a run), the new files are listed in its manifest and an
    old ``target`` holding a file seqrep did not write is refused. With ``kind``, ``target``
    is an output of its own (an export, a saved labeler): its manifest is written into it,
    and an old ``target`` is replaced only when seqrep wrote everything in it.
    """
    from seqrep.files import owner

    target = Path(target)
    if kind is not None:
        owner.check_folder(target, True, option="the folder")  # before any work
    target.parent.mkdir(parents=True, exist_ok=True)
    owner.record(target)  # its temporaries (.NAME.tmp-*) are seqrep's from now on
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    os.chmod(tmp, 0o777 & ~umask())  # mkdtemp makes it private; results are for sharing
    try:
        yield tmp
        share_modes(tmp)
        if kind is not None:
            owner.check_folder(target, True, option="the folder")  # nothing new in it
            owner.write_manifest(tmp, kind)
        owner.check_replaceable(target)  # inside an output folder: only what seqrep wrote
        owner.record_tree(tmp, target)
        old = None
        if target.exists():
            old = target.with_name(f".{target.name}.old-{os.getpid()}")
            os.replace(target, old)
        os.replace(tmp, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def write_text(path: Path, text: str) -> None:
    """Write a text file atomically (temporary file + rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~umask())
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        from seqrep.files import owner

        owner.record(path)  # listed before it appears, when inside an output folder
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_json(path: Path, data: Any) -> None:
    """Write JSON atomically, indented, keys in insertion order."""
    write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    """Append one JSON line (a single write, so concurrent appenders do not interleave)."""
    from seqrep.files import owner

    line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    owner.record(path)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0),
                 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def _depth(value: Any) -> int:
    """How many containers deep ``value`` nests (a scalar 0, ``[]`` 1), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack and deepest <= MAX_JSON_DEPTH:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


def read_json(path: Path, what: str, error: type[SeqrepError] = ModelError,
              max_bytes: int = MAX_JSON_BYTES) -> Any:
    """A small JSON file that anyone may have written, read through one bounded path: at most
    ``max_bytes`` (a link to ``/dev/zero`` or a FIFO is refused before it is opened, a huge
    file before it is read whole), nested at most :data:`MAX_JSON_DEPTH`, UTF-8. Any failure
    is one ``error`` line: ``PATH: not WHAT (why)``."""
    path = Path(path)
    try:
        if not path.is_file():
            raise ValueError("not a regular file" if path.exists() or path.is_symlink()
                             else "missing")
        with open(path, "rb") as f:
            raw = f.read(max_bytes + 1)
        if len(raw) > max_bytes:
            raise ValueError(f"larger than {max_bytes} bytes")
        data = json.loads(raw.decode("utf-8"))
        if _depth(data) > MAX_JSON_DEPTH:
            raise ValueError(f"nested deeper than {MAX_JSON_DEPTH}")
        return data
    except (OSError, ValueError, RecursionError) as err:
        if issubclass(error, DataError):  # names its source itself
            raise error(path, f"not {what} ({first_line(err)})") from None
        raise error(f"{path}: not {what} ({first_line(err)})") from None

