"""A shared run folder never runs code and never costs data (issue 20): resume takes
trust_remote_code only from the caller, export and --overwrite replace only what seqrep made,
weights load only from the exact safetensors file each loader reads, and weights are shared
like the rest of the run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support import cli, write_corpus

PAYLOAD = """import pathlib
pathlib.Path({marker!r}).write_text("ran")
from transformers import LlamaConfig
class EvilConfig(LlamaConfig):
    model_type = "evil"
"""


def evil_model(tiny, root: Path, marker: Path) -> Path:
    """A model folder whose configuration module writes ``marker`` when imported."""
    folder = root / "evil-model"
    shutil.copytree(tiny("llama"), folder)
    cfg = json.loads((folder / "config.json").read_text())
    cfg["auto_map"] = {"AutoConfig": "configuration_evil.EvilConfig"}
    cfg["model_type"] = "evil"
    (folder / "config.json").write_text(json.dumps(cfg))
    (folder / "configuration_evil.py").write_text(PAYLOAD.format(marker=str(marker)))
    return folder


def unfinished_run(root: Path, model: Path, dataset: Path) -> Path:
    """What an attacker shares: a run folder without metrics.json whose run.json asks for
    remote code."""
    run = root / "shared-run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({
        "labeler": {"model": str(model), "trust_remote_code": True, "repetitions": 1,
                    "exit_layer": 2, "labels": ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]},
        "train": {"dataset": str(dataset), "test_split": None, "epochs": 1, "batch_size": 8},
        "reader_options": {}}))
    return run


def test_resume_never_takes_trust_remote_code_from_the_folder(tiny, tmp_path: Path,
                                                              capsys) -> None:
    marker = tmp_path / "pwned"
    model = evil_model(tiny, tmp_path, marker)
    run = unfinished_run(tmp_path, model, write_corpus(tmp_path / "train.txt", 20))
    code, _, err = cli(capsys, "train", "--resume", "-o", str(run), "--quiet")
    assert not marker.exists()
    assert code == 2, err
    lines = err.strip().splitlines()
    # the model taken from the folder is named before it is loaded, then one error line
    assert str(model) in lines[0] and "run.json" in lines[0]
    assert "--trust-remote-code" in lines[-1] and "Traceback" not in err


def test_grid_resume_never_takes_trust_remote_code_from_the_folder(tiny, tmp_path: Path
                                                                   ) -> None:
    from seqrep.config import LabelerConfig, TrainConfig
    from seqrep.errors import SeqrepError
    from seqrep.lab.grid import GridRun, execute

    marker = tmp_path / "pwned"
    model = evil_model(tiny, tmp_path, marker)
    data = write_corpus(tmp_path / "train.txt", 20)
    run = unfinished_run(tmp_path, model, data)
    # the grid asks for the tiny model without remote code; the folder says otherwise
    grid_run = GridRun(LabelerConfig(model=tiny("llama"), repetitions=1, exit_layer=2),
                       TrainConfig(dataset=str(data), test_split=None, epochs=1,
                                   batch_size=8).resolved("full"))
    with pytest.raises(SeqrepError, match="run.json"):
        execute(grid_run, run)
    assert not marker.exists()
    # the same folder naming the evil model as the grid does: still no remote code
    grid_run = GridRun(grid_run.labeler.replace(model=str(model)), grid_run.train)
    with pytest.raises(SeqrepError, match="--trust-remote-code"):
        execute(grid_run, run)
    assert not marker.exists()


@pytest.mark.parametrize("content", ['{"labeler": {}}', "not json", '{"labeler": {"model": '
                                     '"x"}, "train": {"epochs": "many"}}', "[]"])
def test_overwrite_deletes_only_a_seqrep_run(tiny, tmp_path: Path, capsys, content: str
                                             ) -> None:
    folder = tmp_path / "thesis"
    folder.mkdir()
    (folder / "run.json").write_text(content)
    (folder / "chapter1.tex").write_text("years of work")
    data = write_corpus(tmp_path / "train.txt", 12)
    code, _, err = cli(capsys, "train", "--model", tiny("llama"), "--dataset", str(data),
                       "--test-split", "", "--epochs", "1", "--exit-layer", "1", "-o",
                       str(folder), "--overwrite", "--quiet")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "seqrep did not write it" in err and "--overwrite" in err
    assert (folder / "chapter1.tex").read_text() == "years of work"
    assert (folder / "run.json").read_text() == content


LABELS = ["O", "B-PER", "I-PER"]


@pytest.fixture(scope="module")
def labeler_dir(tiny, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saved tiny labeler (r = 0, frozen: the base model is referenced, not copied)."""
    from seqrep.model.labeler import SequenceLabeler

    root = tmp_path_factory.mktemp("labeler")
    lab = SequenceLabeler.from_model(tiny("llama"), labels=LABELS, repetitions=0,
                                     finetune="full", exit_layer=2)
    return lab.save_pretrained(root / "labeler")


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def test_export_replaces_only_a_previous_export(labeler_dir: Path, tmp_path: Path,
                                                capsys) -> None:
    pytest.importorskip("onnxscript")
    papers = tmp_path / "papers"
    papers.mkdir()
    (papers / "draft.tex").write_text("unrelated work")
    run = shutil.copytree(labeler_dir, tmp_path / "run")
    before = _tree(run)
    (tmp_path / "afile").write_text("a file")
    for target, why, more in (
            (papers, "pass --overwrite", []), (papers, "seqrep did not write it",
                                               ["--overwrite"]),
            (run, "the run", ["--overwrite"]), (run / "onnx", "the run", []),
            (tmp_path / "afile", "is a file", ["--overwrite"]), (tmp_path, "the run", [])):
        code, _, err = cli(capsys, "export", str(run), "--onnx", str(target), "--no-check",
                           *more)
        assert code == 2 and len(err.strip().splitlines()) == 1, (target, err)
        assert why in err and "Traceback" not in err
    assert (papers / "draft.tex").read_text() == "unrelated work"
    assert _tree(run) == before and not (run / "onnx").exists()
    assert (tmp_path / "afile").read_text() == "a file"


def test_only_a_folder_seqrep_wrote_whole_may_be_replaced(tmp_path: Path) -> None:
    """A folder counts as an earlier export only when its manifest lists every file in it:
    a planted 26-byte seqrep-onnx.json no longer makes a project folder replaceable."""
    from seqrep.errors import SeqrepError
    from seqrep.export.files import META_FILE
    from seqrep.export.onnx import check_export_target

    old = tmp_path / "old"
    old.mkdir()
    (old / META_FILE).write_text(json.dumps({"format": "seqrep-onnx"}))
    (old / "src").mkdir()
    (old / "src" / "main.py").write_text("print('mine')")
    (old / ".seqrep-files.json").write_text(json.dumps(
        {"format": "seqrep-files", "kind": "onnx-export", "files": [META_FILE]}))
    empty = tmp_path / "empty"
    empty.mkdir()
    for ok in (empty, tmp_path / "new"):
        check_export_target(ok, tmp_path / "run")
    with pytest.raises(SeqrepError, match="src/main.py was not written by seqrep"):
        check_export_target(old, tmp_path / "run", overwrite=True)
    (old / "src" / "main.py").unlink()
    (old / "src").rmdir()
    check_export_target(old, tmp_path / "run", overwrite=True)
    (old / ".seqrep-files.json").unlink()
    with pytest.raises(SeqrepError, match="has no .seqrep-files.json"):
        check_export_target(old, tmp_path / "run", overwrite=True)


@pytest.fixture(scope="module")
def lora_dir(tiny, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from seqrep.model.labeler import SequenceLabeler

    root = tmp_path_factory.mktemp("lora")
    lab = SequenceLabeler.from_model(tiny("llama"), labels=LABELS, repetitions=0,
                                     finetune="lora", exit_layer=2)
    return lab.save_pretrained(root / "labeler")


def _no_unpickling(*a, **k):  # noqa: ANN002, ANN003, ANN202
    raise AssertionError("torch.load was called")


def test_a_decoy_safetensors_beside_a_pickle_is_refused(labeler_dir: Path, lora_dir: Path,
                                                        tmp_path: Path, monkeypatch) -> None:
    import torch

    from seqrep.errors import ModelError
    from seqrep.model.labeler import SequenceLabeler

    lora = shutil.copytree(lora_dir, tmp_path / "lora")
    (lora / "adapter" / "adapter_model.safetensors").rename(lora / "adapter" / "x.safetensors")
    torch.save({}, lora / "adapter" / "adapter_model.bin")
    full = shutil.copytree(labeler_dir, tmp_path / "full")
    (full / "backbone" / "model.safetensors").rename(full / "backbone" / "x.safetensors")
    torch.save({}, full / "backbone" / "pytorch_model.bin")
    monkeypatch.setattr(torch, "load", _no_unpickling)
    with pytest.raises(ModelError, match="no adapter_model.safetensors.*adapter_model.bin"):
        SequenceLabeler.from_pretrained(lora)
    with pytest.raises(ModelError, match="no model.safetensors.*pytorch_model.bin"):
        SequenceLabeler.from_pretrained(full)


def test_the_adapter_loader_never_falls_back_to_pickle(lora_dir: Path, monkeypatch) -> None:
    """peft's loaders read adapter_model.bin when the safetensors file is missing; seqrep
    reads the adapter's safetensors itself and never calls them."""
    import peft
    import peft.peft_model
    import peft.utils.save_and_load
    import torch

    from seqrep.model.labeler import SequenceLabeler

    reference = SequenceLabeler.from_pretrained(lora_dir)
    for mod in (peft, peft.peft_model, peft.utils.save_and_load):
        if hasattr(mod, "load_peft_weights"):
            monkeypatch.setattr(mod, "load_peft_weights", _no_unpickling)
    monkeypatch.setattr(peft.PeftModel, "from_pretrained", _no_unpickling)
    monkeypatch.setattr(torch, "load", _no_unpickling)
    lab = SequenceLabeler.from_pretrained(lora_dir)
    # every adapter weight came from the file: same as the saved tensors
    from safetensors.torch import load_file

    saved = load_file(str(lora_dir / "adapter" / "adapter_model.safetensors"))
    state = {k: v for k, v in lab.backbone.state_dict().items() if "lora_" in k}
    assert len(state) == len(saved) > 0
    for key, value in saved.items():
        got = [v for k, v in state.items() if k.replace(".default", "") == key]
        assert len(got) == 1 and torch.equal(got[0], value), key
    words = [["Obama", "visited", "Paris"]]
    assert torch.equal(lab.word_logits(words, docs=None)[0],
                       reference.word_logits(words, docs=None)[0])


def test_a_run_backbone_missing_weights_fails_in_one_line(labeler_dir: Path, tmp_path: Path,
                                                          capsys) -> None:
    from safetensors.torch import load_file, save_file

    from seqrep.errors import ModelError
    from seqrep.model.labeler import SequenceLabeler

    gap = shutil.copytree(labeler_dir, tmp_path / "gap")
    weights = load_file(str(gap / "backbone" / "model.safetensors"))
    save_file({k: v for k, v in weights.items() if ".1." not in k},
              str(gap / "backbone" / "model.safetensors"), metadata={"format": "pt"})
    other = shutil.copytree(labeler_dir, tmp_path / "other")
    cfg = json.loads((other / "backbone" / "config.json").read_text())
    cfg["model_type"] = "qwen2"  # qwen2 has q/k/v biases the saved llama weights lack
    (other / "backbone" / "config.json").write_text(json.dumps(cfg))
    for folder in (gap, other):
        with pytest.raises(ModelError, match="missing"):
            SequenceLabeler.from_pretrained(folder)
        code, _, err = cli(capsys, "predict", str(folder), "Obama visited Paris")
        assert code == 2 and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_weights_are_shared_like_the_rest_of_the_run(labeler_dir: Path, lora_dir: Path,
                                                     tmp_path: Path, umask: int) -> None:
    """Every file of a saved labeler and of a checkpoint gets the mode the umask gives any
    new file (0644 under 022), so another account can load a shared run."""
    import os
    import stat

    import torch

    from seqrep.model.labeler import SequenceLabeler
    from seqrep.train.checkpoint import save_checkpoint
    from seqrep.train.state import TrainState

    old = os.umask(umask)
    try:
        written = []
        for src in (labeler_dir, lora_dir):
            lab = SequenceLabeler.from_pretrained(src)
            written.append(lab.save_pretrained(tmp_path / f"copy-{src.parent.name}"))
        opt = torch.optim.AdamW([p for p in lab.parameters() if p.requires_grad])
        save_checkpoint(tmp_path / "checkpoint", lab, opt, TrainState())
        written.append(tmp_path / "checkpoint")
    finally:
        os.umask(old)
    modes = {str(p): stat.S_IMODE(p.stat().st_mode) for folder in written
             for p in [folder, *folder.rglob("*")]}
    assert any(p.endswith("model.safetensors") for p in modes)
    assert any(p.endswith("trainable.safetensors") for p in modes)
    for path, mode in modes.items():
        expected = (0o777 if Path(path).is_dir() else 0o666) & ~umask
        assert mode == expected, (path, oct(mode))


@pytest.mark.parametrize("name", ["state.json", "run.json"])
def test_a_resume_file_linked_to_dev_zero_is_one_line(tmp_path: Path, name: str) -> None:
    """A checkpoint or run.json that is a link to an endless device is refused, not read
    until memory runs out."""
    import torch

    from seqrep.config import LabelerConfig, TrainConfig
    from seqrep.errors import SeqrepError
    from seqrep.train.checkpoint import load_checkpoint
    from seqrep.train.folder import resumed_config

    run = tmp_path / "run"
    (run / "checkpoint").mkdir(parents=True)
    if name == "state.json":
        (run / "checkpoint" / name).symlink_to("/dev/zero")
        model = torch.nn.Linear(2, 2)
        with pytest.raises(SeqrepError, match="state.json"):
            load_checkpoint(run / "checkpoint", model, torch.optim.AdamW(model.parameters()))
    else:
        (run / name).symlink_to("/dev/zero")
        with pytest.raises(SeqrepError, match="run.json"):
            resumed_config(run, LabelerConfig(), TrainConfig())
