"""The results store: one JSON line per finished run, safe against concurrent writers.

Appends take an exclusive ``flock`` and write a whole line with one ``write`` call; a reader
skips a final line left incomplete by a crash (and says so), so a partial write never
corrupts the records before it.
"""

from __future__ import annotations

import fcntl
import json
import os
import warnings
from pathlib import Path
from typing import Any


def append_record(path: str | Path, record: dict[str, Any]) -> None:
    """Append one record under an exclusive lock."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        # a previous writer that crashed mid-line left no newline: start on a fresh line
        size = os.fstat(fd).st_size
        if size:
            with open(path, "rb") as f:
                f.seek(size - 1)
                if f.read(1) != b"\n":
                    line = b"\n" + line
        os.write(fd, line)
        os.fsync(fd)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """All complete records; malformed lines (a crash mid-write) are skipped with a warning."""
    path = Path(path)
    if not path.exists():
        return []
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            warnings.warn(f"{path}:{n}: skipping an incomplete record", stacklevel=2)
    return out


def environment() -> dict[str, Any]:
    """Package versions, the project's git commit and the machine, for a record."""
    import platform
    import subprocess
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for pkg in ("seqrep", "torch", "transformers", "peft", "seqeval"):
        try:
            versions[pkg] = version(pkg)
        except PackageNotFoundError:
            versions[pkg] = None
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).parent, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {"versions": versions, "git_commit": commit, "cpus": os.cpu_count(),
            "machine": platform.machine(), "python": platform.python_version()}
