"""The one owner of what seqrep writes and deletes.

Every output folder seqrep creates (a run, a distillation, an ONNX export, a report, a grid's
runs) holds a manifest, :data:`MANIFEST`, listing every file seqrep wrote there. A file is
listed *before* it is written (:func:`record`, called by :mod:`seqrep.files.atomic`'s
writers for any path inside a claimed folder), so a crash can leave a listed file missing,
never an unlisted file of seqrep's.

``--overwrite`` (and ``overwrite=True`` from Python) removes only files the manifest lists, and
refuses, before anything is touched, a folder that holds anything else, naming the first such
file (:func:`check_folder`). A folder without a manifest is not seqrep's to replace. Bookkeeping
files beside a single output file are created exclusively and never through a link
(:func:`create_exclusive`), so a name already taken by a file seqrep did not write is refused.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from seqrep.errors import SeqrepError

MANIFEST = ".seqrep-files.json"
FORMAT = "seqrep-files"
MAX_MANIFEST = 1 << 24  # a path a line: a run with a long checkpoint history stays far below
MAX_FILES = 200_000

_claimed: dict[Path, tuple[str, set[str]]] = {}  # resolved root -> (kind, listed files)
_lock = threading.RLock()


class NotOwned(SeqrepError):
    """A file or folder seqrep did not write, where it would replace or delete it."""


def _walk(root: Path) -> list[str]:
    """Every non-folder entry under ``root``, relative, links not followed (a link is an
    entry itself, whatever it points to)."""
    found: list[str] = []
    stack = [root]
    while stack:
        folder = stack.pop()
        for entry in os.scandir(folder):
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
            else:
                found.append(Path(entry.path).relative_to(root).as_posix())
            if len(found) > MAX_FILES:
                raise NotOwned(f"{root}: holds more than {MAX_FILES} files; not a folder "
                               f"seqrep wrote")
    return sorted(found)


def read_manifest(root: Path) -> tuple[str, set[str]] | None:
    """``(kind, files)`` of ``root``'s manifest; None when it has none. A manifest that is a
    link, no regular file, too large or not one is refused in one line."""
    from seqrep.files.reader import read_bytes

    path = Path(root) / MANIFEST
    if not (path.exists() or path.is_symlink()):
        return None
    raw = read_bytes(path, MAX_MANIFEST, NotOwned, what="the list of files seqrep wrote")
    try:
        data = json.loads(raw.decode("utf-8"))
        if not (isinstance(data, dict) and data.get("format") == FORMAT
                and isinstance(data.get("kind"), str) and isinstance(data.get("files"), list)
                and all(isinstance(f, str) for f in data["files"])):
            raise ValueError("expected {'format': 'seqrep-files', 'kind', 'files'}")
    except (ValueError, RecursionError) as err:
        raise NotOwned(f"{path}: not seqrep's list of the files it wrote ({err})") from None
    bad = next((f for f in data["files"] if not _plain_relative(f)), None)
    if bad is not None:  # a list naming ../x or /x is no list of this folder's files
        raise NotOwned(f"{path}: names {bad[:80]!r}, not a path inside its folder; not "
                       f"seqrep's list of the files it wrote")
    return data["kind"], set(data["files"])


def _plain_relative(rel: str) -> bool:
    parts = rel[:-1].split("/") if rel.endswith("/") else rel.split("/")  # a folder: name/
    return bool(rel) and not rel.startswith("/") and all(p not in ("", ".", "..")
                                                         for p in parts)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_list(root: Path, kind: str, files: set[str]) -> None:
    """Write ``root``'s manifest listing ``files`` (a writer that keeps its own list of names
    in a folder it shares with the user's files: ``seqrep report --out``)."""
    _write_manifest(Path(root), kind, set(files))


def _write_manifest(root: Path, kind: str, files: set[str]) -> None:
    """The manifest, replaced atomically (a temporary file, then a rename: a link in its
    place is replaced, never followed)."""
    text = json.dumps({"format": FORMAT, "kind": kind, "files": sorted(files)}, indent=1)
    fd, tmp = tempfile.mkstemp(prefix=f"{MANIFEST}.", dir=root)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # shared as the rest of the folder
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text + "\n")
        os.replace(tmp, root / MANIFEST)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_manifest(folder: Path, kind: str) -> None:
    """List every file now in ``folder`` (a finished folder about to be renamed into place)."""
    _write_manifest(Path(folder), kind, set(_walk(Path(folder))) - {MANIFEST})


def unowned(root: Path) -> str | None:
    """The first file under ``root`` that seqrep did not write (its manifest does not list
    it), or None. A folder without a manifest: its first file (an empty one: None)."""
    root = Path(root)
    manifest = read_manifest(root)
    files = set() if manifest is None else manifest[1]
    for rel in _walk(root):
        if rel == MANIFEST or listed(rel, files):
            continue
        return rel
    return None


def listed(rel: str, files: set[str]) -> bool:
    """Whether ``rel`` is seqrep's: listed itself, inside a folder listed whole (``name/``),
    or a temporary of a listed name (:func:`_own_temporary`)."""
    if rel in files or rel + "/" in files or _own_temporary(rel, files):
        return True
    parts = rel.split("/")
    return any("/".join(parts[:i]) + "/" in files for i in range(1, len(parts)))


def _own_temporary(rel: str, files: set[str]) -> bool:
    """A name inside a temporary of seqrep's atomic writers beside a listed file or folder
    (``.NAME.tmp-*``, ``.NAME.old-*``, at any depth) or of the manifest itself."""
    parts = rel.split("/")
    if len(parts) == 1 and parts[0].startswith(MANIFEST + "."):
        return True
    for i, part in enumerate(parts):
        if not part.startswith("."):
            continue
        for marker in (".tmp-", ".old-"):
            if marker in part:
                base = "/".join([*parts[:i], part[1:].split(marker, 1)[0]])
                if base in files or any(f.startswith(base + "/") for f in files):
                    return True
    return False


def check_folder(root: Path, overwrite: bool, option: str = "--output",
                 what: str = "folder", hint: str = "--overwrite") -> None:
    """Refuse, before anything is touched, to write into ``root`` what would lose a file:
    a link or a file in its place; a non-empty folder without ``overwrite``; with it, a
    folder holding any file seqrep did not write there (named). ``option`` and ``hint`` are
    how the caller names the path and the overwrite switch (``output=``, ``overwrite=True``
    from Python)."""
    root = Path(root)
    if root.is_symlink():
        raise NotOwned(f"{option} {root} is a link; expected a {what} path (seqrep does not "
                       f"write through links)")
    if root.exists() and not root.is_dir():
        raise NotOwned(f"{option} {root} is a file; expected a {what} path")
    if not root.exists() or not any(root.iterdir()):
        return
    if not overwrite:
        raise NotOwned(f"{option} {root} exists and is not empty; pass {hint} to replace "
                       f"it, or choose another path")
    if read_manifest(root) is None:
        raise NotOwned(f"{option} {root} has no {MANIFEST}, so seqrep did not write it (or an "
                       f"older version did); {hint} removes only what seqrep wrote: "
                       f"remove the folder yourself or choose another path")
    first = unowned(root)
    if first is not None:
        raise NotOwned(f"{option} {root}: {first} was not written by seqrep; {hint} "
                       f"removes only what seqrep wrote, so move it away or choose another "
                       f"path")


def remove(root: Path) -> None:
    """Delete a folder seqrep wrote: every file its manifest lists (a link is removed, never
    followed), then the folders left empty. Checked first (:func:`check_folder`): a folder
    holding anything else is refused and nothing is deleted."""
    root = Path(root)
    if not root.exists():
        return
    check_folder(root, True)
    manifest = read_manifest(root)
    files = set() if manifest is None else manifest[1]
    for rel in _walk(root):
        if rel == MANIFEST or listed(rel, files):
            (root / rel).unlink(missing_ok=True)
    for folder, _dirs, _files in sorted(os.walk(root, topdown=False), key=lambda x: -len(x[0])):
        if Path(folder) != root:
            try:
                os.rmdir(folder)
            except OSError:
                pass
    with _lock:
        _claimed.pop(root.resolve(), None)
    try:
        os.rmdir(root)
    except OSError:
        pass


def claim(root: Path, kind: str) -> Path:
    """Create ``root`` (or take the one a resumed run left, manifest and all) as an output
    folder of seqrep's: from now on every file written under it through :mod:`seqrep.files.atomic`
    is listed in its manifest before it is written."""
    root = Path(root)
    if root.is_symlink():
        raise NotOwned(f"{root} is a link; seqrep does not write through links")
    record(root, folder=True)  # inside another claimed folder: that one owns it whole
    root.mkdir(parents=True, exist_ok=True)
    listed = read_manifest(root)
    files = set() if listed is None else listed[1]
    with _lock:
        _claimed[root.resolve()] = (kind, files)
        _write_manifest(root, kind, files)
    return root


def release(root: Path) -> None:
    """Stop listing writes under ``root`` (the manifest stays)."""
    with _lock:
        _claimed.pop(Path(root).resolve(), None)


def _owner_of(path: Path) -> tuple[Path, str] | None:
    path = Path(os.path.abspath(path))
    parent = path.parent.resolve() / path.name
    for root in sorted(_claimed, key=lambda r: -len(r.parts)):  # the innermost claim
        if parent.is_relative_to(root) and parent != root:
            return root, parent.relative_to(root).as_posix()
    return None


def _list(path: Path, names: Callable[[str], set[str]]) -> None:
    """Add ``names(rel)`` to the manifest of the claimed folder holding ``path`` (``rel``:
    its path there), written only when something is new; nothing outside a claimed folder."""
    with _lock:
        found = _owner_of(path)
        if found is None:
            return
        root, rel = found
        kind, files = _claimed[root]
        new = names(rel)
        if not new <= files:
            files |= new
            _write_manifest(root, kind, files)


def record(path: Path, *, folder: bool = False) -> None:
    """List ``path`` (inside a claimed folder) in that folder's manifest before it is
    written; with ``folder``, as a folder seqrep owns whole (``name/``: an old run moved
    aside). Nothing outside a claimed folder."""
    _list(path, lambda rel: {rel + "/" if folder else rel})


def record_tree(tmp: Path, target: Path) -> None:
    """List every file of the finished folder ``tmp`` under the name ``target`` it is about
    to take (an atomic folder write), before the rename."""
    _list(target, lambda rel: {f"{rel}/{f}" for f in _walk(Path(tmp))})


def check_replaceable(target: Path) -> None:
    """Before an atomic folder write replaces ``target`` inside a claimed folder: refuse when
    ``target`` holds a file seqrep did not write (a user's note in ``best/``)."""
    with _lock:
        found = _owner_of(target)
        if found is None or not Path(target).exists():
            return
        root, rel = found
        files = _claimed[root][1]
    for sub in _walk(Path(target)) if Path(target).is_dir() else [""]:
        name = f"{rel}/{sub}" if sub else rel
        if not listed(name, files):
            raise NotOwned(f"{Path(root) / name} was not written by seqrep; it would be "
                           f"replaced with {target}, so move it away first")


def create_exclusive(path: Path, what: str = "a file seqrep keeps") -> Any:
    """Open ``path`` for writing only when no file, folder or link has that name (never
    through a link): a name already taken is one line."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except FileExistsError:
        raise NotOwned(f"{path} exists and seqrep did not write it as {what}; move it away "
                       f"or choose another output path") from None
    return os.fdopen(fd, "wb")


def open_own(path: Path, what: str) -> Any:
    """Open for appending a bookkeeping file seqrep created: never through a link, and only a
    regular file."""
    flags = os.O_WRONLY | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        raise NotOwned(f"{path}: cannot be opened as {what} ({err.strerror}); move it away "
                       f"or start over with --overwrite") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotOwned(f"{path} is not a regular file; expected {what}")
    return os.fdopen(fd, "ab")


def identity(path: Path) -> list[int] | None:
    """``[device, inode]`` of a file (not following a link), to recognise later the very file
    seqrep created; None when there is none."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino]


def temporary(path: Path) -> Path:
    """A new, empty file beside ``path`` under a fresh name (created exclusively, so never a
    link or a user's file), for a library that writes by name; rename it onto ``path``."""
    record(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{Path(path).name}.tmp-", dir=Path(path).parent)
    os.close(fd)
    return Path(tmp)
