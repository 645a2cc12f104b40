"""What the speed run times: one ``Entry`` per labeling (a system at a precision, of its
trained model or of a stand-in), built by speed.py for the peers and by seqrep_runs.py for
seqrep's runs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Entry:
    """One thing timed: a name, the command that labels ``input`` into ``output``."""

    name: str
    command: list[str]
    output: Path
    timing: Path | None
    precision: str
    threads: int = 2
    stdout_json: bool = False  # the labeling seconds are the "seconds" of a JSON on stdout
    train: dict[str, Any] | None = None  # a seqrep run's training record, for the table
    system: str | None = None  # the trained system this labeling is of (default: name)
    stand_in: bool = False  # timed on a stand-in's weights (stand_in_model)
    test: dict[str, Any] | None = None  # a stand-in's F1: its trained model's, at precision


STAND_IN_BUDGET = 1.0  # seconds of training: a stand-in stops after its first step or so
STAND_IN = "~stand-in"  # the suffix of a stand-in's entry beside its trained system's
