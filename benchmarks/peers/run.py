"""Train every peer on CoNLL-2003 as seqrep reads it, label the test set, score it with
``seqrep score`` and write results/peers-SYSTEM.json; resumable (a system with an ok record
is skipped, a failed one runs again).

    PEERS_VENVS=DIR python benchmarks/peers/run.py [--systems spacy-cnn,...] [--budget 3600]
        [--threads 2] [--work DIR] [--results DIR] [--max-sentences N] [--force]

Run with the project's interpreter (.venv: it converts the data with seqrep's reader and
scores with seqrep); each peer trains and predicts in its own venv (setup.sh), one
subprocess per stage, its output kept in WORK/logs/. A missing venv or data directory stops
the run before anything trains, in one line; a peer that fails is recorded as failed.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from peers import common, convert, results, systems  # noqa: E402
from peers.systems import System  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
VERSION_KEYS = ("torch", "transformers", "spacy", "spacy-transformers", "thinc", "flair",
                "accelerate", "tokenizers", "numpy")


class StageFailed(Exception):  # noqa: N818 - carries a stage's failure to its record
    def __init__(self, stage: str, error: str) -> None:
        super().__init__(error)
        self.stage, self.error = stage, error


def _last_line(log: Path) -> str:
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:500] if lines else "no output"


def _stage(stage: str, cmd: list[str], log: Path, timeout: float) -> None:
    """Run one stage's command, its stdout and stderr into ``log``.

    Raises:
        StageFailed: a non-zero exit (the error is the log's last line) or a timeout.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w", encoding="utf-8") as out:
        try:
            code = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT,
                                  timeout=timeout, check=False).returncode
        except subprocess.TimeoutExpired:
            raise StageFailed(stage, f"did not finish within {timeout:.0f} s") from None
    if code != 0:
        raise StageFailed(stage, _last_line(log))


def _score(predictions: Path, log: Path) -> dict[str, Any]:
    """``seqrep score --json``, the one scorer of every system (strict IOB2), in percent."""
    cmd = [sys.executable, "-m", "seqrep", "score", "--json", str(predictions)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    log.write_text(done.stdout + done.stderr, encoding="utf-8")
    if done.returncode != 0:
        raise StageFailed("score", _last_line(log))
    score = json.loads(done.stdout)
    return {"f1": 100 * score["f1"], "precision": 100 * score["precision"],
            "recall": 100 * score["recall"], "sentences": score.get("sentences"),
            "scorer": "seqrep score (strict IOB2)",
            "per_label_f1": {k: 100 * v["f1"] for k, v in score.get("per_label", {}).items()}}


def _script(system: System) -> Path:
    return Path(system.script) if Path(system.script).is_absolute() else HERE / system.script


def train_command(system: System, data: Path, model: Path, budget: float,
                  threads: int) -> list[str]:
    """The command that trains ``system`` on the neutral files in ``data`` into ``model``
    within ``budget`` seconds."""
    return [str(common.peer_python(system.peer)), str(_script(system)), "train", "--data",
            str(data), "--out", str(model), "--budget", str(budget), "--threads", str(threads),
            *system.train_args]


def predict_command(system: System, model: Path, data: Path, out: Path, threads: int,
                    timing: Path, precision: str = "fp32") -> list[str]:
    """The command with which a system's trained ``model`` labels the neutral file ``data``
    into ``out`` (conlleval's columns) at ``precision``, its labeling seconds into
    ``timing``."""
    return [str(common.peer_python(system.peer)), str(_script(system)), "predict", "--model",
            str(model), "--input", str(data), "--output", str(out), "--threads", str(threads),
            "--timing", str(timing), *system.predict_args, *system.precision_args(precision)]


def run_system(system: System, data: Path, work: Path, results_dir: Path, budget: float,
               threads: int) -> dict[str, Any]:
    """Train, predict and score one system; write and return its record (ok or failed)."""
    versions = common.peer_versions(system.peer)
    model = work / "models" / system.name
    pred = work / "predictions" / f"{system.name}.conll"
    logs = work / "logs"
    train = train_command(system, data, model, budget, threads)
    predict = predict_command(system, model, data / "test.jsonl", pred, threads,
                              work / "predictions" / f"{system.name}.timing.json")
    manifest = common.read_json(data / "manifest.json", "the data manifest", dict)
    rec: dict[str, Any] = {
        "system": system.name, "description": system.description, "peer": system.peer,
        "versions": {k: versions[k] for k in VERSION_KEYS if k in versions},
        "commands": {"train": shlex.join(train), "predict": shlex.join(predict)},
        "budget_s": budget, "threads": threads, "cpu": common.cpu_flags(),
        "data": manifest, "smoke": manifest.get("max_sentences") is not None}
    started = time.time()
    try:
        if model.exists():
            shutil.rmtree(model)  # this harness's own folder: a rerun trains from scratch
        _stage("train", train, logs / f"{system.name}.train.log", budget * 1.5 + 1800)
        info = model / "train-info.json"
        try:  # the peer wrote it: a damaged one fails the training, in the record
            rec["train"] = (common.read_json(info, "its training info", dict)
                            if info.exists() else {})
        except common.HarnessError as err:
            raise StageFailed("train", str(err)) from None
        _stage("predict", predict, logs / f"{system.name}.predict.log", 3 * 3600)
        rec["test"] = _score(pred, logs / f"{system.name}.score.log")
        rec["predictions"] = str(pred)
        for precision in system.precisions(rec["cpu"]["flags"])[1:]:
            # the same model at another precision the tool offers here: its own F1
            name = f"{system.name}-{precision}"
            other = work / "predictions" / f"{name}.conll"
            try:  # a failure here costs that precision's row, not the trained model's
                _stage(f"predict {precision}", predict_command(
                    system, model, data / "test.jsonl", other, threads,
                    work / "predictions" / f"{name}.timing.json", precision),
                    logs / f"{name}.predict.log", 3 * 3600)
                got = {**_score(other, logs / f"{name}.score.log"), "predictions": str(other)}
            except StageFailed as failed:
                got = {"error": f"{failed.stage}: {failed.error}"}
            rec.setdefault("test_at", {})[precision] = got
        rec["status"] = "ok"
    except StageFailed as failed:
        rec.update(status="failed", stage=failed.stage, error=failed.error)
    rec["wall_s"] = round(time.time() - started, 1)
    results.write_record(results_dir, rec)
    return rec


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--systems", default=None, help=f"comma-separated: {', '.join(systems.SYSTEMS)}")
    p.add_argument("--budget", type=float, default=3600.0, help="training seconds per system")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--data-dir", default=None, help="the folder holding conll2003/ "
                                                   "(default: $SEQREP_DATA)")
    p.add_argument("--work", type=Path, default=None,
                   help="models, predictions, logs (default: $PEERS_VENVS/work)")
    p.add_argument("--results", type=Path, default=REPO / "results")
    p.add_argument("--max-sentences", type=int, default=None,
                   help="a smoke run: the first documents holding N sentences of each split")
    p.add_argument("--force", action="store_true", help="rerun systems that have an ok record")
    p.add_argument("--epochs", action="append", default=[], metavar="NAME=E",
                   help="another epoch count for a flair or Hugging Face system")
    args = p.parse_args(argv)
    try:
        chosen = systems.pick(args.systems)
        for spec in args.epochs:
            name, _, epochs = spec.partition("=")
            if name not in systems.SYSTEMS:
                raise common.HarnessError(f"--epochs {spec!r}: expected NAME=E with NAME one of "
                                          f"{', '.join(systems.SYSTEMS)}")
            chosen = [systems.with_epochs(s, epochs) if s.name == name else s for s in chosen]
        for peer in dict.fromkeys(s.peer for s in chosen):
            common.peer_python(peer)
        convert.conll_folder(args.data_dir)
        if any(s.name != "spacy-cnn" for s in chosen):
            common.encoder_folder()
        work = args.work or common.venvs_root() / "work"
        if args.max_sentences is not None:
            work = work / f"smoke-{args.max_sentences}"
        data = work / "data"
        manifest = data / "manifest.json"
        if not manifest.exists() or common.read_json(manifest, "the data manifest", dict).get(
                "max_sentences") != args.max_sentences:
            convert.convert(data, args.data_dir, args.max_sentences)
        for system in chosen:
            if not args.force and results.finished(args.results, system.name):
                print(f"peers: {system.name}: finished already "
                      f"({results.record_path(args.results, system.name)})", file=sys.stderr)
                continue
            print(f"peers: {system.name}: training (budget {args.budget:.0f} s, "
                  f"{args.threads} threads)", file=sys.stderr)
            rec = run_system(system, data, work, args.results, args.budget, args.threads)
            f1 = rec.get("test", {}).get("f1")
            print(f"peers: {system.name}: {rec['status']}"
                  + (f", test F1 {f1:.2f}" if f1 is not None else f": {rec.get('error')}"),
                  file=sys.stderr)
        print(results.table(results.load_records(args.results)), end="")
    except common.HarnessError as err:
        common.fail(err)


if __name__ == "__main__":
    main()
