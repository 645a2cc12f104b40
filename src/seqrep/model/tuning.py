"""Fine-tuning modes: which backbone weights train, and how adapters are added and reloaded.

One unit for every architecture: peft's tuners wrap the backbone alone (so the head stays a
plain, fully trained layer), and the attention projections to adapt are found by walking the
modules, never from a per-family table of classes.

- ``full``: every backbone weight trains, except the input embeddings unless asked.
- ``lora``: LoRA adapters on the attention projections (the paper: q, k, v, o).
- ``frozen``: the backbone is fixed; only the head trains (a linear probe).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from torch import nn

from seqrep.errors import ModelError

if TYPE_CHECKING:
    from seqrep.config import LabelerConfig

# Attention projections LoRA adapts by default (the paper: q, k, v, o).
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "query", "key", "value")


def lora_targets(model: nn.Module) -> list[str]:
    """Names of the attention projections to adapt, found by walking the modules."""
    names = sorted({name.rsplit(".", 1)[-1] for name, m in model.named_modules()
                    if isinstance(m, nn.Linear) and name.rsplit(".", 1)[-1] in LORA_TARGETS})
    if not names:
        raise ModelError(f"no attention projections named {', '.join(LORA_TARGETS)} in "
                         f"{type(model).__name__}; pass explicit LoRA target modules")
    return names


def prepare_backbone(backbone: nn.Module, config: LabelerConfig) -> nn.Module:
    """Set which weights of ``backbone`` train for ``config.finetune``; returns the module to
    use (a peft model for ``lora``)."""
    if config.finetune == "lora":
        from peft import LoraConfig, get_peft_model

        lora = LoraConfig(r=config.lora_rank, lora_alpha=config.lora_alpha,
                          lora_dropout=config.lora_dropout, target_modules=lora_targets(backbone))
        return get_peft_model(backbone, lora)
    if config.finetune == "frozen":
        backbone.requires_grad_(False)
    elif not config.train_embeddings:
        backbone.get_input_embeddings().requires_grad_(False)
    return backbone


def load_adapter(backbone: nn.Module, folder: Path) -> nn.Module:
    """The base ``backbone`` with the saved LoRA adapter in ``folder`` put on it."""
    from peft import PeftModel

    return PeftModel.from_pretrained(backbone, str(folder))
