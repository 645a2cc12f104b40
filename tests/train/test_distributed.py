"""Data parallel training on the CPU: two processes (torchrun, gloo) give the weights and loss
of one process that accumulates the same batches, evaluation counts every sentence once, and
a killed two-process run resumes exactly (issue 12)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from support import write_corpus

# torchrun launches of several processes: integration
pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(shutil.which("torchrun") is None and
                                 not Path(sys.executable).with_name("torchrun").exists(),
                                 reason="torchrun (torch.distributed) is not installed")]


def _torchrun() -> list[str]:
    exe = Path(sys.executable).with_name("torchrun")
    return [str(exe) if exe.exists() else "torchrun"]


def _train(args: list[str], procs: int, out: Path, port: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    cmd = ([*_torchrun(), "--nproc_per_node", str(procs), "--master_port", str(port),
            "-m", "seqrep"] if procs > 1 else [sys.executable, "-m", "seqrep"])
    proc = subprocess.run([*cmd, "train", *args, "--threads", "1", "--output", str(out),
                           "--quiet"], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _weights(out: Path) -> dict[str, torch.Tensor]:
    best = out / "best"
    return {**load_file(str(best / "head.safetensors")),
            **load_file(str(best / "backbone" / "model.safetensors"))}


@pytest.fixture(scope="module")
def setup(tiny, tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], Path, Path]:
    """The arguments, the folder, and one uninterrupted two-process run (evaluating every 2
    steps) that both tests compare against: each torchrun launch costs three processes'
    imports (about 20 s), the training itself under a second."""
    tmp = tmp_path_factory.mktemp("ddp")
    train = write_corpus(tmp / "train.txt", 45)  # 40 training sentences: 5 batches of 8
    test = write_corpus(tmp / "test.txt", 7, seed=1)  # odd: does not divide by 2
    args = ["--model", tiny("llama"), "--dataset", str(train), "--test-split", str(test),
            "--exit-layer", "3", "--epochs", "2", "--batch-size", "8", "--lr", "3e-3",
            "--head-lr", "1e-2", "--seed", "7", "--device", "cpu", "--eval-every", "2",
            "--dropout", "0"]  # dropout masks are drawn per process; none to compare exactly
    two = tmp / "two"
    _train(args, 2, two, 29512)
    return args, tmp, two


def test_two_processes_equal_one_with_the_same_global_batch(setup) -> None:
    args, tmp, two = setup
    one = tmp / "one"
    _train([*args, "--grad-accum", "2"], 1, one, 29511)
    a, b = _weights(one), _weights(two)
    assert a.keys() == b.keys()
    worst = max(float((a[k] - b[k]).abs().max()) for k in a)
    assert worst < 1e-5, worst
    log1 = [json.loads(x) for x in (one / "log.jsonl").read_text().splitlines()]
    log2 = [json.loads(x) for x in (two / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log1] == [r["step"] for r in log2]
    assert len(log1) > 2  # evaluations every 2 steps, and at the end: scores compared below
    for r1, r2 in zip(log1, log2):
        assert r1["train_loss"] == pytest.approx(r2["train_loss"], abs=1e-5)
        assert r1["f1"] == r2["f1"]
    m1, m2 = (json.loads((d / "metrics.json").read_text()) for d in (one, two))
    assert m1["test"]["sentences"] == m2["test"]["sentences"] == 7
    assert m1["test"]["f1"] == m2["test"]["f1"]
    assert json.loads((two / "run.json").read_text())["processes"] == 2


def test_two_process_run_resumes_exactly(setup) -> None:
    args, tmp, full = setup
    cut = tmp / "cut2"
    _train([*args, "--max-steps", "3"], 2, cut, 29514)
    assert (cut / "checkpoint" / "state.json").exists() and not (cut / "metrics.json").exists()
    _train([*args, "--resume"], 2, cut, 29515)
    a, b = _weights(full), _weights(cut)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert (full / "log.jsonl").read_text().count("\n") == (cut / "log.jsonl").read_text().count(
        "\n")
