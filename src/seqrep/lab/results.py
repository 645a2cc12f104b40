"""The results store: one JSON line per finished run, safe against concurrent writers.

Appends take an exclusive ``flock`` and write a whole line with one ``write`` call, starting on
a fresh line if a crashed writer left the file without a final newline. The reader works on bytes:
it splits on ``b"\n"`` only (``json.dumps`` escapes ``\n`` and ``\r`` inside strings, but with
``ensure_ascii=False`` writes U+0085, U+2028 and U+2029 raw, which ``str.splitlines`` would take
for line breaks) and decodes each line on its own, so a line cut in the middle of a multi-byte
character by a killed writer loses that record only, never the ones before or after it.
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
    """All complete records of a results store, in file order.

    A line that is not UTF-8, not JSON or not a JSON object (a writer killed mid-record) is
    skipped; if any are, one warning says how many and where the first one is. Blank lines are
    ignored, and a complete last line without a newline is kept.

    Args:
        path: the store; a missing file has no records.

    Returns:
        the records, as dicts.
    """
    path = Path(path)
    if not path.exists():
        return []
    data = path.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):  # a byte-order mark from an editor
        data = data[3:]
    out: list[dict[str, Any]] = []
    skipped: list[int] = []
    for n, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            record = None
        if isinstance(record, dict):
            out.append(record)
        else:
            skipped.append(n)
    if skipped:
        lines = "1 line" if len(skipped) == 1 else f"{len(skipped)} lines"
        warnings.warn(f"{path}: skipped {lines} holding no complete record (an incomplete "
                      f"record from a writer killed mid-write?); the first is line {skipped[0]}",
                      stacklevel=2)
    return out


def run_record(folder: str | Path) -> dict[str, Any]:
    """A finished ``seqrep train`` run folder as a store record (``run.json`` and
    ``metrics.json``), so a run made outside a grid (the CPU recipes) joins a report.

    The configuration is the one the run recorded; a run whose exit layer was picked by
    ``--exit-layer auto`` (its ``run.json`` holds the sweep) reads as ``auto``, as a grid
    records it, with the chosen layer in its metrics.

    Raises:
        ConfigError: the folder holds no finished run (named, with what is missing).
    """
    from seqrep.errors import ConfigError
    from seqrep.lab.identity import config_hash

    folder = Path(folder)
    try:
        run = json.loads((folder / "run.json").read_text(encoding="utf-8"))
        metrics = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
        config = {"labeler": dict(run["labeler"]), "train": dict(run["train"])}
    except FileNotFoundError as err:
        raise ConfigError(f"{folder}: not a finished run ({Path(err.filename).name} is "
                          f"missing); expected a results store (JSONL) or a run folder") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as err:
        raise ConfigError(f"{folder}: run.json / metrics.json unreadable ({err})") from None
    if metrics.get("status") != "finished":
        raise ConfigError(f"{folder}: the run has not finished (status "
                          f"{metrics.get('status')!r})")
    if "exit_search" in run:
        config["labeler"]["exit_layer"] = "auto"
    return {"run_id": config_hash(config), "name": folder.name, "config": config,
            "metrics": metrics, "source": str(folder)}


def read_sources(paths: list[str | Path]) -> list[dict[str, Any]]:
    """The records of results stores (JSONL files) and run folders, in the order given."""
    out: list[dict[str, Any]] = []
    for path in paths:
        out += [run_record(path)] if Path(path).is_dir() else read_records(path)
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
