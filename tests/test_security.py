"""A downloaded run folder never runs code: remote code only when the caller asks, and only
safetensors weights are read (issue 11)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from support import cli

from seqrep.errors import ModelError
from seqrep.model.labeler import SequenceLabeler

LABELS = ["O", "B-PER", "I-PER"]
PAYLOAD = """import pathlib
pathlib.Path({marker!r}).write_text("ran")
from transformers import LlamaConfig
class EvilConfig(LlamaConfig):
    model_type = "evil"
"""


@pytest.fixture()
def saved(tiny, tmp_path: Path) -> Path:
    """A fully fine-tuned labeler folder (its own backbone weights)."""
    lab = SequenceLabeler.from_model(tiny("llama"), labels=LABELS, finetune="full")
    return lab.save_pretrained(tmp_path / "labeler")


def poison(folder: Path, marker: Path) -> None:
    """What an attacker ships: trust_remote_code in the labeler config, an auto_map and a
    configuration module that writes ``marker`` when imported."""
    cfg = json.loads((folder / "config.json").read_text())
    cfg["labeler"]["trust_remote_code"] = True
    (folder / "config.json").write_text(json.dumps(cfg))
    bb = json.loads((folder / "backbone" / "config.json").read_text())
    bb["auto_map"] = {"AutoConfig": "configuration_evil.EvilConfig"}
    bb["model_type"] = "evil"  # only the shipped code knows it
    (folder / "backbone" / "config.json").write_text(json.dumps(bb))
    (folder / "backbone" / "configuration_evil.py").write_text(PAYLOAD.format(marker=str(marker)))


def test_remote_code_never_runs_because_a_folder_says_so(saved: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture) -> None:
    marker = tmp_path / "pwned"
    poison(saved, marker)
    with pytest.raises(ModelError, match="--trust-remote-code"):
        SequenceLabeler.from_pretrained(saved)
    assert not marker.exists()
    words = "Obama visited Paris"
    # the commands in this process (the console script's entry point): an exception other
    # than the exit would fail the test with its traceback, and the payload, imported here,
    # would write the marker just as in a child process
    for args in (["predict", str(saved), words],
                 ["evaluate", str(saved), "--dataset", str(tmp_path / "none.txt")]):
        code, _, err = cli(capsys, *args)
        assert code == 2, err
        assert "Traceback" not in err and err.startswith("error: ")
        assert not marker.exists()


def test_bin_only_weights_are_refused_before_unpickling(saved: Path, tiny, tmp_path: Path,
                                                        monkeypatch) -> None:
    def no_unpickling(*a, **k):  # noqa: ANN002, ANN003
        raise AssertionError("torch.load was called")

    # a backbone with only pytorch_model.bin
    (saved / "backbone" / "model.safetensors").unlink()
    torch.save({"x": torch.zeros(1)}, saved / "backbone" / "pytorch_model.bin")
    monkeypatch.setattr(torch, "load", no_unpickling)
    with pytest.raises(ModelError, match="pytorch_model.bin"):
        SequenceLabeler.from_pretrained(saved)
    # a LoRA adapter with only adapter_model.bin
    monkeypatch.undo()
    lora = SequenceLabeler.from_model(tiny("llama"), labels=LABELS, finetune="lora")
    folder = lora.save_pretrained(tmp_path / "lora")
    (folder / "adapter" / "adapter_model.safetensors").unlink()
    torch.save({}, folder / "adapter" / "adapter_model.bin")
    monkeypatch.setattr(torch, "load", no_unpickling)
    with pytest.raises(ModelError, match="adapter_model.bin"):
        SequenceLabeler.from_pretrained(folder)
    # a base model folder with only pickles
    base = tmp_path / "base"
    shutil.copytree(tiny("llama"), base)
    (base / "model.safetensors").unlink()
    (base / "pytorch_model.bin").write_bytes(b"not even read")
    with pytest.raises(ModelError, match="no safetensors"):
        SequenceLabeler.from_model(str(base), labels=LABELS)


def test_the_caller_may_trust_remote_code(saved: Path, tmp_path: Path) -> None:
    """The explicit argument is honoured: the code runs (so the flag is not a no-op)."""
    marker = tmp_path / "ran"
    poison(saved, marker)
    with pytest.raises(ModelError):  # the payload's config class is not a real model
        SequenceLabeler.from_pretrained(saved, trust_remote_code=True)
    assert marker.exists()
