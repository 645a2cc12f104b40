"""The optimisation state: checkpointed AdamW moments, the step count of the lr schedule, the
loss normalisation and the precision of training."""

from __future__ import annotations

from pathlib import Path

import pytest
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


LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
VOCAB = ["Obama", "visited", "Paris", "and", "Berlin", "last", "week", "Peter", "reports",
         "from", "Brussels", "the", "city", "of", "."]


def _sentences(n: int, seed: int = 0) -> list:
    import random

    from seqrep.data.types import Sentence

    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = [rng.choice(VOCAB) for _ in range(rng.randint(1, 30))]
        out.append(Sentence(tuple(words), tuple(rng.choice(LABELS[:2]) if i == 0 else "O"
                                                for i in range(len(words)))))
    return out


def _trainer(tiny, tmp_path: Path, sentences: list, **train_kw):
    from seqrep.config import LabelerConfig, TrainConfig
    from seqrep.data.splits import TrainData
    from seqrep.train.loop import Trainer

    lab = LabelerConfig(model=tiny("llama", 1), labels=LABELS, task="spans", repetitions=1,
                        finetune="frozen", dropout=0.0)
    cfg = TrainConfig(dataset="unused", seed=3, device="cpu", precision="fp32", **train_kw)
    return Trainer(lab, cfg, tmp_path, TrainData(sentences, sentences[:2]), quiet=True)


def test_step_gradient_is_the_word_sum_over_the_steps_words(tiny, tmp_path: Path) -> None:
    # one step of two batches with 3 and 5 + 7 words: the gradient must be that of the summed
    # cross-entropy over all 15 words divided by 15, whatever the batches' sizes
    words = [VOCAB[:3], VOCAB[3:8], VOCAB[8:15]]
    from seqrep.data.types import Sentence

    data = [Sentence(tuple(w), tuple(["B-PER"] + ["O"] * (len(w) - 1))) for w in words]
    trainer = _trainer(tiny, tmp_path, data, grad_accum=2, batch_size=2)
    assert [len(it.segment.words) for it in trainer.items] == [3, 5, 7]
    head = list(trainer.labeler.head.parameters())
    got: list[torch.Tensor] = []
    trainer._step = lambda: got.extend(p.grad.clone() for p in head)  # capture, no update
    trainer._train_step([[0], [1, 2]])
    # by hand: -log softmax at the gold label, summed over the words, divided by the words
    total = torch.zeros(())
    for idx in ([0], [1, 2]):
        batch = trainer.encoder.collate([trainer.items[i] for i in idx])
        logits = trainer.labeler(batch)
        total = total - logits.log_softmax(-1).gather(1, batch.labels[:, None]).sum()
    want = torch.autograd.grad(total / 15, head)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-7)


def test_last_step_of_a_token_budget_run_has_a_learning_rate(tiny, tmp_path: Path) -> None:
    # with --batch-tokens the shuffled epochs close more batches than the sorted plan; the
    # schedule must count the epochs' own plans, so no step runs at lr 0
    import math

    from seqrep.encode.batch import length_batches

    data = _sentences(300)
    trainer = _trainer(tiny, tmp_path, data, epochs=2, batch_size=2, batch_tokens=64, lr=1.0,
                       head_lr=1.0)
    lengths = [len(it.segment) for it in trainer.items]
    sorted_plan = len(length_batches(lengths, 2, batch_tokens=64))
    plans = [len(length_batches(lengths, 2, shuffle=True, seed=3 * 1000 + e, batch_tokens=64))
             for e in range(2)]
    assert sum(plans) > 2 * sorted_plan  # the case that matters: shuffled epochs are longer
    rates: list[float] = []

    def step(group: list) -> None:
        trainer._step()
        rates.append(trainer.optimizer.param_groups[0]["lr"])

    trainer._train_step = step
    trainer._after_step = lambda last_of_epoch: False  # no evaluation or checkpoint
    trainer.run()
    assert len(rates) == sum(plans)  # one step per batch (grad_accum 1, one process)
    # linear decay from 1 over the run's own steps: step s runs at (n - s) / n, the last at 1/n
    n = sum(plans)
    assert rates == [pytest.approx((n - s) / n) for s in range(n)]
    assert math.isclose(rates[-1], 1 / n)


def test_a_state_or_run_file_past_its_bound_is_refused_unparsed(tmp_path: Path) -> None:
    from seqrep.config import LabelerConfig, TrainConfig
    from seqrep.errors import SeqrepError
    from seqrep.files.atomic import write_json
    from seqrep.train.folder import read_run_json

    model, opt = _stepped()
    (tmp_path / "checkpoint").mkdir()
    # valid JSON padded past 16 MiB (1 << 24 bytes): refused for its size, before parsing
    (tmp_path / "checkpoint" / "state.json").write_text("{}" + " " * (1 << 24))
    with pytest.raises(SeqrepError, match="larger than 16777216 bytes"):
        load_checkpoint(tmp_path / "checkpoint", model, opt)
    # a valid run.json padded past 1 MiB (1 << 20 bytes) is no run.json either
    write_json(tmp_path / "run.json", {"labeler": LabelerConfig().to_dict(),
                                       "train": TrainConfig().to_dict()})
    read_run_json(tmp_path)  # the same content unpadded is one
    with open(tmp_path / "run.json", "a") as f:
        f.write(" " * (1 << 20))
    with pytest.raises(SeqrepError, match="larger than 1048576 bytes"):
        read_run_json(tmp_path)
