"""kill -9 of a training process, then ``--resume``: the run ends exactly as an uninterrupted
one (every tensor of best/ bit for bit, the same validation and test scores, the same
log.jsonl lines) and leaves no temporary folder.

Each killed run is a child process (``python -c``) with one torch thread; a driver in the child
only wraps one function so that its Nth call sends SIGKILL to the child itself: a safetensors write
of the checkpoint (after the first file of the new checkpoint is in its temporary folder), an
evaluation (after earlier ones were logged), the write of best/ (after the evaluation was
logged, before the checkpoint of that step), and the rename that puts a new checkpoint in
place. Production code has no test hook. The uninterrupted reference and each resume run in the
test's own process (one torch thread too): they read only what the killed child left on disk,
and each child would cost a few seconds of imports for well under a second of training.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support import write_corpus

# child processes killed and resumed: a minute or more of training on two cores
pytestmark = pytest.mark.integration

# The child: train (or resume) one run. With "kill", call number "at" of the function named
# "module:attribute" (counting only calls whose first argument ends with "when", if given)
# sends SIGKILL to the child instead of returning (with "after": once the call is done).
DRIVER = r"""
import importlib, json, os, signal, sys
import torch
torch.set_num_threads(1)
from seqrep.config import LabelerConfig, TrainConfig
from seqrep.train import train

args = json.loads(sys.argv[1])
kill = args.get("kill")
if kill:
    module, _, attr = kill["target"].partition(":")
    owner = importlib.import_module(module)
    *path, name = attr.split(".")
    for part in path:
        owner = getattr(owner, part)
    original = getattr(owner, name)
    calls = [0]

    def wrapper(*a, **kw):
        if kill.get("when") is None or str(a[0]).endswith(kill["when"]):
            calls[0] += 1
            if calls[0] == kill["at"]:
                if kill.get("after"):  # kill once the call is done
                    original(*a, **kw)
                os.kill(os.getpid(), signal.SIGKILL)
        return original(*a, **kw)

    setattr(owner, name, wrapper)
lab = LabelerConfig(model=args["model"], **args["labeler"])
cfg = TrainConfig(dataset=args["train"], test_split=args["test"], **args["settings"])
metrics = train(lab, cfg, args["out"], resume=args.get("resume", False), quiet=True)
print(json.dumps({"status": metrics["status"]}))
"""
# the one run every test makes, killed in a child or not
LABELER = {"repetitions": 1, "finetune": "full", "exit_layer": 3}
SETTINGS = {"epochs": 2, "batch_size": 8, "lr": 3e-3, "head_lr": 1e-2, "seed": 7,
            "eval_every": 3}

# 54 training sentences in batches of 8: 7 steps an epoch, 14 in all; an evaluation (and a
# checkpoint) at steps 3, 6, 9, 12 and 14. A checkpoint is three safetensors writes.
KILLS = {
    # the second checkpoint (step 6): trainable.safetensors is in .checkpoint.tmp-*, the
    # optimizer's file is not; checkpoint/ still holds step 3, log.jsonl already has step 6
    "checkpoint-write": {"target": "seqrep.train.checkpoint:save_file", "at": 5},
    # the third evaluation (step 9): its logits are computed, nothing of it is logged
    "evaluation": {"target": "seqrep.train.loop:Trainer.eval_logits", "at": 3, "after": True},
    # the head of best/ at its second write: the evaluation is logged, its checkpoint is not
    "best-write": {"target": "seqrep.model.io:save_file", "at": 2},
}


def child(args: dict, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               TOKENIZERS_PARALLELISM="false")
    return subprocess.run([sys.executable, "-c", DRIVER, json.dumps(args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def run_ok(args: dict) -> None:
    """The driver's run (or resume) without a kill, in this process."""
    import torch

    from seqrep.config import LabelerConfig, TrainConfig
    from seqrep.train import train

    # one thread, as in the child: the module fixture's reference run comes before the
    # suite's per-test one-thread fixture, and two threads sum in another order (not bit-equal)
    torch.set_num_threads(1)
    lab = LabelerConfig(model=args["model"], **args["labeler"])
    cfg = TrainConfig(dataset=args["train"], test_split=args["test"], **args["settings"])
    metrics = train(lab, cfg, args["out"], resume=args.get("resume", False), quiet=True)
    assert metrics["status"] == "finished", metrics


def tensors(out: Path) -> dict[str, dict]:
    """Every tensor of every safetensors file under best/, by file and name."""
    from safetensors.torch import load_file

    files = sorted((out / "best").rglob("*.safetensors"))
    assert any("backbone" in str(f) for f in files) and (out / "best" / "head.safetensors") \
        in files, files
    return {str(f.relative_to(out)): load_file(str(f)) for f in files}


def log(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines()]


SAME = ("step", "epoch", "train_loss", "f1", "precision", "recall", "decoding", "f1_greedy",
        "f1_constrained", "predicted_spans", "gold_spans")  # all but the timings


def compare_runs(out: Path, reference: Path) -> None:
    """Bit-identical best/ tensors, equal scores, the same log lines (timings aside)."""
    mine, ref = tensors(out), tensors(reference)
    assert sorted(mine) == sorted(ref)
    differ = [f"{f}:{n}" for f in ref for n in ref[f]
              if n not in mine[f] or mine[f][n].dtype != ref[f][n].dtype
              or mine[f][n].shape != ref[f][n].shape or not mine[f][n].equal(ref[f][n])]
    assert not differ, f"{len(differ)} tensors differ from the uninterrupted run: {differ[:10]}"
    assert sorted(set(n for f in mine for n in mine[f]) ^ set(n for f in ref for n in ref[f])) \
        == []
    a, b = log(out), log(reference)
    assert [r["step"] for r in a] == [r["step"] for r in b]
    assert [{k: r.get(k) for k in SAME} for r in a] == [{k: r.get(k) for k in SAME} for r in b]
    ma = json.loads((out / "metrics.json").read_text())
    mb = json.loads((reference / "metrics.json").read_text())
    assert {k: ma["validation"][k] for k in SAME} == {k: mb["validation"][k] for k in SAME}
    untimed = lambda scores: {k: v for k, v in scores.items() if k != "seconds"}  # noqa: E731
    assert untimed(ma["test"]) == untimed(mb["test"]) and "f1" in ma["test"]
    for key in ("steps", "train_tokens", "train_sentences", "decoding", "status"):
        assert ma[key] == mb[key], key
    assert not list(out.glob(".*.tmp-*")) and not list(out.glob(".*.old-*"))
    assert not (out / "checkpoint").exists()  # a finished run removes it


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory, tiny_root: Path) -> dict:
    from support import make_tiny

    root = tmp_path_factory.mktemp("kill")
    args = {"model": str(make_tiny(tiny_root, "llama", 4)),
            "train": str(write_corpus(root / "train.txt", 60)),
            "test": str(write_corpus(root / "test.txt", 12, seed=1)),
            "labeler": LABELER, "settings": SETTINGS}
    reference = root / "uninterrupted"
    run_ok({**args, "out": str(reference)})
    assert [r["step"] for r in log(reference)] == [3, 6, 9, 12, 14]
    return {"args": args, "root": root, "reference": reference}


@pytest.mark.parametrize("where", list(KILLS))
def test_kill_9_then_resume_is_exact(setup: dict, where: str) -> None:
    root, args = setup["root"], setup["args"]
    out = root / where
    killed = child({**args, "out": str(out), "kill": KILLS[where]}, root)
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr[-3000:])
    assert not (out / "metrics.json").exists()
    state = json.loads((out / "checkpoint" / "state.json").read_text())["state"]
    steps = [r["step"] for r in log(out)]
    if where == "checkpoint-write":  # killed inside the step-6 checkpoint
        (tmp,) = out.glob(".checkpoint.tmp-*")
        assert sorted(p.name for p in tmp.iterdir()) == ["trainable.safetensors"]
        assert state["step"] == 3 and steps == [3, 6]
    elif where == "evaluation":  # killed inside the step-9 evaluation
        assert state["step"] == 6 and steps == [3, 6]
    else:  # killed writing best/ after the step-x evaluation was logged
        assert list(out.glob(".best.tmp-*"))
        assert state["step"] == steps[-2] and state["evals"] == len(steps) - 1
    run_ok({**args, "out": str(out), "resume": True})
    compare_runs(out, setup["reference"])


def test_kill_between_the_renames_of_a_checkpoint_keeps_it(setup: dict) -> None:
    """Killed after the step-3 checkpoint/ was moved aside and before the new one arrived:
    resume puts the moved folder back and continues from step 3 (not from 0), and the
    results match an uninterrupted run."""
    from seqrep.train.folder import replace_output

    root, args = setup["root"], setup["args"]
    out = root / "rename"
    # at step 6, once the step-3 checkpoint/ is renamed to .checkpoint.old-PID, before the
    # new one is renamed into place
    kill = {"target": "seqrep.files.atomic:os.replace", "at": 1, "when": "/checkpoint",
            "after": True}
    killed = child({**args, "out": str(out), "kill": kill}, root)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert not (out / "checkpoint").exists() and list(out.glob(".checkpoint.old-*"))
    replace_output(out, resume=True)  # what resume does first
    state = json.loads((out / "checkpoint" / "state.json").read_text())["state"]
    assert state["step"] == 3 and not list(out.glob(".checkpoint.*-*"))
    run_ok({**args, "out": str(out), "resume": True})
    compare_runs(out, setup["reference"])
