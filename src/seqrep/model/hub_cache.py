"""One repository's folder in huggingface_hub's cache (``models--org--name``), checked with the
one reader of untrusted folders (:mod:`seqrep.files.reader`) before huggingface_hub opens a
file of it, and the snapshot folder it hands back checked after.

huggingface_hub reads ``refs/<branch>`` and ``trees/<commit>.json`` whole, joins a ref's text
to ``snapshots/`` as it finds it, and follows any link: a ref that is a link to ``/dev/zero``
is read until memory runs out, a FIFO blocks for ever, a ref reading ``../../elsewhere`` or a
snapshot, ``snapshots`` or ``blobs`` folder that is a link loads files from outside the cache.
So, before it runs:

- the repository folder and its ``refs``, ``snapshots``, ``blobs`` and ``trees`` folders are
  real folders, not links;
- every ref is a plain file (not a link, FIFO or device) of at most :data:`MAX_REF_BYTES`, and
  offline the requested one is read here, bounded, and must hold a 40-hex commit (huggingface_hub
  is then given the commit, so it reads no ref itself);
- every entry of ``snapshots`` is a real folder; every tree listing a plain file within
  :data:`MAX_TREE_BYTES`;

and after it: the folder it returned is ``<repo>/snapshots/<commit>`` of this cache (by real
path, the cache root's own link allowed), a real folder named by a 40-hex commit, and every
entry of it a file, or a link that resolves inside the repository's real ``blobs/``.
Each refusal is one :class:`~seqrep.errors.ModelError` line naming the repository and entry.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from seqrep.errors import ModelError
from seqrep.files.reader import check_folder, read_bytes

COMMIT = re.compile(r"[0-9a-f]{40}")
MAX_REF_BYTES = 256  # a ref holds one 40-hex commit
MAX_TREE_BYTES = 1 << 24  # a tree listing: about 200 bytes per file of the repository
MAX_REFS = 1000
MAX_SNAPSHOTS = 10_000
FOLDERS = ("refs", "snapshots", "blobs", "trees")


def repo_folder(cache: Path | str, repo_id: str) -> Path:
    """Where huggingface_hub keeps the model repository ``repo_id`` in ``cache``."""
    return Path(cache) / ("models--" + repo_id.replace("/", "--"))


def _real_folder(path: Path, name: str, missing_ok: bool = True) -> bool:
    """Whether ``path`` is there: a real folder, not a link (refused otherwise)."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        if missing_ok:
            return False
        raise ModelError(f"{name}: {path} is missing") from None
    except OSError as err:
        raise ModelError(f"{name}: {path} cannot be read ({err.strerror})") from None
    if stat.S_ISLNK(mode):
        raise ModelError(f"{name}: {path} is a link to {path.resolve()}; huggingface_hub's "
                         f"cache keeps its own folders there (an edited cache: delete the "
                         f"repository's folder and download it again)")
    if not stat.S_ISDIR(mode):
        raise ModelError(f"{name}: {path} is not a folder; expected the cache's own folder")
    return True


def check_repo(cache: Path | str, repo_id: str, name: str) -> None:
    """The repository's folder in ``cache`` as huggingface_hub leaves it (see the module
    docstring), checked before huggingface_hub reads or writes in it; nothing yet is fine."""
    repo = repo_folder(cache, repo_id)
    if not _real_folder(repo, name):
        return
    present = {sub: _real_folder(repo / sub, name) for sub in FOLDERS}
    try:
        if present["refs"]:
            check_folder(repo / "refs", ModelError, links=False, max_entries=MAX_REFS,
                         limit=lambda _: MAX_REF_BYTES)
        if present["trees"]:
            check_folder(repo / "trees", ModelError, links=False, max_depth=0,
                         max_entries=MAX_SNAPSHOTS, limit=lambda _: MAX_TREE_BYTES)
    except ModelError as err:
        raise ModelError(f"{name}: {err}") from None
    if present["snapshots"]:
        with os.scandir(repo / "snapshots") as entries:
            for count, entry in enumerate(entries):
                if count >= MAX_SNAPSHOTS:
                    raise ModelError(f"{name}: {repo / 'snapshots'} holds more than "
                                     f"{MAX_SNAPSHOTS} entries")
                _real_folder(Path(entry.path), name)


def cached_commit(cache: Path | str, repo_id: str, revision: str, name: str) -> str | None:
    """The commit ``revision`` names in the cache (itself when it is one), read from its ref
    bounded and without following a link; None when the cache has no such ref."""
    if COMMIT.fullmatch(revision):
        return revision
    ref = repo_folder(cache, repo_id) / "refs" / revision
    if not (ref.exists() or ref.is_symlink()):
        return None
    try:
        data = read_bytes(ref, MAX_REF_BYTES, ModelError,
                          what="a commit hash (40 hex digits) as huggingface_hub writes it")
    except ModelError as err:
        raise ModelError(f"{name}: {err}") from None
    text = data.decode("ascii", "replace").strip()
    if not COMMIT.fullmatch(text):
        raise ModelError(f"{name}: {ref} holds {text[:60]!r}; expected the 40-hex commit "
                         f"the branch or tag names (an edited cache: download it again)")
    return text


def check_returned(folder: Path | str, cache: Path | str, repo_id: str, commit: str | None,
                   name: str) -> Path:
    """The snapshot folder huggingface_hub returned, checked to be this cache's
    ``<repo>/snapshots/<commit>`` (``commit`` where it was known before), a real folder;
    ``cache`` is the cache root by its real path, as huggingface_hub resolves it."""
    folder = Path(folder)
    repo = repo_folder(cache, repo_id)
    expected = repo / "snapshots" / folder.name
    if folder != expected or not COMMIT.fullmatch(folder.name) or (
            commit is not None and folder.name != commit):
        raise ModelError(f"{name}: huggingface_hub found the snapshot at {folder}; expected "
                         f"{repo / 'snapshots'}/{commit or '<commit>'} (40 hex digits) "
                         f"inside the cache")
    check_repo(cache, repo_id, name)  # what the download wrote, or was there, again
    _real_folder(expected, name, missing_ok=False)
    if folder.resolve() != expected:
        raise ModelError(f"{name}: {folder} is {folder.resolve()}; expected it inside the "
                         f"cache {cache}")
    return folder


def check_entries(snapshot: Path, name: str, *, max_entries: int = 100_000,
                  max_depth: int = 16) -> list[str]:
    """The snapshot's files (relative, with ``/``): each a regular file, or a link resolving
    to one inside its repository's real ``blobs/`` (no device, FIFO, link out, link to a
    folder), the ``blobs`` folder itself no link."""
    repo = snapshot.resolve().parent.parent
    _real_folder(repo / "blobs", name)
    try:
        return check_folder(snapshot, ModelError, within=repo / "blobs",
                            max_entries=max_entries, max_depth=max_depth)
    except ModelError as err:
        raise ModelError(f"{name}: {err}") from None
