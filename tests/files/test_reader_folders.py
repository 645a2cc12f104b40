"""The one reader on run and labeler folders and ONNX exports: no link leaves the folder
(a copy of the very same file outside, linked in, is refused), a link inside it is fine."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from seqrep.errors import ModelError

LABELS = ["O", "B-PER", "I-PER"]


@pytest.fixture(scope="module")
def saved(tiny, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from seqrep.model.labeler import SequenceLabeler

    root = tmp_path_factory.mktemp("reader-folders")
    lab = SequenceLabeler.from_model(tiny("llama"), labels=LABELS, repetitions=0,
                                     finetune="full", exit_layer=2)
    return lab.save_pretrained(root / "labeler")


def _link_out(folder: Path, rel: str, outside: Path) -> None:
    """Replace ``folder/rel`` by a link to a byte-identical copy outside the folder."""
    target = outside / Path(rel).name
    shutil.copy(folder / rel, target)
    (folder / rel).unlink()
    os.symlink(target, folder / rel)


def test_a_labeler_folder_with_a_link_out_is_refused(saved: Path, tmp_path: Path) -> None:
    from seqrep.model.labeler import SequenceLabeler

    copy = shutil.copytree(saved, tmp_path / "copy")
    (tmp_path / "elsewhere").mkdir()
    _link_out(copy, "tokenizer/tokenizer_config.json", tmp_path / "elsewhere")
    with pytest.raises(ModelError, match="tokenizer_config.json: links to .*outside"):
        SequenceLabeler.from_pretrained(copy)


def test_a_link_inside_the_folder_is_fine(saved: Path, tmp_path: Path) -> None:
    from seqrep.model.labeler import SequenceLabeler

    copy = shutil.copytree(saved, tmp_path / "copy")
    spare = copy / "tokenizer" / "spare.json"
    os.replace(copy / "tokenizer" / "tokenizer_config.json", spare)
    os.symlink(spare, copy / "tokenizer" / "tokenizer_config.json")
    lab = SequenceLabeler.from_pretrained(copy)
    assert lab.config.labels == LABELS


def test_a_labeler_folder_that_is_a_fifo_inside_is_refused(saved: Path, tmp_path: Path) -> None:
    from seqrep.model.labeler import SequenceLabeler

    copy = shutil.copytree(saved, tmp_path / "copy")
    os.mkfifo(copy / "tokenizer" / "extra.txt")
    with pytest.raises(ModelError, match="FIFO"):
        SequenceLabeler.from_pretrained(copy)


def test_an_export_with_a_link_out_is_refused(saved: Path, tmp_path: Path) -> None:
    pytest.importorskip("onnxscript")
    from seqrep.export.onnx import export_onnx
    from seqrep.export.runtime import OnnxLabeler

    out = export_onnx(saved, tmp_path / "onnx", check=False)
    (tmp_path / "elsewhere").mkdir()
    _link_out(out, "tokenizer/tokenizer_config.json", tmp_path / "elsewhere")
    with pytest.raises(ModelError, match="links to .*outside"):
        OnnxLabeler.from_pretrained(out)
