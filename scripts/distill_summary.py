"""Issue 25's summary of scripts/distill_conll.sh: per student, its test F1 distilled and
trained plainly, the gap to the teacher, its sentences/s against the teacher's (the bench JSON
of the same run), the teacher's labeling speed and the distillation's time, as Markdown.

Usage: python scripts/distill_summary.py TEACHER_RUN RUNS   (RUNS: NAME-distilled/,
NAME-plain/ and bench.json, as the script writes them)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from seqrep.lab.frontier import bench_speed, speed_assumed

GOAL_GAP, GOAL_SPEEDUP = 1.5, 5.0  # the issue's goal: within 1.5 F1 at 5x the speed or more


def _json(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _setting(run: Path) -> dict[str, Any]:
    """A run's model, r, exit layer, context and unmasking, as the frontier matches them."""
    lab = (_json(run / "run.json") or {}).get("labeler", {})
    return {"model": Path(str(lab.get("model"))).name, "r": lab.get("repetitions"),
            "exit_layer": lab.get("exit_layer"), "context": lab.get("context") or "sentence",
            "unmask": lab.get("unmask") or "none"}


def _speed(run: Path, bench: list[dict[str, Any]]) -> float | None:
    """The bench speed of a run's setting, as the frontier finds it."""
    return bench_speed(_setting(run), bench)


def _f1(metrics: dict[str, Any] | None) -> float | None:
    test = (metrics or {}).get("test") or {}
    return None if test.get("f1") is None else 100 * test["f1"]


def _cell(x: float | None, fmt: str = ".2f") -> str:
    return "-" if x is None else format(x, fmt)


def summary(teacher: Path, runs: Path) -> str:
    bench = (_json(runs / "bench.json") or {}).get("rows", [])
    t_f1, t_speed = _f1(_json(teacher / "metrics.json")), _speed(teacher, bench)
    out = [f"Teacher {teacher}: test F1 {_cell(t_f1)}, {_cell(t_speed, '.1f')} sentences/s.",
           "", "| student | distilled F1 | plain F1 | gap to teacher | sentences/s | x teacher "
           "| teacher labeling (sentences/s) | distillation work (s) | goal |",
           "|---|---|---|---|---|---|---|---|---|"]
    unmasked = []
    for folder in sorted(runs.glob("*-distilled")):
        name = folder.name.removesuffix("-distilled")
        if speed_assumed(_setting(folder), bench):
            unmasked.append(name)
        metrics = _json(folder / "metrics.json")
        d_f1, p_f1 = _f1(metrics), _f1(_json(runs / f"{name}-plain" / "metrics.json"))
        speed = _speed(folder, bench)
        gap = None if d_f1 is None or t_f1 is None else t_f1 - d_f1
        ratio = None if speed is None or not t_speed else speed / t_speed
        figures = (metrics or {}).get("distill") or {}
        goal = "-" if gap is None or ratio is None else \
            "yes" if gap <= GOAL_GAP and ratio >= GOAL_SPEEDUP else "no"
        out.append(f"| {name} | {_cell(d_f1)} | {_cell(p_f1)} | {_cell(gap)} | "
                   f"{_cell(speed, '.1f')} | {_cell(ratio, '.1f')} | "
                   f"{_cell(figures.get('teacher_sentences_per_second'), '.1f')} | "
                   f"{_cell(figures.get('work_seconds'), '.0f')} | {goal} |")
    if unmasked:
        out += ["", f"Not timed unmasked ({', '.join(unmasked)}): the sentences/s is that of "
                "the same model, r and exit layer without unmasking, an assumption (unmasking "
                "changes which positions attend, not the work), not a measurement."]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python scripts/distill_summary.py TEACHER_RUN RUNS")
    print(summary(Path(sys.argv[1]), Path(sys.argv[2])), end="")
