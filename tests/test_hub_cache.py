"""A huggingface_hub cache tampered with (issue 55, item 4): anything that runs as the user can
edit ``~/.cache/huggingface/hub``, and huggingface_hub itself reads ``refs/`` and
``trees/`` without a bound and follows whatever links it finds. Every case below ends in one
:class:`~seqrep.errors.ModelError` line or in a correct load of the cache's own snapshot,
never in another exception, an endless read or a hang (each case runs in a thread joined with a
timeout; a thread left blocked on a FIFO is let go afterwards, one reading ``/dev/zero`` meets a
memory cap), for a labeler (:func:`seqrep.model.hub.resolve`) and a base model
(:func:`seqrep.model.hub.base_snapshot`) alike."""

from __future__ import annotations

import errno
import json
import os
import resource
import shutil
import struct
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

import pytest
from hubcache import COMMIT, lay_out_cache, use_cache

REPO = "acme/x"
OTHER = "fedcba9876543210fedcba9876543210fedcba98"
HEADER = json.dumps({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode()
FILES = {"config.json": b"{}",
         "head.safetensors": struct.pack("<Q", len(HEADER)) + HEADER + b"\0\0\0\0",
         "tokenizer/tokenizer_config.json": b"{}",
         "tokenizer/vocab.txt": b"[PAD]\nObama\n"}
TIMEOUT = 60  # seconds a case may take before it counts as a hang (each takes milliseconds)


# ------------------------------------------------------------------------- helpers
def _repo(cache: Path) -> Path:
    return cache / ("models--" + REPO.replace("/", "--"))


def _replace(path: Path, *, link: str | Path | None = None, data: bytes | None = None,
             fifo: bool = False) -> None:
    """``path`` (a file, link or folder) made a link to ``link``, a file of ``data`` or a FIFO."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    if link is not None:
        path.symlink_to(link)
    elif fifo:
        os.mkfifo(path)
    else:
        path.write_bytes(data or b"")


def _labeler_at(folder: Path) -> Path:
    """A copy of the labeler's files as plain files: what an escape would load."""
    for rel, data in FILES.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    return folder


def _blob(snap: Path, rel: str) -> Path:
    return (snap / rel).resolve()


# ------------------------------------------------------------------ the tamperings
# each takes (cache, snapshot, outside) and returns what the refusal names, or None when the
# cache is still the repository's own snapshot (it must load) and optionally a cache root to use
def ref_to_dev_zero(cache, snap, out):
    _replace(_repo(cache) / "refs" / "main", link="/dev/zero")
    return "refs/main"


def ref_fifo(cache, snap, out):
    _replace(_repo(cache) / "refs" / "main", fifo=True)
    return "refs/main"


def ref_huge(cache, snap, out):
    _replace(_repo(cache) / "refs" / "main", data=b"0" * (1 << 20))
    return "refs/main"


def ref_garbage(cache, snap, out):
    _replace(_repo(cache) / "refs" / "main", data=b"not a commit \xff")
    return "refs/main"


def ref_empty(cache, snap, out):
    _replace(_repo(cache) / "refs" / "main", data=b"")
    return "refs/main"


def ref_escapes(cache, snap, out):
    """The ref's text is joined to ``snapshots/`` by huggingface_hub: a path out of it."""
    best = _labeler_at(out / "run" / "best")
    _replace(_repo(cache) / "refs" / "main",
             data=os.path.relpath(best, _repo(cache) / "snapshots").encode())
    return "refs/main"


def ref_linked_outside(cache, snap, out):
    (out / "ref").write_text(COMMIT)
    _replace(_repo(cache) / "refs" / "main", link=out / "ref")
    return "refs/main"


def refs_folder_linked(cache, snap, out):
    (out / "refs").mkdir()
    (out / "refs" / "main").write_text(COMMIT)
    _replace(_repo(cache) / "refs", link=out / "refs")
    return "refs"


def other_ref_fifo(cache, snap, out):
    """A ref nobody asked for is read by no one, but a download of it would be: refused."""
    _replace(_repo(cache) / "refs" / "v1", fifo=True)
    return "refs/v1"


def snapshot_linked(cache, snap, out):
    _replace(snap, link=_labeler_at(out / "snapshot"))
    return COMMIT


def snapshots_linked(cache, snap, out):
    _labeler_at(out / "snapshots" / COMMIT)
    _replace(_repo(cache) / "snapshots", link=out / "snapshots")
    return "snapshots"


def other_snapshot_linked(cache, snap, out):
    """A download of that commit would write its links into the folder it points at."""
    (_repo(cache) / "snapshots" / OTHER).symlink_to(_labeler_at(out / "other"))
    return OTHER


def blobs_linked_to_root(cache, snap, out):
    """``blobs`` -> ``/`` makes every absolute file "inside blobs"; the other entries are
    plain files, as huggingface_hub leaves them where links are not allowed."""
    for rel, data in FILES.items():
        _replace(snap / rel, data=data)
    shutil.rmtree(_repo(cache) / "blobs")
    (_repo(cache) / "blobs").symlink_to("/")
    _replace(snap / "tokenizer" / "vocab.txt", link="../../../blobs/etc/passwd")
    return "blobs"


def blobs_linked_to_a_copy(cache, snap, out):
    shutil.copytree(_repo(cache) / "blobs", out / "blobs")
    _replace(_repo(cache) / "blobs", link=out / "blobs")
    return "blobs"


def entry_linked_outside(cache, snap, out):
    _replace(snap / "tokenizer" / "vocab.txt", link="/etc/passwd")
    return "vocab.txt"


def entry_linked_to_another_repo(cache, snap, out):
    other = lay_out_cache(cache, "acme/other", {"config.json": b'{"other": 1}'})
    _replace(snap / "config.json", link=_blob(other, "config.json"))
    return "config.json"


def entry_to_dev_zero(cache, snap, out):
    _replace(snap / "tokenizer" / "vocab.txt", link="/dev/zero")
    return "vocab.txt"


def entry_fifo(cache, snap, out):
    _replace(snap / "tokenizer" / "vocab.txt", fifo=True)
    return "vocab.txt"


def blob_fifo(cache, snap, out):
    _replace(_blob(snap, "tokenizer/vocab.txt"), fifo=True)
    return "vocab.txt"


def blob_to_dev_zero(cache, snap, out):
    _replace(_blob(snap, "tokenizer/vocab.txt"), link="/dev/zero")
    return "vocab.txt"


def tree_listing_fifo(cache, snap, out):
    """huggingface_hub opens ``trees/<commit>.json`` of a cached snapshot to see if it is whole."""
    _replace(_repo(cache) / "trees" / f"{COMMIT}.json", fifo=True)
    return "trees"


def tree_listing_to_dev_zero(cache, snap, out):
    _replace(_repo(cache) / "trees" / f"{COMMIT}.json", link="/dev/zero")
    return "trees"


def repo_folder_linked(cache, snap, out):
    shutil.move(_repo(cache), out / "repo")
    _repo(cache).symlink_to(out / "repo")
    return "models--acme--x"


def missing_snapshot(cache, snap, out):
    _replace(_repo(cache) / "refs" / "main", data=OTHER.encode())
    return "acme/x"


# --- left as the repository's own snapshot: these load
def untouched(cache, snap, out):
    return None


def ref_ends_in_newline(cache, snap, out):
    _replace(_repo(cache) / "refs" / "main", data=COMMIT.encode() + b"\n")
    return None


def entries_are_plain_files(cache, snap, out):
    for rel, data in FILES.items():
        _replace(snap / rel, data=data)
    return None


def blob_links_to_a_blob(cache, snap, out):
    blob = _blob(snap, "tokenizer/vocab.txt")
    twin = blob.with_name("0" * 64)
    blob.rename(twin)
    blob.symlink_to(twin.name)
    return None


def tree_listing_complete(cache, snap, out):
    listing = {"format_version": 1, "files": {rel: {"size": len(data), "blob_id": "0" * 40}
                                              for rel, data in FILES.items()}}
    (_repo(cache) / "trees").mkdir()
    (_repo(cache) / "trees" / f"{COMMIT}.json").write_text(json.dumps(listing))
    return None


def cache_root_is_a_link(cache, snap, out):
    (out / "hf-link").symlink_to(cache)
    return None, out / "hf-link"


TAMPERINGS: list[Callable] = [
    ref_to_dev_zero, ref_fifo, ref_huge, ref_garbage, ref_empty, ref_escapes,
    ref_linked_outside, refs_folder_linked, other_ref_fifo, snapshot_linked, snapshots_linked,
    other_snapshot_linked, blobs_linked_to_root, blobs_linked_to_a_copy, entry_linked_outside,
    entry_linked_to_another_repo, entry_to_dev_zero, entry_fifo, blob_fifo, blob_to_dev_zero,
    tree_listing_fifo, tree_listing_to_dev_zero, repo_folder_linked, missing_snapshot,
    untouched, ref_ends_in_newline, entries_are_plain_files, blob_links_to_a_blob,
    tree_listing_complete, cache_root_is_a_link]


# ------------------------------------------------------------------------ bounding
def _fifos(root: Path) -> list[Path]:
    import stat

    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            if stat.S_ISFIFO(p.lstat().st_mode):
                found.append(p)
    return found


def _let_go(fifos: list[Path]) -> None:
    """A thread blocked opening a FIFO for reading gets its writer and an end of file."""
    for fifo in fifos:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as err:  # ENXIO: nobody reads it
            assert err.errno in (errno.ENXIO, errno.ENOENT), err
            continue
        os.close(fd)


@contextmanager
def _memory_cap(extra: int = 1 << 30) -> Iterator[None]:
    """Address space capped at what the process maps now plus ``extra``: an endless read
    ends in a MemoryError (a failed case) rather than the machine's memory."""
    status = Path("/proc/self/status").read_text()
    size = int(next(x for x in status.splitlines() if x.startswith("VmSize:")).split()[1]) * 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = size + extra
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def bounded(call: Callable[[], object], fifo_root: Path,
            cap: bool = True) -> tuple[object, BaseException | None]:
    """``call()`` in a thread (with a memory cap): its result or exception; a hang fails
    the test."""
    got: dict[str, object] = {}

    def run() -> None:
        try:
            got["value"] = call()
        except BaseException as err:  # noqa: BLE001 - the test judges every kind
            got["error"] = err

    thread = threading.Thread(target=run, daemon=True)
    with _memory_cap() if cap else nullcontext():
        thread.start()
        thread.join(TIMEOUT)
        hung = thread.is_alive()
        if hung:
            _let_go(_fifos(fifo_root))
            thread.join(TIMEOUT)
    assert not hung, f"{call} still running after {TIMEOUT} s (reading a FIFO or a device?)"
    return got.get("value"), got.get("error")  # type: ignore[return-value]


# --------------------------------------------------------------------------- tests
@pytest.mark.parametrize("kind", ["labeler", "base"])
@pytest.mark.parametrize("tamper", TAMPERINGS, ids=lambda t: t.__name__)
def test_a_tampered_cache_is_one_line_or_its_own_snapshot(tamper, kind, tmp_path,
                                                           monkeypatch) -> None:
    from seqrep.errors import ModelError
    from seqrep.model.hub import base_snapshot, resolve

    cache, out = tmp_path / "hf", tmp_path / "elsewhere"
    out.mkdir()
    snap = lay_out_cache(cache, REPO, FILES)
    named = tamper(cache, snap, out)
    root = cache
    if isinstance(named, tuple):
        named, root = named
    use_cache(root, monkeypatch)
    call = (lambda: resolve(REPO)) if kind == "labeler" else (lambda: base_snapshot(REPO))
    value, error = bounded(call, tmp_path)
    if named is None:
        assert error is None, repr(error)
        folder = value if kind == "labeler" else value[0]
        assert Path(folder).resolve() == (_repo(cache) / "snapshots" / COMMIT).resolve()
        if kind == "base":
            assert value[1:] == (REPO, COMMIT)
        return
    assert isinstance(error, ModelError), f"{type(error).__name__}: {error!r} (got {value})"
    message = str(error)
    assert "\n" not in message and named in message, message


def test_a_safetensors_header_that_is_not_an_object_is_refused(tmp_path, monkeypatch) -> None:
    """A valid 8-byte length before a header that is no JSON object (``[]``): not safetensors."""
    from seqrep.errors import ModelError
    from seqrep.model.hub import resolve

    files = {**FILES, "head.safetensors": struct.pack("<Q", 2) + b"[]"}
    lay_out_cache(tmp_path / "hf", REPO, files)
    use_cache(tmp_path / "hf", monkeypatch)
    with pytest.raises(ModelError, match=r"head\.safetensors is not a safetensors file"):
        resolve(REPO)


def test_a_base_snapshot_named_by_its_folder_is_checked_too(tmp_path, monkeypatch) -> None:
    """A base model given as the path of a snapshot in the cache (a run's recorded base is
    loaded so) meets the same checks: config.json linked out of its repository is refused."""
    from seqrep.errors import ModelError
    from seqrep.model.hub import base_snapshot

    snap = lay_out_cache(tmp_path / "hf", REPO, FILES)
    use_cache(tmp_path / "hf", monkeypatch)
    assert base_snapshot(str(snap)) == (snap, REPO, COMMIT)
    (tmp_path / "config.json").write_bytes(b"{}")
    _replace(snap / "config.json", link=tmp_path / "config.json")
    with pytest.raises(ModelError, match="config.json"):
        base_snapshot(str(snap))


def test_the_cache_is_left_as_it_was(tmp_path, monkeypatch) -> None:
    """Checking reads only: a refused cache keeps every entry (nothing deleted or repaired)."""
    from hubcache import tree

    from seqrep.errors import ModelError
    from seqrep.model.hub import resolve

    snap = lay_out_cache(tmp_path / "hf", REPO, FILES)
    _replace(snap / "tokenizer" / "vocab.txt", link="/etc/passwd")
    use_cache(tmp_path / "hf", monkeypatch)
    before = tree(tmp_path / "hf")
    with pytest.raises(ModelError):
        resolve(REPO)
    assert tree(tmp_path / "hf") == before


def test_a_revision_that_is_a_path_is_refused(tmp_path, monkeypatch) -> None:
    """``--revision`` is looked up under ``refs/``: a path out of it names no revision."""
    from seqrep.errors import ConfigError
    from seqrep.model.hub import resolve

    lay_out_cache(tmp_path / "hf", REPO, FILES)
    (tmp_path / "ref").write_text(COMMIT)
    use_cache(tmp_path / "hf", monkeypatch)
    with pytest.raises(ConfigError, match="no branch, tag or commit"):
        resolve(REPO, revision="../../../ref")

