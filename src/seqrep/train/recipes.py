"""Named training recipes: a whole protocol in one flag, each setting still overridable.

``paper`` is the protocol of Kukić et al. (EACL 2026) as released: QLoRA (4-bit NF4 base,
LoRA r=16, alpha 16, dropout 0.1 on q, k, v, o; the head fully trained), AdamW at 2e-4 with
weight decay 0.05, an effective batch of 32 (8 x 4 accumulated), 10 epochs with linear decay,
the best epoch by validation micro-F1, at most 256 subtokens per copy, bf16 compute, labels
read from the last layer (its main results; ``--exit-layer`` given with it cuts the model). It needs
bitsandbytes able to quantize on the device: a CUDA GPU, or the CPU with bitsandbytes 0.50.2
(``pip install 'seqrep-labeler[qlora]'``); options given with it still win (``--finetune lora``).
"""

from __future__ import annotations

from typing import Any

from seqrep.config import LabelerConfig, TrainConfig
from seqrep.errors import ConfigError

RECIPES: dict[str, dict[str, dict[str, Any]]] = {
    "paper": {
        "labeler": {"finetune": "qlora", "lora_rank": 16, "lora_alpha": 16,
                    "lora_dropout": 0.1, "dropout": 0.1, "max_subtokens": 256,
                    "exit_layer": "all"},
        "train": {"lr": 2e-4, "head_lr": 2e-4, "weight_decay": 0.05, "batch_size": 8,
                  "grad_accum": 4, "epochs": 10, "eval_every": 0, "warmup": 0.0,
                  "precision": "bf16"},
    },
}


def apply_recipe(name: str | None, labeler: LabelerConfig, train: TrainConfig,
                 given: set[str] = frozenset()) -> tuple[LabelerConfig, TrainConfig]:
    """The configs with recipe ``name``'s settings, except the fields in ``given`` (set by the
    user explicitly, which always win)."""
    if not name:
        return labeler, train
    if name not in RECIPES:
        raise ConfigError(f"--recipe {name!r}; expected one of {', '.join(RECIPES)}")
    recipe = RECIPES[name]
    lab = {k: v for k, v in recipe["labeler"].items() if k not in given}
    tr = {k: v for k, v in recipe["train"].items() if k not in given}
    return labeler.replace(**lab), train.replace(**tr)
