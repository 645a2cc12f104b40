"""The benchmark's records, results/peers-SYSTEM.json, and the table made of them.

A record is written whether the system trained or not: a peer that fails to train or to
predict is a ``"status": "failed"`` record naming the stage and the error's line, and a row of
the table, never a system left out. Run with the project's interpreter (records are read
through seqrep's bounded JSON reader).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from peers.common import HarnessError, write_json

COLUMNS = ("System", "What", "F1", "P", "R", "Train min", "Steps", "Status")


def record_path(results_dir: Path, system: str) -> Path:
    return Path(results_dir) / f"peers-{system}.json"


def read_record(path: Path) -> dict[str, Any]:
    """A record, read through seqrep.fileio.read_json (size and depth caps, one line).

    Raises:
        HarnessError: the file is missing, not JSON, or not an object with a system.
    """
    from seqrep.errors import ConfigError
    from seqrep.fileio import read_json

    try:  # (read_json builds its error from one message: DataError takes a source too)
        rec = read_json(path, "a peers record", ConfigError)
    except ConfigError as err:
        raise HarnessError(str(err)) from None
    if not isinstance(rec, dict) or not isinstance(rec.get("system"), str):
        raise HarnessError(f"{path}: not a peers record (expected an object with 'system')")
    return rec


def finished(results_dir: Path, system: str) -> bool:
    """True when the system has an ``ok`` record: a rerun skips it (a failed one runs again)."""
    path = record_path(results_dir, system)
    return path.exists() and read_record(path).get("status") == "ok"


def write_record(results_dir: Path, rec: dict[str, Any]) -> Path:
    path = record_path(results_dir, rec["system"])
    write_json(path, rec)
    return path


def load_records(results_dir: Path) -> list[dict[str, Any]]:
    return [read_record(p) for p in sorted(Path(results_dir).glob("peers-*.json"))
            if p.name != "peers-speed.json"]


def _num(value: Any, digits: int = 2) -> str:
    return f"{value:.{digits}f}" if isinstance(value, int | float) else "-"


def table(records: list[dict[str, Any]]) -> str:
    """A Markdown table: each system's test F1, precision and recall (percent, strict IOB2
    by seqrep score), its training minutes and steps, and its status (a failed system's
    row names the stage and the error)."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for rec in records:
        test, train = rec.get("test") or {}, rec.get("train") or {}
        status = rec.get("status", "?")
        if status == "failed":
            status = f"failed ({rec.get('stage', '?')}): {rec.get('error', '')}"
        seconds = train.get("seconds")
        cells = [rec["system"], rec.get("description", ""), _num(test.get("f1")),
                 _num(test.get("precision")), _num(test.get("recall")),
                 _num(seconds / 60 if isinstance(seconds, int | float) else None, 1),
                 str(train.get("steps", "-")), status]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
