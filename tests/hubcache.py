"""A huggingface_hub cache laid out by hand, as ``snapshot_download`` leaves it, for the tests
that load labelers, teachers and base models by Hub name with ``HF_HUB_OFFLINE=1``."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def lay_out_cache(cache: Path, repo_id: str, files: dict[str, bytes], commit: str = COMMIT,
                  ref: str = "main") -> Path:
    """``files`` as snapshot_download leaves them: content in ``blobs/``, the snapshot's
    entries relative links to them, the branch's commit in ``refs/``. Returns the snapshot."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / commit
    for rel, data in files.items():
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        link = snapshot / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / ref).write_text(commit)
    return snapshot


def folder_files(folder: Path) -> dict[str, bytes]:
    """A local folder's files by their path in it: what a repository of it holds (as
    ``seqrep push`` uploads it: without the folder's own list of what seqrep wrote)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name != ".seqrep-files.json"}


def use_cache(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Read the Hub from ``root`` only (``HF_HUB_OFFLINE=1``), in this process and in the
    commands it starts."""
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(root))
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return root


def tree(folder: Path) -> dict[str, str]:
    """Every entry under ``folder`` (links not followed): a file's SHA-256, a link's target,
    a folder's mark; to show that nothing was written or deleted."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder).as_posix()
        out[rel] = (f"-> {os.readlink(p)}" if p.is_symlink() else "<dir>" if p.is_dir()
                    else hashlib.sha256(p.read_bytes()).hexdigest())
    return out
