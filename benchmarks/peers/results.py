"""The benchmark's records, results/peers-SYSTEM.json, and the table made of them.

A record is written whether the system trained or not: a peer that fails to train or to
predict is a ``"status": "failed"`` record naming the stage and the error's line, and a row of
the table, never a system left out. Run with the project's interpreter (records are read
through seqrep's bounded JSON reader).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: the harness's package lies one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from peers.common import HarnessError, fail, read_json, write_json, write_text

COLUMNS = ("System", "What", "F1", "P", "R", "Train min", "Steps", "Status")


def record_path(results_dir: Path, system: str) -> Path:
    return Path(results_dir) / f"peers-{system}.json"


def read_record(path: Path) -> dict[str, Any]:
    """A record, read through seqrep.files.atomic.read_json (size and depth caps, one line).

    Raises:
        HarnessError: the file is missing, not JSON, or not an object with a system.
    """
    rec = read_json(path, "a peers record")
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
    """The records of the systems the harness knows, in its table's order: other
    ``peers-*.json`` files there (speed runs saved under other names) are not records."""
    from peers.systems import SYSTEMS

    paths = (record_path(results_dir, name) for name in SYSTEMS)
    return [read_record(p) for p in paths if p.exists()]


def _num(value: Any, digits: int = 2) -> str:
    """``value`` with ``digits`` decimals, halves rounded up as the headline rounds them
    (472.5 words/s is 473 on both), or ``-``."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return "-"
    from decimal import ROUND_HALF_UP, Decimal

    return f"{Decimal(repr(value)).quantize(Decimal(1).scaleb(-digits), ROUND_HALF_UP)}"


def _failure(rec: dict[str, Any]) -> str:
    """A failed record's status cell: the stage and the error's line."""
    return f"failed ({rec.get('stage', '?')}): {rec.get('error', '')}"


def table(records: list[dict[str, Any]]) -> str:
    """A Markdown table: each system's test F1, precision and recall (percent, strict IOB2
    by seqrep score), its training minutes and steps, and its status (a failed system's
    row names the stage and the error)."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for rec in records:
        test, train = rec.get("test") or {}, rec.get("train") or {}
        status = _failure(rec) if rec.get("status") == "failed" else rec.get("status", "?")
        seconds = train.get("seconds")
        cells = [rec["system"], rec.get("description", ""), _num(test.get("f1")),
                 _num(test.get("precision")), _num(test.get("recall")),
                 _num(seconds / 60 if isinstance(seconds, int | float) else None, 1),
                 str(train.get("steps", "-")), status]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# ---- the combined table, the plot and the docs page (issue 42, item 4) ---------------------

SPEED_FILE = "peers-speed.json"
MEMORY_FILE = "peers-memory.json"  # a later pass's own peaks, for a speed run without them
FLOOR = 30.0  # F1 points under the best row past which the plot lists a row without drawing it
TARGET_F1, TARGET_WORDS_PER_S = 91.6, 700.0  # spaCy's transformer pipeline's published F1
ROW_COLUMNS = ("System", "Precision", "Test F1", "Words/s", "Sentences/s", "Peak MiB",
               "Training min", "Steps", "Status")


def rows(records: list[dict[str, Any]], speed: dict[str, Any] | None,
         memory: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per labeling the speed run timed (a system at one precision), then one per
    trained or failed system it did not time. A timed row's F1 is the one scored on that
    labeling's own predictions (so at its precision); an untimed row's is its record's.

    Peak memory is the speed run's where its record says the peaks are the labelings' own
    (``peak_memory``, speed.py since peak.py); for an older speed run it comes from
    ``memory``, a later run that measured them so, and is left out (None) where neither has
    it: an older run's child counted the harness's own resident size in its peak."""
    by_system = {rec["system"]: rec for rec in records}
    peaks = speed if (speed or {}).get("peak_memory") else memory \
        if (memory or {}).get("peak_memory") else None
    peak_rows = (peaks or {}).get("systems") or {}
    out: list[dict[str, Any]] = []
    timed: set[str] = set()
    done, repeats = (speed or {}).get("rounds_completed"), (speed or {}).get("repeats")
    partial = f" ({done} of {repeats} rounds)" if done is not None and done != repeats else ""
    for name, got in ((speed or {}).get("systems") or {}).items():
        system = got.get("system", name)
        timed.add(system)
        rec = by_system.get(system, {})
        train = got.get("train") or rec.get("train") or {}
        test = got.get("test") or {}
        ok = got.get("status") == "ok" and isinstance(test.get("f1"), int | float)
        status = "ok, timed on a stand-in" if got.get("weights") == "stand-in" else "ok"
        out.append({
            "name": name, "system": system, "precision": got.get("precision", "-"),
            "f1": test.get("f1") if ok else None, "words_per_s": got.get("words_per_s"),
            "sentences_per_s": got.get("sentences_per_s"),
            "peak_rss_mib": (peak_rows.get(name) or {}).get("peak_rss_mib"),
            "train_s": train.get("seconds"), "steps": train.get("steps"),
            "seqrep": system not in by_system,
            "status": status + partial if ok
            else f"failed (speed): {got.get('error') or test.get('error')}"})
    for rec in records:
        if rec["system"] in timed:
            continue
        train, test = rec.get("train") or {}, rec.get("test") or {}
        status = _failure(rec) if rec.get("status") == "failed" else "not timed"
        out.append({"name": rec["system"], "system": rec["system"], "precision": "fp32",
                    "f1": test.get("f1"), "words_per_s": None, "sentences_per_s": None,
                    "peak_rss_mib": None, "train_s": train.get("seconds"),
                    "steps": train.get("steps"), "seqrep": False, "status": status})
    return out


def row_table(table_rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table (F1 in percent to two digits, training in minutes)."""
    lines = ["| " + " | ".join(ROW_COLUMNS) + " |", "|" + "---|" * len(ROW_COLUMNS)]
    for r in table_rows:
        minutes = r["train_s"] / 60 if isinstance(r["train_s"], int | float) else None
        cells = [f"**{r['name']}**" if r["seqrep"] else r["name"], r["precision"],
                 _num(r["f1"]), _num(r["words_per_s"], 0), _num(r["sentences_per_s"], 1),
                 _num(r["peak_rss_mib"], 0), _num(minutes, 1),
                 str(r["steps"]) if r["steps"] is not None else "-", r["status"]]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot_points(table_rows: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any], bool]]:
    """The plot's points: each timed row with an F1, numbered from 1 by F1 (highest first,
    then the slower first), and whether it is drawn (False: more than ``FLOOR`` points under
    the best row, listed in the legend only)."""
    points = sorted((r for r in table_rows if r["f1"] is not None and r["words_per_s"]),
                    key=lambda r: (-r["f1"], r["words_per_s"]))
    floor = max((r["f1"] for r in points), default=0) - FLOOR
    return [(i, r, r["f1"] >= floor) for i, r in enumerate(points, 1)]


def plot(table_rows: list[dict[str, Any]], path: Path) -> int:
    """F1 against words/s, one numbered point per timed row with an F1 (seqrep's in another
    marker), named in a legend by its number, so that no two names overlap; a row far below
    the others (more than ``FLOOR`` points under the best) is listed in the legend but left
    off the axes, which would otherwise squeeze every other point together. The issue's
    target (91.6 F1, 700 words/s) is dashed. Returns the number of points listed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = plot_points(table_rows)
    fig, ax = plt.subplots(figsize=(11, 5.5))
    for i, r, drawn in points:
        name = r["name"] if r["name"].endswith(r["precision"]) else \
            f"{r['name']} ({r['precision']})"
        label = f"{i}  {name}: {r['f1']:.2f} F1, {r['words_per_s']:,.0f} words/s"
        style = dict(marker="*" if r["seqrep"] else "o", s=140 if r["seqrep"] else 50,
                     color="C3" if r["seqrep"] else "C0")
        if not drawn:
            ax.scatter([], [], label=label + " (below the axes)", **style)
            continue
        ax.scatter(r["words_per_s"], r["f1"], label=label, **style)
        ax.annotate(str(i), (r["words_per_s"], r["f1"]), textcoords="offset points",
                    xytext=(5, 3), fontsize=8)
    ax.margins(x=0.15, y=0.08)
    ax.axhline(TARGET_F1, color="grey", linestyle="--", linewidth=0.8)
    ax.axvline(TARGET_WORDS_PER_S, color="grey", linestyle="--", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("words/s on the CoNLL-2003 test set (log scale)")
    ax.set_ylabel("test F1 (strict IOB2, seqrep score)")
    ax.set_title("CoNLL-2003: accuracy against speed, same machine, same threads")
    if points:
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=7, frameon=False,
                  handletextpad=0.3, borderaxespad=0)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return len(points)


def load_speed(results_dir: Path, name: str = SPEED_FILE) -> dict[str, Any] | None:
    """results/peers-speed.json (or another speed-run record there), None before it runs."""
    path = Path(results_dir) / name
    if not path.exists():
        return None
    got = read_json(path, "the peers speed record")
    if not isinstance(got, dict) or not isinstance(got.get("systems"), dict):
        raise HarnessError(f"{path}: not a peers speed record (expected 'systems')")
    return got


def main(argv: list[str] | None = None) -> None:
    """``python benchmarks/peers/results.py [--results DIR] [--page FILE] [--plot FILE]``:
    print the combined table; with --page, write it into that Markdown file between the
    markers ``<!-- peers-table -->`` and ``<!-- /peers-table -->`` (the rest of the page is
    prose kept by hand), with --plot the figure."""
    import argparse

    repo = Path(__file__).resolve().parents[2]
    p = argparse.ArgumentParser(description="the peers benchmark's table and plot")
    p.add_argument("--results", type=Path, default=repo / "results")
    p.add_argument("--page", type=Path, default=None)
    p.add_argument("--plot", type=Path, default=None)
    args = p.parse_args(argv)
    try:
        made = rows(load_records(args.results), load_speed(args.results),
                    load_speed(args.results, MEMORY_FILE))
        text = row_table(made)
        points = plot(made, args.plot) if args.plot is not None else 0
        if args.page is not None:
            figure = ""
            if points:  # the figure, linked from the page's folder
                import os

                rel = os.path.relpath(args.plot.resolve(), args.page.resolve().parent)
                figure = f"\n![test F1 against words/s]({Path(rel).as_posix()})\n"
            fill_page(args.page, text + figure)
        print(text, end="")
    except HarnessError as err:
        fail(err)


BEGIN, END = "<!-- peers-table -->", "<!-- /peers-table -->"


def fill_page(page: Path, text: str, markers: tuple[str, str] = (BEGIN, END),
              option: str = "--page ") -> None:
    """Replace what lies between the page's two ``markers`` by ``text``, atomically (a blank
    line either side: Markdown would otherwise read a table as part of the comment's HTML
    block). ``option``: what names the page in an error (the command's option).

    Raises:
        HarnessError: the page is missing or lacks the markers (nothing is written).
    """
    begin, end_marker = markers
    if not Path(page).is_file():
        raise HarnessError(f"{option}{page}: no such file")
    old = Path(page).read_text(encoding="utf-8")
    start, end = old.find(begin), old.find(end_marker)
    if start < 0 or end < start:
        raise HarnessError(f"{option}{page}: expected the markers {begin} and {end_marker}, "
                           f"in order")
    write_text(Path(page), old[:start + len(begin)] + "\n\n" + text + "\n" + old[end:])


if __name__ == "__main__":
    main()
