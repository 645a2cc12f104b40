"""Fine-tuning modes: which backbone weights train, and how adapters are added (reloading a
saved adapter is :func:`seqrep.model.io.load_adapter`).

One unit for every architecture: peft's tuners wrap the backbone alone (so the head stays a
plain, fully trained layer), and the attention projections to adapt are found by walking the
modules, never from a per-family table of classes.

- ``full``: every backbone weight trains, except the input embeddings unless asked.
- ``lora``: LoRA adapters on the attention projections (the paper: q, k, v, o).
- ``qlora``: the paper's recipe: the base loaded in 4-bit NF4 with double quantization and
  bf16 compute (bitsandbytes, CUDA only), ``prepare_model_for_kbit_training``, then LoRA as
  above. A QLoRA run folder loads on a machine without a GPU as LoRA on the full-precision
  base (the adapter and head are the same).
- ``frozen``: the backbone is fixed; only the head trains (a linear probe).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch import nn

from seqrep.errors import ModelError
from seqrep.model.architectures import table_lora_targets

if TYPE_CHECKING:
    from seqrep.config import LabelerConfig

# Attention projections LoRA adapts by default (the paper: q, k, v, o).
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "query", "key", "value")


def lora_targets(model: nn.Module) -> list[str]:
    """Names of the attention projections to adapt: the architecture table's for the model
    type (:mod:`seqrep.model.architectures`), else those found by walking the modules."""
    linear = {name.rsplit(".", 1)[-1] for name, m in model.named_modules()
              if isinstance(m, nn.Linear)}
    table = table_lora_targets(model, linear)
    if table:
        return table
    names = sorted(linear & set(LORA_TARGETS))
    if not names:
        raise ModelError(f"no attention projections named {', '.join(LORA_TARGETS)} in "
                         f"{type(model).__name__}; pass explicit LoRA target modules")
    return names


def check_qlora() -> None:
    """Raise a ConfigError saying what is needed when QLoRA cannot run here."""
    import importlib.util

    import torch

    from seqrep.errors import ConfigError

    if not torch.cuda.is_available():
        raise ConfigError("--finetune qlora needs a CUDA GPU (bitsandbytes 4-bit kernels); "
                          "on this machine use --finetune lora or full")
    if importlib.util.find_spec("bitsandbytes") is None:
        raise ConfigError("--finetune qlora needs bitsandbytes: pip install bitsandbytes")


def quantization_config():  # noqa: ANN201 - a transformers BitsAndBytesConfig
    """The paper's 4-bit base: NF4, double quantization, bf16 compute."""
    import torch
    from transformers import BitsAndBytesConfig

    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                              bnb_4bit_use_double_quant=True,
                              bnb_4bit_compute_dtype=torch.bfloat16)


def prepare_backbone(backbone: nn.Module, config: LabelerConfig) -> nn.Module:
    """Set which weights of ``backbone`` train for ``config.finetune``; returns the module to
    use (a peft model for ``lora`` and ``qlora``)."""
    if config.finetune == "qlora" and getattr(backbone, "is_loaded_in_4bit", False):
        from peft import prepare_model_for_kbit_training

        backbone = prepare_model_for_kbit_training(backbone, use_gradient_checkpointing=False)
    if config.finetune in ("lora", "qlora"):
        from peft import LoraConfig, get_peft_model

        lora = LoraConfig(r=config.lora_rank, lora_alpha=config.lora_alpha,
                          lora_dropout=config.lora_dropout, target_modules=lora_targets(backbone))
        return get_peft_model(backbone, lora)
    if config.finetune == "frozen":
        backbone.requires_grad_(False)
        return backbone
    if not config.train_embeddings:
        backbone.get_input_embeddings().requires_grad_(False)
    if config.frozen_layers:
        from seqrep.model.backbone import layer_stack

        blocks = layer_stack(backbone)
        if config.frozen_layers > len(blocks):
            from seqrep.errors import ConfigError

            raise ConfigError(f"frozen_layers={config.frozen_layers} but the model has "
                              f"{len(blocks)} layers (after the exit layer)")
        for block in blocks[: config.frozen_layers]:
            block.requires_grad_(False)
    return backbone

