"""The speed run: every trained system labels the same test set on the same threads,
interleaved (round 1: each system once, round 2: each again ...), repeated; the median of the
rounds is kept, with each system's F1 at that precision, peak memory and the CPU's flags.

    PEERS_VENVS=DIR python benchmarks/peers/speed.py [--systems ...] [--repeats 3]
        [--threads 2] [--input FILE] [--seqrep NAME=RUN[:PRECISION[:RUNTIME[:OVERLAP]]] ...]
        [--stand-ins none|missing|also] [--out results/peers-speed.json]

Each labeling is a fresh process (``predict`` of the peer's script, or ``seqrep evaluate``
for a seqrep run folder), started from a small process (peak.py) that reads its own peak
resident memory. ``label_s`` is the labeling alone, as the peer's script times it (model loading
excluded); ``wall_s`` is the whole process. Precisions: each system's ``offers`` (systems.py;
bf16 autocast only where the CPU has it natively), and seqrep's runs as their specs ask
(seqrep_runs.py: a torch precision or an ONNX runtime).

Stand-ins (``--stand-ins missing``): a trained model is hundreds of MB and lives only where
it trained, while each training takes an hour of the same two cores; so a system trained
elsewhere is timed on a stand-in, its own pipeline (config, encoder, labels) with weights
trained for a second, and its row carries the trained model's F1 from its record. Labeling
costs the same whatever the weights; ``--stand-ins also`` times a stand-in beside each
trained model and writes the ratio of their speeds on the stand-in's row.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from peers import common, results, systems  # noqa: E402
from peers.entries import STAND_IN, STAND_IN_BUDGET, Entry  # noqa: E402
from peers.run import (  # noqa: E402
    HERE,
    REPO,
    StageFailed,
    _score,
    _stage,
    predict_command,
    train_command,
)
from peers.seqrep_runs import seqrep_entries  # noqa: E402


def _peer_entries(names: str | None, work: Path, data: Path, threads: int,
                  flags: dict[str, bool], stand_ins: str, results_dir: Path) -> list[Entry]:
    """Each system's labelings at every precision it offers here: of its trained model, and
    (``stand_ins``) of a stand-in where it has none ("missing") or beside it ("also")."""
    entries = []
    for system in systems.pick(names):
        model = work / "models" / system.name
        trained = (model / "train-info.json").is_file()
        record = _ok_record(results_dir, system.name)
        folders: list[tuple[str, Path, bool]] = []
        if trained:
            folders.append((system.name, model, False))
        if record is not None and (stand_ins == "also" or (stand_ins == "missing"
                                                           and not trained)):
            name = system.name + STAND_IN if trained else system.name
            folders.append((name, stand_in_model(system, work, threads), True))
        for base, folder, stand_in in folders:
            for precision in system.precisions(flags):
                name = base if precision == "fp32" else f"{base}-{precision}"
                out = work / "speed" / f"{name}.conll"
                cmd = predict_command(system, folder, data, out, threads,
                                      work / "speed" / f"{name}.timing.json", precision)
                test = _record_test(record, precision, results_dir, system.name) \
                    if stand_in else None
                entries.append(Entry(name, cmd, out, work / "speed" / f"{name}.timing.json",
                                     precision, threads, system=system.name,
                                     stand_in=stand_in, test=test))
    return entries


def _ok_record(results_dir: Path, system: str) -> dict[str, Any] | None:
    path = results.record_path(results_dir, system)
    if not path.is_file():
        return None
    rec = results.read_record(path)
    return rec if rec.get("status") == "ok" else None


def _record_test(record: dict[str, Any] | None, precision: str, results_dir: Path,
                 system: str) -> dict[str, Any] | None:
    """The F1 a trained system's record holds at ``precision`` (its ``test`` for fp32, its
    ``test_at`` entry for another), naming the record it came from; None if it has none."""
    if record is None:
        return None
    test = record.get("test") if precision == "fp32" else (
        record.get("test_at") or {}).get(precision)
    if not isinstance(test, dict):
        return None
    return {**test, "source": str(results.record_path(results_dir, system))}


def stand_in_model(system: systems.System, work: Path, threads: int) -> Path:
    """A stand-in for a system whose trained model is not on this machine: the system's own
    train command (same config, encoder, label set, so the same pipeline at labeling time)
    stopped by a budget of about one second. Labeling costs the same whatever the weights
    (every token of the test set passes the same layers; spaCy's parser makes one move per
    token, flair's CRF decodes every token): ``--stand-ins also`` times a stand-in beside a
    trained model to check it. Its predictions are never scored: its row's F1 is the trained
    model's, from the system's record. Built once per work folder.

    Raises:
        HarnessError: its training failed (the log's last line).
    """
    folder = work / "standins" / system.name
    if (folder / "train-info.json").is_file():
        return folder
    if folder.exists():
        shutil.rmtree(folder)  # the harness's own folder, left half-built
    print(f"peers speed: building a stand-in for {system.name}", file=sys.stderr)
    cmd = train_command(system, work / "data", folder, STAND_IN_BUDGET, threads)
    try:
        _stage("stand-in", cmd, work / "logs" / f"standin-{system.name}.log", 3600)
    except StageFailed as err:
        raise common.HarnessError(f"{system.name}: its stand-in did not build: "
                                  f"{err.error}") from None
    return folder


# in every record whose peaks are the labelings' own (results.py trusts no other record's)
PEAK_MEMORY = "own: each labeling forked from peak.py, a small process"


def time_once(entry: Entry, log: Path) -> dict[str, Any]:
    """One labeling: wall seconds, the script's own labeling seconds, peak RSS (MiB).

    Raises:
        HarnessError: the process failed (its log's last line).
    """
    from peers.run import _last_line

    log.parent.mkdir(parents=True, exist_ok=True)
    entry.output.parent.mkdir(parents=True, exist_ok=True)  # seqrep refuses a missing one
    stdout = log.with_name(log.name + ".stdout")
    start = time.perf_counter()
    with log.open("w", encoding="utf-8") as err, stdout.open("w", encoding="utf-8") as out:
        # every library reads its thread count from these (seqrep's evaluate included)
        env = {**os.environ, **{k: str(entry.threads) for k in (
            "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}}
        # through peak.py, a small process, so that its peak is its own, not this one's
        peak = log.with_name(log.name + ".peak.json")
        peak.unlink(missing_ok=True)
        code = subprocess.call([sys.executable, str(HERE / "peak.py"), str(peak),
                                *entry.command], stdout=out if entry.stdout_json else err,
                               stderr=err, env=env)
    wall = time.perf_counter() - start
    if code != 0:
        raise common.HarnessError(f"{entry.name}: labeling failed: {_last_line(log)}")
    got: dict[str, Any] = {"wall_s": wall, "peak_rss_mib": json.loads(
        peak.read_text(encoding="utf-8"))["peak_rss_kib"] / 1024}
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


def stand_in_ratios(rows: dict[str, dict[str, Any]]) -> None:
    """On each stand-in row timed beside its trained model (``NAME~stand-in[-PREC]`` and
    ``NAME[-PREC]``), its words/s over the trained model's: how far a stand-in's speed may
    be trusted for that system."""
    for name, row in rows.items():
        if STAND_IN not in name or row.get("status") != "ok":
            continue
        twin = rows.get(name.replace(STAND_IN, "", 1))
        if twin is not None and twin.get("status") == "ok" and twin.get("words_per_s"):
            row["stand_in_over_trained"] = round(row["words_per_s"] / twin["words_per_s"], 3)


# Gemma-3-270m's MLP products on 512 tokens: the shapes seqrep's recipe spends its time on
PROBE_SHAPES = ((512, 640, 2048), (512, 2048, 640))


def matmul_probe(threads: int, repeats: int = 20) -> dict[str, float]:
    """This machine's matrix-multiply rate now, GFLOP/s in fp32 and bf16 on
    :data:`PROBE_SHAPES` (the faster shape), with the run's threads: taken before the first
    round and after the last, so a run on a host that multiplies slower today (bf16 at half
    the rate between two sessions here, fp32 the same) says so beside its words/s."""
    import torch

    from seqrep.lab.bench_rows import matmul_gflops

    torch.set_num_threads(threads)
    return {p: max(round(matmul_gflops(m, k, n, repeats, p), 1) for m, k, n in PROBE_SHAPES)
            for p in ("fp32", "bf16")}


def _record(header: dict[str, Any], entries: list[Entry], timed: dict[str, list[dict[str, Any]]],
            failed: dict[str, str], probe: dict[str, Any], rounds: int, stand_ins: str,
            work: Path) -> dict[str, Any]:
    """The run's record after ``rounds`` finished rounds: each entry's row (its medians so
    far, or its failure), the matmul probe, and ``rounds_completed`` (below ``repeats`` in a
    record written between rounds, which a run cut short leaves behind)."""
    systems_out = {}
    for e in entries:
        if e.name in failed:
            systems_out[e.name] = {"status": "failed", "system": e.system or e.name,
                                   "precision": e.precision, "error": failed[e.name]}
            continue
        row = {"status": "ok", "system": e.system or e.name, "precision": e.precision,
               "weights": "stand-in" if e.stand_in else "trained", "command": e.command,
               **summarize(timed[e.name], header["words"], header["sentences"])}
        if e.train is not None:
            row["train"] = e.train
        if e.stand_in:  # its own predictions mean nothing: the trained model's F1
            row["test"] = e.test or {"error": f"no F1 of {e.system} at {e.precision} "
                                              "in its records"}
        else:
            try:
                row["test"] = _score(e.output, work / "logs" / f"speed-{e.name}.score.log")
            except StageFailed as err:  # a scoring failure is recorded, not fatal
                row["test"] = {"error": err.error}
        systems_out[e.name] = row
    stand_in_ratios(systems_out)
    return {**header, "rounds_completed": rounds, "peak_memory": PEAK_MEMORY,
            "matmul_gflops": {**probe, "shapes": [list(x) for x in PROBE_SHAPES]},
            "order": "interleaved rounds", "stand_ins": stand_ins, "systems": systems_out,
            "harness": str(HERE.relative_to(REPO))}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--systems", default=None)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--work", type=Path, default=None, help="run.py's work folder")
    p.add_argument("--input", type=Path, default=None, help="default: WORK/data/test.jsonl")
    p.add_argument("--seqrep", action="append", default=[],
                   help="NAME=RUN[:PRECISION[:RUNTIME[:OVERLAP]]], a seqrep run folder to "
                        "time too (OVERLAP: --context-overlap)")
    p.add_argument("--out", type=Path, default=REPO / "results" / "peers-speed.json")
    p.add_argument("--results", type=Path, default=REPO / "results",
                   help="the systems' records (a stand-in's F1 is its record's)")
    p.add_argument("--stand-ins", choices=("none", "missing", "also"), default="none",
                   help="time a stand-in (the system's own config, weights trained for a "
                        "second) for a trained system whose model is not here (missing), or "
                        "beside every trained model too, to check they cost the same (also)")
    args = p.parse_args(argv)
    try:
        if args.repeats < 1:
            raise common.HarnessError(f"--repeats {args.repeats}: expected at least 1")
        work = args.work or common.venvs_root() / "work"
        data = args.input or work / "data" / "test.jsonl"
        manifest = work / "data" / "manifest.json"
        cut = args.input is not None or (manifest.is_file() and common.read_json(
            manifest, "the converted data's manifest", dict).get("max_sentences") is not None)
        if args.seqrep and cut:
            raise common.HarnessError(
                f"--seqrep labels CoNLL-2003's whole test split (seqrep evaluate), but {data} "
                "is another input: time seqrep's rows with the default input of a full run")
        sentences = common.read_jsonl(data)
        words = sum(len(s["words"]) for s in sentences)
        cpu = common.cpu_flags()
        entries = _peer_entries(args.systems, work, data, args.threads, cpu["flags"],
                                args.stand_ins, args.results)
        for spec in args.seqrep:
            entries += seqrep_entries(spec, work, args.threads, args.stand_ins)
        if not entries:
            raise common.HarnessError(f"nothing to time: no trained system under {work / 'models'}"
                                      " (run benchmarks/peers/run.py first)")
        timed: dict[str, list[dict[str, Any]]] = {e.name: [] for e in entries}
        failed: dict[str, str] = {}
        probe = {"before": matmul_probe(args.threads)}
        header = {"input": str(data), "sentences": len(sentences), "words": words,
                  "threads": args.threads, "repeats": args.repeats, "cpu": cpu}
        for rnd in range(args.repeats):
            for e in entries:
                if e.name in failed:
                    continue
                print(f"peers speed: round {rnd + 1}/{args.repeats}: {e.name}", file=sys.stderr)
                try:
                    timed[e.name].append(time_once(e, work / "logs" / f"speed-{e.name}.log"))
                except common.HarnessError as err:
                    failed[e.name] = str(err)
            if rnd + 1 < args.repeats:  # a run cut short still leaves its finished rounds
                common.write_json(args.out, _record(header, entries, timed, failed, probe,
                                                    rnd + 1, args.stand_ins, work))
        probe["after"] = matmul_probe(args.threads)
        record = _record(header, entries, timed, failed, probe, args.repeats, args.stand_ins,
                         work)
        common.write_json(args.out, record)
        systems_out = record["systems"]
        for name, row in systems_out.items():
            print(f"{name}: " + (f"{row['words_per_s']} words/s, {row['sentences_per_s']} "
                                 f"sentences/s, peak {row['peak_rss_mib']} MiB"
                                 if row["status"] == "ok" else row["error"]), file=sys.stderr)
    except common.HarnessError as err:
        common.fail(err)


if __name__ == "__main__":
    main()
