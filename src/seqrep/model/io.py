"""Saving and loading a labeler folder (safetensors only; no pickles are ever loaded).

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
        if labeler.config.finetune == "lora":
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


def load_labeler(cls: type[SequenceLabeler], path: Path) -> SequenceLabeler:
    """Rebuild a labeler from its folder (or a run folder's best model)."""
    path = model_dir(path)
    config = read_config(path)
    tokenizer = str(path / "tokenizer")
    if config.finetune == "full":
        # the saved backbone is already cut, and carries its own weights
        backbone = cls._load_backbone(config, str(path / "backbone"), False, tokenizer)
    else:
        backbone = cls._load_backbone(config, tokenizer=tokenizer)
    labeler = cls(config.replace(finetune="frozen"), backbone)
    labeler.config = config
    if config.finetune == "lora":
        labeler.backbone = load_adapter(labeler.backbone, path / "adapter")
    labeler.head.load_state_dict(load_file(str(path / "head.safetensors")))
    labeler.eval()
    return labeler
