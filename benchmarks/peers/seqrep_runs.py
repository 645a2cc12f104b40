"""seqrep's side of the peers benchmark: its runs as speed-run entries, at every precision and
runtime seqrep offers (torch fp32 or bf16 autocast, ONNX Runtime fp32 or its int8 recipe), of
the trained model or of a stand-in; and the F1 of a trained run at the runtimes its training
did not test, kept beside its records so that a later speed run's stand-in rows carry them.

    # after training: label the test set with ONNX Runtime (fp32 and int8) and keep the F1s
    python benchmarks/peers/seqrep_runs.py runs/recipe-focus-bf16-e2 \\
        --records results/recipe-focus-bf16-e2 [--runtimes onnx,onnx-int8] [--threads 2]

A run's ``metrics.json`` holds its test F1 at the precision it trained in (run.json's
``train.precision``); ``test_at.json`` beside it holds the others, one entry per precision
or runtime name, in percent, scored by the harness's one scorer.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from peers import common  # noqa: E402
from peers.entries import STAND_IN, Entry  # noqa: E402

ONNX_RUNTIMES = ("onnx", "onnx-int8")  # an fp32 graph; its int8 recipe (seqrep export --int8)
# a run's backbone on OpenVINO: its f32 graph, or bf16 products (--runtime openvino)
OPENVINO = {"openvino-fp32": "fp32", "openvino-bf16": "bf16"}
# its forward pass compiled by torch.compile (--runtime compile)
COMPILED = {"compile-fp32": "fp32", "compile-bf16": "bf16"}
TEST_AT = "test_at.json"
STAND_IN_SENTENCES = 16


def parse_spec(spec: str) -> tuple[str, Path, str, str, str | None]:
    """``NAME=RUN[:PRECISION[:RUNTIME[:OVERLAP]]]`` as (name, run, precision, runtime,
    overlap): OVERLAP is the document windows' overlap the labeling uses
    (``--context-overlap``; default the run's own).

    Raises:
        HarnessError: no ``=``, an empty part, an ONNX runtime with a precision other
            than fp32 (its graph is fp32; onnx-int8 quantizes it), or an overlap that is
            no number.
    """
    name, sep, rest = spec.partition("=")
    if not sep or not name or not rest:
        raise common.HarnessError(f"--seqrep {spec!r}: expected "
                                  "NAME=RUN[:PRECISION[:RUNTIME[:OVERLAP]]]")
    run, precision, runtime, overlap = (rest.split(":") + ["", "", ""])[:4]
    try:
        float(overlap or 0)
    except ValueError:
        raise common.HarnessError(f"--seqrep {name}: overlap {overlap!r}; expected a number "
                                  "(the share of a document window the next one repeats)"
                                  ) from None
    precision, runtime = precision or "auto", runtime or "torch"
    if runtime in ONNX_RUNTIMES:
        if precision not in ("auto", "fp32"):
            raise common.HarnessError(f"--seqrep {name}: {runtime} runs an fp32 graph; expected "
                                      f"no precision or fp32, not {precision}")
        precision = "fp32"
    return name, Path(run), precision, runtime, overlap or None


def label_of(precision: str, runtime: str) -> str:
    """The table's precision cell: the runtime's name for ONNX, ``openvino-PRECISION`` for
    OpenVINO, ``compile-PRECISION`` for torch.compile, else the precision."""
    if runtime in ("openvino", "compile"):
        return f"{runtime}-{precision}"
    return runtime if runtime in ONNX_RUNTIMES else precision


def seqrep_entries(spec: str, work: Path, threads: int, stand_ins: str = "none"
                   ) -> list[Entry]:
    """``NAME=RUN[:PRECISION[:RUNTIME[:OVERLAP]]]``: a seqrep run labeling CoNLL-2003's test
    split.
    RUN is a trained run folder (its model in RUN/best), a ``seqrep export`` folder, or,
    with ``stand_ins``, the records of a run (run.json, metrics.json, as results/ keeps them)
    whose stand-in is timed. An ONNX runtime labels an export of the model (made once, in
    WORK/exports, before any timing).

    Raises:
        HarnessError: a malformed spec, a run folder that does not exist, one with no model
            when no stand-in is asked for, or an export that failed.
    """
    name, run, precision, runtime, overlap = parse_spec(spec)
    if not run.is_dir():
        raise common.HarnessError(f"--seqrep {name}: run folder {run} does not exist")
    exported = (run / "seqrep-onnx.json").is_file()
    trained = exported or (run / "best" / "config.json").is_file()
    if not trained and stand_ins == "none":
        raise common.HarnessError(f"--seqrep {name}: {run} holds no trained model "
                                  "(best/config.json); --stand-ins missing times a stand-in")
    label = label_of(precision, runtime)
    folders: list[tuple[str, Path, bool]] = [(name, run, False)] if trained else []
    if stand_ins == "also" or not trained:
        folders.append((name + STAND_IN if trained else name,
                        seqrep_stand_in(run, stand_in_folder(run, work)), True))
    entries = []
    for entry_name, folder, stand_in in folders:
        model = folder
        if runtime in ONNX_RUNTIMES and not (folder / "seqrep-onnx.json").is_file():
            model = export(folder, _keyed(work / "exports", folder), work / "logs")
        out = work / "speed" / f"{entry_name}.conll"
        cmd = [sys.executable, "-m", "seqrep", "evaluate", str(model), "--dataset",
               "conll2003", "--split", "test", "--predictions", str(out), "--precision",
               precision, "--runtime", runtime,
               *(["--context-overlap", overlap] if overlap else []),
               "--json", "--quiet", "--overwrite"]
        entries.append(Entry(entry_name, cmd, out, None, label, threads,
                             stdout_json=True, train=seqrep_training(run),
                             system=name, stand_in=stand_in,
                             test=seqrep_test(run, label) if stand_in else None))
    return entries


def _keyed(parent: Path, folder: Path) -> Path:
    """PARENT/seqrep-NAME-DIGEST: one place per folder (its name and a digest of its full
    path), whatever names and precisions the specs time it under."""
    import hashlib

    digest = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:8]
    return parent / f"seqrep-{folder.name}-{digest}"


def stand_in_folder(run: Path, work: Path) -> Path:
    """Where RUN's stand-in is built: one per run folder (its ONNX export likewise, in
    WORK/exports, one for both ONNX runtimes)."""
    return _keyed(work / "standins", run)


def export(model: Path, out: Path, logs: Path) -> Path:
    """``seqrep export MODEL --onnx OUT --int8`` (fp32 graph and the int8 recipe's), once:
    an OUT that holds a finished export is reused.

    Raises:
        HarnessError: the export failed (its log's last line).
    """
    if (out / "seqrep-onnx.json").is_file() and (out / "model.int8.onnx").is_file():
        return out
    from peers.run import _last_line

    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"export-{out.name}.log"
    print(f"peers: exporting {model} to ONNX ({out})", file=sys.stderr)
    with log.open("w", encoding="utf-8") as sink:
        code = subprocess.run([sys.executable, "-m", "seqrep", "export", str(model), "--onnx",
                               str(out), "--int8"], stdout=sink, stderr=sink,
                              check=False).returncode
    if code != 0:
        raise common.HarnessError(f"{model}: seqrep export failed: {_last_line(log)}")
    return out


def _train_config(config: Path) -> dict[str, Any]:
    """run.json's ``train`` section (an object; an empty one where it has none)."""
    train = common.read_json(config, "a run's configuration", dict).get("train", {})
    if not isinstance(train, dict):
        raise common.HarnessError(f"{config}: 'train' is not an object")
    return train


def seqrep_test(run: Path, precision: str) -> dict[str, Any] | None:
    """A seqrep run's test F1 at ``precision`` (a precision or an ONNX runtime's name), in
    percent: test_at.json's entry for it, else metrics.json's test when the run trained, and
    so tested, at that precision (run.json's ``train.precision``); None when the records
    hold no F1 at it."""
    at = run / TEST_AT
    if at.is_file():
        got = common.read_json(at, "a run's test F1s", dict).get(precision)
        if isinstance(got, dict) and "f1" in got:
            return {**got, "source": str(at)}
    metrics, config = run / "metrics.json", run / "run.json"
    if not metrics.is_file() or not config.is_file():
        return None
    trained_at = _train_config(config).get("precision")
    test = common.read_json(metrics, "a run's metrics", dict).get("test")
    if trained_at != precision or not isinstance(test, dict) or "f1" not in test:
        return None
    return {"f1": 100 * test["f1"], "precision": 100 * test["precision"],
            "recall": 100 * test["recall"], "sentences": test.get("sentences"),
            "scorer": "seqrep's test at the end of training (strict IOB2)",
            "source": str(metrics)}


def seqrep_stand_in(run: Path, out: Path) -> Path:
    """A stand-in for a seqrep run whose model is not on this machine: its run.json's
    configuration (model, exit layer, repetitions, context, labels) trained for one epoch of
    16 sentences, so it labels exactly as the trained model does, at the same cost.

    Raises:
        HarnessError: RUN has no run.json, or the training failed.
    """
    if (out / "best" / "config.json").is_file():
        return out
    config = run / "run.json"
    if not config.is_file():
        raise common.HarnessError(f"--seqrep: {run} has no run.json to build a stand-in from")
    from seqrep.config import LabelerConfig, TrainConfig
    from seqrep.errors import SeqrepError
    from seqrep.train import train

    saved = common.read_json(config, "a run's configuration", dict)
    small = {"epochs": 1, "max_steps": None, "max_train_sentences": STAND_IN_SENTENCES,
             "max_eval_sentences": STAND_IN_SENTENCES, "max_test_sentences": STAND_IN_SENTENCES}
    print(f"peers speed: building a stand-in for {run}", file=sys.stderr)
    for section in ("labeler", "train"):
        if not isinstance(saved.get(section), dict):
            raise common.HarnessError(f"{config}: no '{section}' object to build a stand-in "
                                      "from")
    try:
        train(LabelerConfig.from_dict(saved["labeler"]),
              TrainConfig.from_dict({**saved["train"], **small}), out, overwrite=True,
              quiet=True, reader_options=saved.get("reader_options") or None)
    except SeqrepError as err:
        raise common.HarnessError(f"--seqrep: the stand-in of {run} did not build: "
                                  f"{err}") from None
    return out


def seqrep_training(run: Path) -> dict[str, Any] | None:
    """What a seqrep run folder says of its training (metrics.json): seconds, optimizer
    steps, epochs and sentences; None for a folder without one (a downloaded labeler)."""
    path = run / "metrics.json"
    if not path.is_file():
        return None
    metrics = common.read_json(path, "a run's metrics", dict)
    config = run / "run.json"
    epochs = _train_config(config).get("epochs") if config.is_file() else None
    return {"seconds": metrics.get("train_seconds"), "steps": metrics.get("steps"),
            "epochs": epochs, "sentences": metrics.get("train_sentences"),
            "run": str(run)}


def at_runtimes(run: Path, records: Path, runtimes: list[str], work: Path,
                threads: int) -> dict[str, Any]:
    """Label the test split with a trained run at each of ``runtimes`` (an ONNX runtime, or
    a torch precision), score each labeling with the harness's scorer, and merge the F1s
    into RECORDS/test_at.json. Returns what was written.

    Raises:
        HarnessError: RUN holds no trained model, RECORDS does not exist, an unknown
            runtime, or an export, labeling or scoring that failed.
    """
    from peers.run import StageFailed, _score
    from peers.speed import time_once

    if not (run / "best" / "config.json").is_file():
        raise common.HarnessError(f"{run}: no trained model (best/config.json)")
    if not records.is_dir():
        raise common.HarnessError(f"--records {records}: not a folder")
    known = (*ONNX_RUNTIMES, *OPENVINO, *COMPILED, "fp32", "bf16")
    for r in runtimes:
        if r.partition("@")[0] not in known:
            raise common.HarnessError(f"--runtimes: unknown {r!r}; expected some of "
                                      f"{', '.join(known)}, each with @OVERLAP or not")
    path = records / TEST_AT
    (work / "logs").mkdir(parents=True, exist_ok=True)
    written = common.read_json(path, "a run's test F1s", dict) if path.is_file() else {}
    cpu = common.cpu_flags()
    for r in runtimes:
        name, _, overlap = r.partition("@")  # RUNTIME@OVERLAP: --context-overlap OVERLAP
        precision, runtime = (("fp32", name) if name in ONNX_RUNTIMES
                              else (OPENVINO[name], "openvino") if name in OPENVINO
                              else (COMPILED[name], "compile") if name in COMPILED
                              else (name, "torch"))
        spec = f"{run.name}={run}:{precision}:{runtime}:{overlap}"
        (entry,) = seqrep_entries(spec, work, threads)
        timed = time_once(entry, work / "logs" / f"at-{run.name}-{r}.log")
        try:
            score = _score(entry.output, work / "logs" / f"at-{run.name}-{r}.score.log")
        except StageFailed as err:
            raise common.HarnessError(f"{run} at {r}: scoring failed: {err.error}") from None
        written[r] = {**score, "label_s": round(timed["label_s"], 2), "threads": threads,
                      "cpu": cpu, "command": entry.command}
        fp32 = entry.output.with_name(f"{run.name}-fp32-tags.conll")
        if r == "fp32":
            fp32.write_bytes(entry.output.read_bytes())
        if fp32.is_file():  # the share of words whose tag differs from PyTorch fp32's
            written[r]["changed_vs_fp32"] = changed_share(entry.output, fp32)
        print(f"peers: {run.name} at {r}: test F1 {score['f1']:.2f}", file=sys.stderr)
        common.write_json(path, written)
    return written


def changed_share(predictions: Path, reference: Path) -> float:
    """The share of words whose predicted tag (the last column of ``word gold predicted``)
    differs between two prediction files of the same sentences."""
    def tags(path: Path) -> list[str]:
        return [line.split()[-1] for line in path.read_text(encoding="utf-8").splitlines()
                if line.strip()]

    a, b = tags(predictions), tags(reference)
    if len(a) != len(b):
        raise common.HarnessError(f"{predictions} and {reference} hold {len(a)} and {len(b)} "
                                  f"words: not the same sentences")
    return round(sum(x != y for x, y in zip(a, b)) / max(1, len(a)), 6)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="a trained seqrep run's test F1 at other runtimes")
    p.add_argument("run", type=Path, help="a trained run folder (RUN/best)")
    p.add_argument("--records", type=Path, required=True,
                   help="the run's records folder (results/NAME): test_at.json goes there")
    p.add_argument("--runtimes", default=",".join(ONNX_RUNTIMES))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--work", type=Path, default=None, help="default: the peers' work folder")
    args = p.parse_args(argv)
    try:
        work = args.work or common.venvs_root() / "work"
        at_runtimes(args.run, args.records, [r.strip() for r in args.runtimes.split(",")
                                             if r.strip()], work, args.threads)
    except common.HarnessError as err:
        common.fail(err)


if __name__ == "__main__":
    main()
