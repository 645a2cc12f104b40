"""The optimisation state: checkpointed AdamW moments, the step count of the lr schedule, the
loss normalisation and the precision of training."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from seqrep.train.checkpoint import load_checkpoint, save_checkpoint
from seqrep.train.state import TrainState


def _stepped() -> tuple[nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 2))
    opt = torch.optim.AdamW(model.parameters(), lr=0.1)
    model(torch.randn(4, 3)).sum().backward()
    opt.step()
    return model, opt


def test_resumed_moments_live_on_each_parameters_device(tmp_path: Path) -> None:
    # a run trained on a GPU resumes with its moments on that GPU, not the CPU (the first
    # step after --resume would fail on a device mismatch); 'meta' stands in for the GPU
    model, opt = _stepped()
    save_checkpoint(tmp_path / "ck", model, opt, TrainState(step=1))
    with torch.device("meta"):
        target = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 2))
    fresh = torch.optim.AdamW(target.parameters(), lr=0.1)
    load_checkpoint(tmp_path / "ck", target, fresh)
    assert len(fresh.state) == 4
    for p in target.parameters():
        state = fresh.state[p]
        assert set(state) == {"step", "exp_avg", "exp_avg_sq"}
        assert state["exp_avg"].device == p.device and state["exp_avg_sq"].device == p.device
        # torch keeps a non-fused, non-capturable AdamW's step count on the CPU
        assert state["step"].device.type == "cpu" and float(state["step"]) == 1.0


def test_resumed_moments_equal_the_saved_ones(tmp_path: Path) -> None:
    model, opt = _stepped()
    save_checkpoint(tmp_path / "ck", model, opt, TrainState(step=1))
    target, fresh = _stepped()
    with torch.no_grad():
        for p in target.parameters():
            p.zero_()
    fresh.state.clear()
    load_checkpoint(tmp_path / "ck", target, fresh)
    for (p, q) in zip(model.parameters(), target.parameters()):
        assert torch.equal(p, q)
        for key in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.equal(opt.state[p][key], fresh.state[q][key])


def test_training_never_runs_fp16_without_loss_scaling(monkeypatch) -> None:
    # fp16 autocast without a gradient scaler lets small gradients underflow to 0: training on
    # a GPU without bf16 runs fp32 by default, and asking for fp16 is refused in one line
    import pytest

    from seqrep.errors import ConfigError
    from seqrep.model.device import resolve_precision

    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    gpu = torch.device("cuda", 0)
    assert resolve_precision("auto", gpu, training=True) == "fp32"
    assert resolve_precision("auto", gpu) == "fp16"  # inference keeps fp16 there
    with pytest.raises(ConfigError, match="fp16") as err:
        resolve_precision("fp16", gpu, training=True)
    assert "\n" not in str(err.value)
    assert resolve_precision("fp16", gpu) == "fp16"
