"""Training, saving, resuming and scoring on a tiny random model and a synthetic corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from support import train_configs as configs

from seqrep.model.labeler import SequenceLabeler
from seqrep.train import train


def test_training_lowers_loss_and_writes_a_run(tiny, corpus, tmp_path: Path) -> None:
    out = tmp_path / "run"
    metrics = train(*configs(tiny("llama"), corpus), out, quiet=True)
    log = [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines()]
    assert len(log) == 3
    assert log[-1]["train_loss"] < log[0]["train_loss"] * 0.7
    assert metrics["status"] == "finished" and 0 <= metrics["test"]["f1"] <= 1
    assert {"precision", "recall", "f1", "per_label", "sentences", "seconds"} <= set(
        metrics["test"])
    saved = json.loads((out / "run.json").read_text())
    assert saved["labeler"]["labels"] == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    assert not (out / "checkpoint").exists()  # removed once the run is complete
    head = load_file(str(out / "best" / "head.safetensors"))
    assert all(t.dtype == torch.float32 for t in head.values())


@pytest.mark.parametrize("finetune", ["lora", "full", "frozen"])
def test_save_load_predict_identical(tiny, corpus, tmp_path: Path, finetune: str) -> None:
    out = tmp_path / "run"
    train(*configs(tiny("qwen3"), corpus, finetune, epochs=1), out, quiet=True)
    first = SequenceLabeler.from_pretrained(out / "best")
    again = tmp_path / "copy"
    first.save_pretrained(again)
    second = SequenceLabeler.from_pretrained(again)
    sents = [["Obama", "visited", "the", "city", "of", "Paris", "."], ["Maria", "left"]]
    for a, b in zip(first.word_logits(sents, docs=None), second.word_logits(sents, docs=None)):
        assert torch.equal(a, b)
    assert second.config == first.config
    files = {p.name for p in (out / "best").iterdir()}
    expected = {"lora": "adapter", "full": "backbone", "frozen": None}[finetune]
    assert ("adapter" in files) == (expected == "adapter")
    assert ("backbone" in files) == (expected == "backbone")
    assert not any(p.suffix in (".bin", ".pt", ".pkl") for p in (out / "best").rglob("*"))


def test_resume_equals_uninterrupted(tiny, corpus, tmp_path: Path) -> None:
    lab, cfg = configs(tiny("llama"), corpus, "lora", epochs=2, grad_accum=2)
    full = train(lab, cfg, tmp_path / "a", quiet=True)
    first = train(lab, cfg.replace(max_steps=3), tmp_path / "b", quiet=True)
    assert first["status"] == "interrupted"
    assert (tmp_path / "b" / "checkpoint" / "state.json").exists()
    resumed = train(lab, cfg, tmp_path / "b", resume=True, quiet=True)
    assert resumed["validation"]["f1"] == full["validation"]["f1"]
    assert resumed["test"]["f1"] == full["test"]["f1"]
    for name in ("head.safetensors", "adapter/adapter_model.safetensors"):
        a = load_file(str(tmp_path / "a" / "best" / name))
        b = load_file(str(tmp_path / "b" / "best" / name))
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_existing_run_is_not_clobbered(tiny, corpus, tmp_path: Path) -> None:
    from seqrep.errors import SeqrepError

    out = tmp_path / "run"
    out.mkdir()
    (out / "something").write_text("x")
    with pytest.raises(SeqrepError, match="--overwrite"):
        train(*configs(tiny("llama"), corpus, epochs=1), out, quiet=True)
    with pytest.raises(SeqrepError, match="nothing to resume"):
        train(*configs(tiny("llama"), corpus, epochs=1), out, resume=True, quiet=True)


@pytest.mark.slow
def test_compiled_training_matches_and_saves_plain_names(tiny, corpus, tmp_path: Path) -> None:
    """--compile: torch.compile of the backbone in place trains to the same losses (within
    float noise of fused kernels) and saves the same parameter names as an eager run."""
    lab, cfg = configs(tiny("llama"), corpus, epochs=1)
    # one layer: inductor's compile time grows with the graph, and one layer shows the same
    # guarantee (with a cold cache, 109.5 s for the usual three in a fresh clone's test run)
    lab = lab.replace(exit_layer=1)
    eager = train(lab, cfg, tmp_path / "eager", quiet=True)
    from torch._dynamo.utils import counters

    counters.clear()
    compiled = train(lab, cfg.replace(compile=True), tmp_path / "compiled", quiet=True)
    assert compiled["status"] == "finished"
    assert counters["stats"]["unique_graphs"] >= 1  # dynamo really traced the backbone
    assert compiled["validation"]["train_loss"] == pytest.approx(
        eager["validation"]["train_loss"], rel=1e-3)
    name = "backbone/model.safetensors"
    a = load_file(str(tmp_path / "eager" / "best" / name))
    b = load_file(str(tmp_path / "compiled" / "best" / name))
    assert a.keys() == b.keys() and not any("_orig_mod" in k for k in b)
    assert max((a[k] - b[k]).abs().max().item() for k in a) < 1e-3
    saved = json.loads((tmp_path / "compiled" / "run.json").read_text())
    assert saved["train"]["compile"] is True
