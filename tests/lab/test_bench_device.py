"""seqrep bench --device (issue 22: the device benchmark as `seqrep bench --device cuda`): the
option is InferenceConfig's, the models and the matmul ceiling run on the device, a device
this machine lacks is one line and exit 2 before anything runs, and ONNX rows (ONNX Runtime
runs on the CPU only) keep `auto` on the CPU. CPU-only: CUDA is faked where a test needs it."""

from __future__ import annotations

import pytest
import torch
from support import WORDS, cli

from seqrep.errors import ConfigError


def _never(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
    raise AssertionError("the benchmark ran after a bad --device")


def _fake_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)


def test_a_device_that_is_not_there_is_one_line_exit_2(capsys, monkeypatch) -> None:
    import seqrep.lab.bench

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(seqrep.lab.bench, "run_bench", _never)
    code, _, err = cli(capsys, "bench", "--device", "cuda")
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "--device cuda" in err and "CUDA" in err, err


def test_device_cpu_reaches_the_config(capsys, monkeypatch) -> None:
    import seqrep.lab.bench

    seen = []

    def record(cfg, echo=print):  # noqa: ANN001, ANN202
        seen.append(cfg)
        return {"speedups": []}

    monkeypatch.setattr(seqrep.lab.bench, "run_bench", record)
    code, _, err = cli(capsys, "bench", "--device", "cpu", "--encoder", "")
    assert code == 0, err
    assert seen[0].device == "cpu" and seen[0].resolved_device() == "cpu"


def test_auto_takes_the_gpu_unless_an_onnx_row_is_asked(monkeypatch) -> None:
    from seqrep.lab.bench import BenchConfig

    _fake_gpu(monkeypatch)
    assert BenchConfig().resolved_device() == "cuda:0"  # as predict's --device auto
    assert BenchConfig(precisions=("fp32", "onnx")).resolved_device() == "cpu"
    assert BenchConfig(device="cpu").resolved_device() == "cpu"
    with pytest.raises(ConfigError, match="--device cuda.*ONNX"):
        BenchConfig(device="cuda", precisions=("fp32", "onnx-int8"))


def test_rows_and_the_ceiling_run_on_the_device_named(tiny) -> None:
    """On the CPU here: a row measured with device cpu is a row, the ceiling a rate."""
    from seqrep.lab.bench_rows import _measure, matmul_ceiling

    model = tiny("llama", 4)
    row = _measure(model, 1, 3, WORDS, 4, None, 1, "cut", None, device="cpu")
    assert row["sentences"] == len(WORDS) and row["sentences_per_second"] > 0
    assert "peak_device_memory_mb" not in row  # a CUDA figure only
    ceiling = matmul_ceiling(model, 16, None, repeats=2, device="cpu")
    assert ceiling["gflops"] > 0
