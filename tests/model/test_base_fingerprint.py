"""A run that keeps no backbone (LoRA, QLoRA, frozen) names its base: a local base is recorded
as an absolute path with a fingerprint and checked on load (issue 37, item 13).

Before, ``--model`` was stored as typed: a relative path loaded only from the directory it was
trained in, and a different model at that path took the adapter and head without a word. The
other base here is the same tiny architecture with other random weights (same config, same
file sizes), the case a size-only check would miss.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from inprocess import seqrep
from support import make_tiny

from seqrep.errors import ModelError
from seqrep.model.labeler import SequenceLabeler

LABELS = ["O", "B-PER", "I-PER"]
WORDS = [["Obama", "visited", "Paris", "."]]


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two tiny llama folders alike in every file size, with different weights."""
    root = tmp_path_factory.mktemp("bases")
    return make_tiny(root / "a", "llama", 2, seed=0), make_tiny(root / "b", "llama", 2, seed=1)


def _saved(bases: tuple[Path, Path], where: Path, finetune: str) -> tuple[Path, Path]:
    """A labeler on a copy of base ``a`` typed as the relative path ``base``, saved from
    ``where``; returns (run folder, the base copy)."""
    base = shutil.copytree(bases[0], where / "base")
    cwd = os.getcwd()
    os.chdir(where)
    try:
        lab = SequenceLabeler.from_model("base", labels=LABELS, finetune=finetune,
                                         repetitions=1)
        run = lab.save_pretrained(where / "run")
    finally:
        os.chdir(cwd)
    return run, base


@pytest.mark.parametrize("finetune", ["frozen", "lora"])
def test_a_relative_base_loads_from_any_directory(bases, tmp_path: Path, finetune: str,
                                                  monkeypatch) -> None:
    run, base = _saved(bases, tmp_path, finetune)
    saved = json.loads((run / "config.json").read_text())
    assert saved["labeler"]["model"] == "base"  # the name as typed stays the name
    assert saved["base"]["path"] == str(base.resolve())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    lab = SequenceLabeler.from_pretrained(run)
    assert len(lab.word_logits(WORDS, docs=None)[0]) == 4


def test_another_base_at_the_path_is_refused_in_one_line(bases, tmp_path: Path) -> None:
    run, base = _saved(bases, tmp_path, "lora")
    shutil.rmtree(base)
    shutil.copytree(bases[1], base)  # same config and sizes, other weights
    with pytest.raises(ModelError, match="is not the base model this lora run was trained"):
        SequenceLabeler.from_pretrained(run)
    ran = seqrep("predict", str(run), "Obama visited Paris.")
    assert ran.returncode == 2, ran.stderr
    assert ran.stderr.count("\n") == 1 and "Traceback" not in ran.stderr
    assert "is not the base model" in ran.stderr


def test_a_missing_base_says_so_in_one_line(bases, tmp_path: Path) -> None:
    run, base = _saved(bases, tmp_path, "frozen")
    shutil.rmtree(base)
    ran = seqrep("predict", str(run), "Obama visited Paris.")
    assert ran.returncode == 2, ran.stderr
    assert ran.stderr.count("\n") == 1 and "Traceback" not in ran.stderr
    assert f"{base.resolve()}, which does not exist" in ran.stderr


def test_a_damaged_base_record_is_one_line(bases, tmp_path: Path) -> None:
    run, _ = _saved(bases, tmp_path, "frozen")
    cfg = run / "config.json"
    data = json.loads(cfg.read_text())
    for bad in ({"path": 3}, "base", {"path": str(tmp_path / "base"), "fingerprint": []}):
        cfg.write_text(json.dumps({**data, "base": bad}))
        with pytest.raises(ModelError, match=r"config\.json: base="):
            SequenceLabeler.from_pretrained(run)


def test_an_old_run_folder_without_a_fingerprint_still_loads(bases, tmp_path: Path,
                                                              monkeypatch) -> None:
    run, _ = _saved(bases, tmp_path, "lora")
    cfg = run / "config.json"
    data = json.loads(cfg.read_text())
    del data["base"]
    cfg.write_text(json.dumps(data))
    monkeypatch.chdir(tmp_path)  # where it was trained: the relative name resolves
    assert len(SequenceLabeler.from_pretrained(run).word_logits(WORDS, docs=None)[0]) == 4


def test_a_full_run_records_no_base(bases, tmp_path: Path) -> None:
    """A run that keeps its backbone needs no base; a packaged alias keeps its name (no path
    is recorded for it: see test_packaged)."""
    run, _ = _saved(bases, tmp_path, "full")
    assert "base" not in json.loads((run / "config.json").read_text())


def test_a_large_weight_file_is_sampled_not_read_whole(tmp_path: Path, monkeypatch) -> None:
    """A 4 MiB weight file: 16 blocks of 64 KiB are read (1 MiB), and a change at its start,
    at its end or in its size changes the fingerprint."""
    import builtins

    from seqrep.model.backbone import fingerprint

    (tmp_path / "config.json").write_text('{"model_type": "llama"}')
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(bytes(4 << 20))
    first = fingerprint(tmp_path)
    assert first["model.safetensors"]["bytes"] == 4 << 20
    read = []
    real_open = builtins.open

    def counting(*args, **kw):  # noqa: ANN002, ANN003, ANN202
        f = real_open(*args, **kw)
        real_read = f.read
        f.read = lambda n=-1: read.append(len(data := real_read(n))) or data
        return f

    monkeypatch.setattr(builtins, "open", counting)
    assert fingerprint(tmp_path) == first
    monkeypatch.undo()
    assert sum(read) == 16 * (1 << 16) + len('{"model_type": "llama"}')
    for offset in (0, (4 << 20) - 1):
        raw = bytearray(bytes(4 << 20))
        raw[offset] = 1
        weights.write_bytes(bytes(raw))
        assert fingerprint(tmp_path) != first
    weights.write_bytes(bytes((4 << 20) + 1))
    assert fingerprint(tmp_path)["model.safetensors"]["bytes"] == (4 << 20) + 1


def test_a_project_moved_whole_loads_by_the_typed_name_under_the_same_check(
        bases, tmp_path: Path, monkeypatch) -> None:
    """Run and base moved together: the recorded path is gone, the name as typed finds the
    base from the directory it was trained in, and it is checked all the same."""
    old = tmp_path / "old"
    old.mkdir()
    run, _ = _saved(bases, old, "lora")
    moved = shutil.move(str(old), str(tmp_path / "new"))
    monkeypatch.chdir(moved)
    moved_lab = SequenceLabeler.from_pretrained(Path(moved) / "run")
    assert len(moved_lab.word_logits(WORDS, docs=None)[0]) == 4
    shutil.rmtree(Path(moved) / "base")
    shutil.copytree(bases[1], Path(moved) / "base")
    with pytest.raises(ModelError, match="is not the base model this lora run"):
        SequenceLabeler.from_pretrained(Path(moved) / "run")
