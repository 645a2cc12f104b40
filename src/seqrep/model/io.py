"""Saving and loading a labeler folder (safetensors only; no pickles are ever loaded).

A labeler folder may come from anyone, so loading trusts nothing it says about code: remote
code runs only when the caller passes ``trust_remote_code=True`` (the folder's own setting is
ignored), and a backbone or adapter without safetensors weights is refused before any library
that could unpickle is called.

Layout::

    DIR/config.json          LabelerConfig (labels included) + seqrep version
    DIR/head.safetensors     the linear head, fp32
    DIR/adapter/             LoRA adapter (finetune=lora), peft format
    DIR/backbone/            the cut backbone's weights (finetune=full)
    DIR/tokenizer/           the tokenizer files

``finetune=frozen`` and ``lora`` runs reference the base model by name and reload it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from safetensors.torch import load_file, save_file

import seqrep
from seqrep.config import LabelerConfig
from seqrep.errors import ModelError
from seqrep.fileio import atomic_dir, write_json
from seqrep.model.backbone import quiet_transformers
from seqrep.model.tuning import load_adapter

if TYPE_CHECKING:
    from seqrep.model.labeler import SequenceLabeler


def save_labeler(labeler: SequenceLabeler, path: Path) -> Path:
    """Write ``labeler`` to ``path`` atomically; returns the path."""
    with atomic_dir(path) as tmp, quiet_transformers():
        write_json(tmp / "config.json", {"seqrep_version": seqrep.__version__,
                                         "total_layers": labeler.backbone_info.total_layers,
                                         "labeler": labeler.config.to_dict()})
        head = {k: v.detach().float().contiguous().cpu()
                for k, v in labeler.head.state_dict().items()}
        save_file(head, str(tmp / "head.safetensors"))
        if labeler.config.finetune in ("lora", "qlora"):
            labeler.backbone.save_pretrained(str(tmp / "adapter"))
        elif labeler.config.finetune == "full":
            labeler.backbone.save_pretrained(str(tmp / "backbone"), safe_serialization=True)
        labeler.tokenizer.save_pretrained(str(tmp / "tokenizer"))
    return path


def model_dir(path: Path) -> Path:
    """A run folder's ``best/`` model, or ``path`` itself when it is a labeler folder."""
    path = Path(path)
    return path / "best" if (path / "best" / "config.json").exists() else path


def read_config(path: Path) -> LabelerConfig:
    """The LabelerConfig saved in a labeler (or run) folder."""
    path = model_dir(path)
    cfg = path / "config.json"
    if not cfg.exists():
        raise ModelError(f"{path} is not a saved labeler (no config.json)")
    try:
        data = json.loads(cfg.read_text(encoding="utf-8"))
        return LabelerConfig.from_dict(data["labeler"])
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise ModelError(f"{cfg}: not a seqrep labeler config ({err})") from None


def _require_safetensors(folder: Path, what: str) -> None:
    if not any(folder.glob("*.safetensors")):
        pickles = sorted(p.name for p in folder.glob("*") if p.suffix in (".bin", ".pt", ".pth",
                                                                          ".pkl", ".ckpt"))
        found = f" (found {', '.join(pickles)}, which could run code when unpickled)" \
            if pickles else ""
        raise ModelError(f"{folder}: no safetensors weights for the {what}{found}; seqrep "
                         f"loads safetensors only")


def load_labeler(cls: type[SequenceLabeler], path: Path,
                 trust_remote_code: bool = False) -> SequenceLabeler:
    """Rebuild a labeler from its folder (or a run folder's best model).

    Args:
        cls: the labeler class.
        path: a labeler folder or a run folder.
        trust_remote_code: allow code shipped with the backbone (the caller's decision; the
            folder's saved setting is never used).
    """
    path = model_dir(path)
    saved = read_config(path)
    config = saved.replace(trust_remote_code=trust_remote_code)
    tokenizer = str(path / "tokenizer")
    if config.finetune == "full":
        # the saved backbone is already cut, and carries its own weights
        _require_safetensors(path / "backbone", "backbone")
        backbone = cls._load_backbone(config, str(path / "backbone"), False, tokenizer)
    else:
        if config.finetune in ("lora", "qlora"):
            _require_safetensors(path / "adapter", "LoRA adapter")
        base = config
        if config.finetune == "qlora":
            import torch

            # the 4-bit base needs a GPU; elsewhere the adapter goes on the full base
            base = config if torch.cuda.is_available() else config.replace(finetune="lora")
        backbone = cls._load_backbone(base, tokenizer=tokenizer)
    labeler = cls(config.replace(finetune="frozen"), backbone)
    labeler.config = config
    if config.finetune in ("lora", "qlora"):
        labeler.backbone = load_adapter(labeler.backbone, path / "adapter")
    head = path / "head.safetensors"
    try:
        labeler.head.load_state_dict(load_file(str(head)))
    except Exception as err:  # noqa: BLE001 - safetensors and torch raise several types
        raise ModelError(f"{head}: not a head for this labeler "
                         f"({str(err).splitlines()[0] if str(err) else type(err).__name__})"
                         ) from None
    labeler.eval()
    return labeler
