"""Issue 25's summary of scripts/distill_conll.sh: per student, its test F1 distilled and
trained plainly, the gap to the teacher, its sentences/s against the teacher's (the bench JSON
of the same run), the teacher's labeling speed and the distillation's time, as Markdown.

Usage: python scripts/distill_summary.py TEACHER_RUN RUNS   (RUNS: NAME-distilled/,
NAME-plain/ and bench.json, as the script writes them; NAME-distilled-sK/ and NAME-plain-sK/
for the script's SEEDS: a student's seeds are averaged, and distilled minus plain is paired
by seed, with its 95 % CI where there are two seeds or more)
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from seqrep.lab.frontier import bench_speed, speed_assumed
from seqrep.lab.stats import summarize
from seqrep.train.teacher_cache import teacher_key

GOAL_GAP, GOAL_SPEEDUP = 1.5, 5.0  # the issue's goal: within 1.5 F1 at 5x the speed or more
FOLDER = re.compile(r"(?P<name>.+)-(?P<kind>distilled|plain)(?:-s(?P<seed>\d+))?")


def _json(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _setting(run: Path) -> dict[str, Any]:
    """A run's model, r, exit layer, context (and its window) and unmasking, as the frontier
    matches them."""
    lab = (_json(run / "run.json") or {}).get("labeler", {})
    return {"model": Path(str(lab.get("model"))).name, "r": lab.get("repetitions"),
            "exit_layer": lab.get("exit_layer"), "context": lab.get("context") or "sentence",
            "context_tokens": lab.get("context_tokens"), "unmask": lab.get("unmask") or "none"}


def _speed(run: Path, bench: list[dict[str, Any]]) -> float | None:
    """The bench speed of a run's setting, as the frontier finds it."""
    return bench_speed(_setting(run), bench)


def _f1(metrics: dict[str, Any] | None) -> float | None:
    test = (metrics or {}).get("test") or {}
    return None if test.get("f1") is None else 100 * test["f1"]


def _cell(x: float | None, fmt: str = ".2f") -> str:
    return "-" if x is None else format(x, fmt)


def _folders(runs: Path) -> dict[str, dict[str, dict[str, Path]]]:
    """Student name -> ``distilled`` / ``plain`` -> seed label ("" for the recipe's default
    seed, else the folder's ``-sK``) -> run folder."""
    out: dict[str, dict[str, dict[str, Path]]] = {}
    for folder in sorted(runs.iterdir()) if runs.is_dir() else []:
        m = FOLDER.fullmatch(folder.name)
        if m and folder.is_dir():
            kinds = out.setdefault(m["name"], {"distilled": {}, "plain": {}})
            kinds[m["kind"]][m["seed"] or ""] = folder
    return {name: kinds for name, kinds in out.items() if kinds["distilled"]}


def _mean_cell(values: list[float]) -> str:
    if not values:
        return "-"
    s = summarize(values)
    return f"{s['mean']:.2f}" + ("" if s["std"] is None else f" ± {s['std']:.2f}")


def _diff_cell(diffs: list[float]) -> str:
    if not diffs:
        return "-"
    s = summarize(diffs)
    ci = "" if s["ci95"] is None else \
        f" [{s['mean'] - s['ci95']:+.2f}, {s['mean'] + s['ci95']:+.2f}]"
    return f"{s['mean']:+.2f}{ci}"


def _one_teacher_model(teacher: Path, runs: Path) -> None:
    """Every distilled student here learned from one model: the teacher key each run.json
    keeps (runs made before keys were kept have none) is the same, and the model in the
    teacher's folder now (where it holds one) is that one; else ValueError naming a folder."""
    # keys of one kind are compared: runs before 2026-12-04 kept a key of the files' sizes
    # and times, later ones ("teacher_key_kind": "content") a hash of their bytes
    first: dict[str, tuple[str, str]] = {}
    if (teacher / "best" / "config.json").is_file():
        first["content"] = (teacher_key(teacher), f"the model now in {teacher}")
    for kinds in _folders(runs).values():
        for folder in kinds["distilled"].values():
            record = (_json(folder / "run.json") or {}).get("distill") or {}
            key, kind = record.get("teacher_key"), record.get("teacher_key_kind", "times")
            if key is None:
                continue
            if kind not in first:
                first[kind] = (key, str(folder))
            elif key != first[kind][0]:
                raise ValueError(f"{folder}: distilled from another teacher model (key "
                                 f"{key[:8]}) than {first[kind][1]} ({first[kind][0][:8]}); "
                                 f"expected one teacher's students in {runs}, so keep each "
                                 f"teacher's in a folder of its own")


def summary(teacher: Path, runs: Path) -> str:
    _one_teacher_model(teacher, runs)
    bench = (_json(runs / "bench.json") or {}).get("rows", [])
    t_f1, t_speed = _f1(_json(teacher / "metrics.json")), _speed(teacher, bench)
    out = [f"Teacher {teacher}: test F1 {_cell(t_f1)}, {_cell(t_speed, '.1f')} sentences/s.",
           "", "| student | seeds | distilled F1 | plain F1 | distilled minus plain, by seed "
           "| gap to teacher | sentences/s | x teacher | teacher labeling (sentences/s) "
           "| distillation work (s) | goal |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    unmasked = []
    for name, kinds in sorted(_folders(runs).items()):
        first = next(iter(kinds["distilled"].values()))
        metrics = {seed: _json(f / "metrics.json") for seed, f in kinds["distilled"].items()}
        distilled = {seed: f1 for seed, m in metrics.items() if (f1 := _f1(m)) is not None}
        plain = {seed: f1 for seed, f in kinds["plain"].items()
                 if (f1 := _f1(_json(f / "metrics.json"))) is not None}
        d_mean = summarize(distilled.values())["mean"]
        speed = _speed(first, bench)
        if speed is not None and speed_assumed(_setting(first), bench):
            unmasked.append(name)
        gap = None if d_mean is None or t_f1 is None else t_f1 - d_mean
        ratio = None if speed is None or not t_speed else speed / t_speed
        labeling = [x for m in metrics.values()
                    if (x := ((m or {}).get("distill") or {}).get("teacher_sentences_per_second"))]
        work = [x for m in metrics.values()
                if (x := ((m or {}).get("distill") or {}).get("work_seconds"))]
        goal = "-" if gap is None or ratio is None else \
            "yes" if gap <= GOAL_GAP and ratio >= GOAL_SPEEDUP else "no"
        both = sorted(set(distilled) & set(plain))
        out.append(f"| {name} | {len(distilled)} | {_mean_cell(list(distilled.values()))} | "
                   f"{_mean_cell(list(plain.values()))} | "
                   f"{_diff_cell([distilled[k] - plain[k] for k in both])} | {_cell(gap)} | "
                   f"{_cell(speed, '.1f')} | {_cell(ratio, '.1f')} | "
                   f"{_cell(summarize(labeling)['mean'], '.1f')} | "
                   f"{_cell(summarize(work)['mean'], '.0f')} | {goal} |")
    if unmasked:
        out += ["", f"Not timed unmasked ({', '.join(unmasked)}): the sentences/s is that of "
                "the same model, r and exit layer without unmasking, an assumption (unmasking "
                "changes which positions attend, not the work), not a measurement."]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python scripts/distill_summary.py TEACHER_RUN RUNS")
    try:
        print(summary(Path(sys.argv[1]), Path(sys.argv[2])), end="")
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
