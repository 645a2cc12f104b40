"""Fine-tuning modes are one table (``seqrep.model.tuning.MODES``): a mode registered there,
and nowhere else, is a config choice with its own rates, trains, saves and reloads end to end.

The mode here, ``bias-only``, trains the backbone's bias terms and the head, on a tiny random
Qwen2 (whose q, k, v projections have biases). Expected values come from the tensors
themselves: a copy taken before the step, and the base model read straight from its folder by
transformers, never from the table or the labeler's own bookkeeping.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch
from support import train_configs, write_corpus
from torch import nn

from seqrep.config import LabelerConfig, TrainConfig
from seqrep.errors import ConfigError
from seqrep.model import tuning
from seqrep.model.labeler import SequenceLabeler
from seqrep.train import train

LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
SENTS = [["Obama", "visited", "Paris", "."], ["Maria", "left", "the", "city", "of", "Tokyo"]]
RATE, HEAD_RATE = 7e-3, 3e-2  # bias-only's default rates: none of the built-in modes' rates


def _bias_only(backbone: nn.Module, config: object) -> nn.Module:
    for name, p in backbone.named_parameters():
        p.requires_grad_(name.endswith("bias"))
    return backbone


def _register(monkeypatch: pytest.MonkeyPatch) -> str:
    """Put bias-only in the table (for this test only): the one place a mode is added."""
    mode = tuning.Mode("bias-only", "bias terms and the head", _bias_only, lr=RATE,
                       head_lr=HEAD_RATE, saves_backbone=True)
    monkeypatch.setitem(tuning.MODES, mode.name, mode)
    return mode.name


@pytest.fixture()
def bias_only(monkeypatch: pytest.MonkeyPatch) -> str:
    return _register(monkeypatch)


def test_a_mode_is_a_config_choice_once_in_the_table(monkeypatch) -> None:
    with pytest.raises(ConfigError, match="finetune='bias-only'; expected one of full, lora"):
        LabelerConfig(finetune="bias-only")
    _register(monkeypatch)
    assert LabelerConfig(finetune="bias-only").finetune == "bias-only"
    resolved = TrainConfig().resolved("bias-only")
    assert (resolved.lr, resolved.head_lr) == (RATE, HEAD_RATE)
    assert TrainConfig(lr=1e-4).resolved("bias-only").lr == 1e-4  # a given rate still wins


def test_the_built_in_modes_keep_their_default_rates() -> None:
    """The rates an unset --lr / --head-lr take, written out as config.py's DEFAULT_LR and
    DEFAULT_HEAD_LR held them before the table: full 5e-5 (the README's CPU recipe), lora and
    qlora 2e-4 (the paper's), frozen 5e-5; the head 1e-3 in every mode. --lr's help lists
    them."""
    expected = {"full": (5e-5, 1e-3), "lora": (2e-4, 1e-3), "qlora": (2e-4, 1e-3),
                "frozen": (5e-5, 1e-3)}
    for mode, rates in expected.items():
        resolved = TrainConfig().resolved(mode)
        assert (resolved.lr, resolved.head_lr) == rates, mode
    helps = {f.name: f.metadata["help"] for f in dataclasses.fields(TrainConfig)}
    assert "(unset: by --finetune: full 5e-5, lora 2e-4, qlora 2e-4, frozen 5e-5)" in helps["lr"]
    assert helps["head_lr"].endswith("(unset: 1e-3)")


def test_one_step_moves_the_biases_and_the_head_only_and_the_folder_keeps_them(
        tiny, bias_only: str, tmp_path: Path) -> None:
    lab = SequenceLabeler.from_model(tiny("qwen2"), labels=LABELS, finetune=bias_only,
                                     repetitions=1, exit_layer=3, dropout=0.0)
    names = [n for n, _ in lab.named_parameters()]
    expected = {n for n in names if n.endswith(".bias") or n.startswith("head.")}
    assert any("q_proj.bias" in n for n in expected) and "head.linear.weight" in expected
    before = {n: p.detach().clone() for n, p in lab.named_parameters()}
    batch, _ = next(iter(lab.batches(SENTS, 8, None)))
    logits = lab(batch)
    gold = torch.arange(logits.shape[0]) % len(LABELS)
    nn.functional.cross_entropy(logits, gold).backward()
    with torch.no_grad():  # plain SGD by hand over every parameter that received a gradient
        for p in lab.parameters():
            if p.grad is not None:
                p -= 1.0 * p.grad
    after = dict(lab.named_parameters())
    changed = {n for n in names if not torch.equal(before[n], after[n])}
    assert changed == expected

    lab.eval()
    lab.save_pretrained(tmp_path / "saved")
    assert (tmp_path / "saved" / "backbone").is_dir()
    assert not (tmp_path / "saved" / "adapter").exists()
    back = SequenceLabeler.from_pretrained(tmp_path / "saved")
    assert back.config.finetune == bias_only
    got = dict(back.named_parameters())
    assert set(got) == set(after)
    for n in names:
        assert torch.equal(got[n], after[n]), n
    for x, y in zip(back.word_logits(SENTS, docs=None), lab.word_logits(SENTS, docs=None)):
        assert torch.equal(x, y)


@pytest.mark.parametrize("mode", ["full", "lora"])
def test_a_reloaded_labeler_trains_nothing(tiny, tmp_path: Path, mode: str) -> None:
    """A saved labeler is rebuilt in a mode that adds nothing and trains nothing before its
    own weights go on (tuning.REBUILT): no backbone weight of the reloaded model, a full run's
    or a LoRA adapter's, asks for a gradient."""
    lab = SequenceLabeler.from_model(tiny("llama"), labels=LABELS, finetune=mode,
                                     repetitions=1, exit_layer=3)
    assert any(p.requires_grad for p in lab.backbone.parameters())
    lab.save_pretrained(tmp_path / "saved")
    back = SequenceLabeler.from_pretrained(tmp_path / "saved")
    assert back.config.finetune == mode
    assert not [n for n, p in back.backbone.named_parameters() if p.requires_grad]


def test_a_run_trains_with_the_modes_rates_and_reloads(tiny, bias_only: str,
                                                      tmp_path: Path) -> None:
    model = tiny("qwen2")
    corpus = (str(write_corpus(tmp_path / "train.txt", 24)),
              str(write_corpus(tmp_path / "test.txt", 6, seed=1)))
    lab_cfg, train_cfg = train_configs(model, corpus, finetune=bias_only, epochs=1)
    train_cfg = train_cfg.replace(lr=None, head_lr=None)  # the mode's rates
    out = tmp_path / "run"
    metrics = train(lab_cfg, train_cfg, out, quiet=True)
    assert metrics["status"] == "finished"
    recorded = json.loads((out / "run.json").read_text())["train"]
    assert (recorded["lr"], recorded["head_lr"]) == (RATE, HEAD_RATE)

    best = SequenceLabeler.from_pretrained(out)
    assert best.config.finetune == bias_only
    from transformers import AutoModel

    base = dict(AutoModel.from_pretrained(model).named_parameters())
    saved = dict(best.backbone.named_parameters())
    assert set(saved) <= set(base) and len(saved) < len(base)  # the cut: 3 of 4 layers
    changed = {n for n, t in saved.items() if not torch.equal(t, base[n])}
    assert changed and all(n.endswith(".bias") for n in changed), sorted(changed)
    head = len(best.config.labels) * (best.backbone_info.hidden_size + 1)
    biases = sum(t.numel() for n, t in saved.items() if n.endswith(".bias"))
    assert metrics["trainable_parameters"] == biases + head


def test_a_config_names_its_mode_and_training_takes_the_mode_itself(monkeypatch) -> None:
    """The mode is looked up in the table once, as the config's ``mode``, and passed on as
    that object: the rates come from the object handed over, even one the table lacks."""
    assert LabelerConfig(finetune="lora").mode is tuning.MODES["lora"]
    unlisted = tuning.Mode("unlisted", "in no table", _bias_only, lr=RATE, head_lr=HEAD_RATE)
    resolved = TrainConfig().resolved(unlisted)
    assert (resolved.lr, resolved.head_lr) == (RATE, HEAD_RATE)
