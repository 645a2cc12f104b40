"""The speed run: every trained system labels the same test set on the same threads,
interleaved (round 1: each system once, round 2: each again ...), repeated; the median of the
rounds is kept, with each system's F1 at that precision, peak memory and the CPU's flags.

    PEERS_VENVS=DIR python benchmarks/peers/speed.py [--systems ...] [--repeats 3]
        [--threads 2] [--input FILE] [--seqrep NAME=RUN[:PRECISION[:RUNTIME]] ...]
        [--out results/peers-speed.json]

Each labeling is a fresh process (``predict`` of the peer's script, or ``seqrep evaluate``
for a seqrep run folder), waited for with ``os.wait4`` so that its own peak resident memory
is read. ``label_s`` is the labeling alone, as the peer's script times it (model loading
excluded); ``wall_s`` is the whole process. Precisions: spaCy and flair fp32; the Hugging Face
model fp32, and bf16 autocast where the CPU has native bf16 (avx512_bf16 or amx_bf16).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from peers import common, systems  # noqa: E402
from peers.run import HERE, REPO, StageFailed, _score, _script  # noqa: E402


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


def _peer_entries(names: str | None, work: Path, data: Path, threads: int,
                  flags: dict[str, bool]) -> list[Entry]:
    entries = []
    for system in systems.pick(names):
        model = work / "models" / system.name
        if not (model / "train-info.json").is_file():
            continue  # not trained (or failed): nothing to time
        python = str(common.peer_python(system.peer))
        precisions = ["fp32"]
        if system.peer == "hf" and (flags.get("avx512_bf16") or flags.get("amx_bf16")):
            precisions.append("bf16")
        for precision in precisions:
            name = system.name if precision == "fp32" else f"{system.name}-{precision}"
            out = work / "speed" / f"{name}.conll"
            timing = work / "speed" / f"{name}.timing.json"
            cmd = [python, str(_script(system)), "predict", "--model", str(model), "--input",
                   str(data), "--output", str(out), "--threads", str(threads), "--timing",
                   str(timing)]
            if system.peer == "hf":
                cmd += ["--precision", precision]
            entries.append(Entry(name, cmd, out, timing, precision, threads,
                                 system=system.name))
    return entries


def seqrep_entry(spec: str, work: Path, threads: int) -> Entry:
    """``NAME=RUN[:PRECISION[:RUNTIME]]``: a seqrep run labeling CoNLL-2003's test split.

    Raises:
        HarnessError: a spec without ``=`` or a run folder that does not exist.
    """
    name, sep, rest = spec.partition("=")
    if not sep or not name or not rest:
        raise common.HarnessError(f"--seqrep {spec!r}: expected NAME=RUN[:PRECISION[:RUNTIME]]")
    run, precision, runtime = (rest.split(":") + ["auto", "torch"])[:3]
    if not Path(run).is_dir():
        raise common.HarnessError(f"--seqrep {name}: run folder {run} does not exist")
    out = work / "speed" / f"{name}.conll"
    cmd = [sys.executable, "-m", "seqrep", "evaluate", run, "--dataset", "conll2003", "--split",
           "test", "--predictions", str(out), "--precision", precision or "auto", "--runtime",
           runtime or "torch", "--json", "--quiet"]
    return Entry(name, cmd, out, None, precision or "auto", threads, stdout_json=True,
                 train=seqrep_training(Path(run)))


def seqrep_training(run: Path) -> dict[str, Any] | None:
    """What a seqrep run folder says of its training (metrics.json): seconds, optimizer
    steps, epochs and sentences; None for a folder without one (a downloaded labeler)."""
    path = run / "metrics.json"
    if not path.is_file():
        return None
    metrics = json.loads(path.read_text(encoding="utf-8"))
    config = run / "run.json"
    epochs = (json.loads(config.read_text(encoding="utf-8")).get("train", {}).get("epochs")
              if config.is_file() else None)
    return {"seconds": metrics.get("train_seconds"), "steps": metrics.get("steps"),
            "epochs": epochs, "sentences": metrics.get("train_sentences"),
            "run": str(run)}


def time_once(entry: Entry, log: Path) -> dict[str, Any]:
    """One labeling: wall seconds, the script's own labeling seconds, peak RSS (MiB).

    Raises:
        HarnessError: the process failed (its log's last line).
    """
    from peers.run import _last_line

    log.parent.mkdir(parents=True, exist_ok=True)
    stdout = log.with_name(log.name + ".stdout")
    start = time.perf_counter()
    with log.open("w", encoding="utf-8") as err, stdout.open("w", encoding="utf-8") as out:
        # every library reads its thread count from these (seqrep's evaluate included)
        env = {**os.environ, **{k: str(entry.threads) for k in (
            "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}}
        proc = subprocess.Popen(entry.command, stdout=out if entry.stdout_json else err,
                                stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise common.HarnessError(f"{entry.name}: labeling failed: {_last_line(log)}")
    got: dict[str, Any] = {"wall_s": wall, "peak_rss_mib": usage.ru_maxrss / 1024}
    if entry.timing is not None:
        got.update(json.loads(entry.timing.read_text(encoding="utf-8")))
        got["label_s"] = got.pop("seconds")
    elif entry.stdout_json:  # seqrep evaluate --json: the labeling's own seconds
        try:
            got["label_s"] = float(json.loads(stdout.read_text(encoding="utf-8"))["seconds"])
        except (ValueError, KeyError, TypeError):
            raise common.HarnessError(f"{entry.name}: expected a JSON with 'seconds' on "
                                      f"stdout, see {stdout}") from None
    return got


def summarize(runs: list[dict[str, Any]], words: int, sentences: int) -> dict[str, Any]:
    """The median of the rounds: seconds, words/s and sentences/s (labeling alone where the
    script timed it, else the whole process), and the highest peak memory."""
    wall = statistics.median(r["wall_s"] for r in runs)
    label = [r["label_s"] for r in runs if "label_s" in r]
    seconds = statistics.median(label) if len(label) == len(runs) else wall
    return {"rounds": len(runs), "median_wall_s": round(wall, 3),
            "median_label_s": round(seconds, 3) if label else None,
            "timed": "labeling" if label else "whole process",
            "words_per_s": round(words / seconds, 1),
            "sentences_per_s": round(sentences / seconds, 2),
            "peak_rss_mib": round(max(r["peak_rss_mib"] for r in runs), 1),
            "runs": runs}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--systems", default=None)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--work", type=Path, default=None, help="run.py's work folder")
    p.add_argument("--input", type=Path, default=None, help="default: WORK/data/test.jsonl")
    p.add_argument("--seqrep", action="append", default=[],
                   help="NAME=RUN[:PRECISION[:RUNTIME]], a seqrep run folder to time too")
    p.add_argument("--out", type=Path, default=REPO / "results" / "peers-speed.json")
    args = p.parse_args(argv)
    try:
        if args.repeats < 1:
            raise common.HarnessError(f"--repeats {args.repeats}: expected at least 1")
        work = args.work or common.venvs_root() / "work"
        data = args.input or work / "data" / "test.jsonl"
        sentences = common.read_jsonl(data)
        words = sum(len(s["words"]) for s in sentences)
        cpu = common.cpu_flags()
        entries = _peer_entries(args.systems, work, data, args.threads, cpu["flags"])
        entries += [seqrep_entry(s, work, args.threads) for s in args.seqrep]
        if not entries:
            raise common.HarnessError(f"nothing to time: no trained system under {work / 'models'}"
                                      " (run benchmarks/peers/run.py first)")
        timed: dict[str, list[dict[str, Any]]] = {e.name: [] for e in entries}
        failed: dict[str, str] = {}
        for rnd in range(args.repeats):
            for e in entries:
                if e.name in failed:
                    continue
                print(f"peers speed: round {rnd + 1}/{args.repeats}: {e.name}", file=sys.stderr)
                try:
                    timed[e.name].append(time_once(e, work / "logs" / f"speed-{e.name}.log"))
                except common.HarnessError as err:
                    failed[e.name] = str(err)
        systems_out = {}
        for e in entries:
            if e.name in failed:
                systems_out[e.name] = {"status": "failed", "system": e.system or e.name,
                                       "precision": e.precision, "error": failed[e.name]}
                continue
            row = {"status": "ok", "system": e.system or e.name, "precision": e.precision,
                   "command": e.command,
                   **summarize(timed[e.name], words, len(sentences))}
            if e.train is not None:
                row["train"] = e.train
            try:
                row["test"] = _score(e.output, work / "logs" / f"speed-{e.name}.score.log")
            except StageFailed as err:  # a scoring failure is recorded, not fatal
                row["test"] = {"error": err.error}
            systems_out[e.name] = row
        record = {"input": str(data), "sentences": len(sentences), "words": words,
                  "threads": args.threads, "repeats": args.repeats, "cpu": cpu,
                  "order": "interleaved rounds", "systems": systems_out,
                  "harness": str(HERE.relative_to(REPO))}
        common.write_json(args.out, record)
        for name, row in systems_out.items():
            print(f"{name}: " + (f"{row['words_per_s']} words/s, {row['sentences_per_s']} "
                                 f"sentences/s, peak {row['peak_rss_mib']} MiB"
                                 if row["status"] == "ok" else row["error"]), file=sys.stderr)
    except common.HarnessError as err:
        common.fail(err)


if __name__ == "__main__":
    main()
