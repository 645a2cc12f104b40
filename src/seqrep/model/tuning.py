"""Fine-tuning modes: which backbone weights train, and how adapters are added (reloading a
saved adapter is :func:`seqrep.model.io.load_adapter`).

One unit for every architecture: peft's tuners wrap the backbone alone (so the head stays a
plain, fully trained layer), and the attention projections to adapt are found by walking the
modules, never from a per-family table of classes.

- ``full``: every backbone weight trains, except the input embeddings unless asked.
- ``lora``: LoRA adapters on the attention projections (the paper: q, k, v, o).
- ``qlora``: the paper's recipe: the base loaded in 4-bit NF4 with double quantization and
  bf16 compute (bitsandbytes), ``prepare_model_for_kbit_training``, then LoRA as above. It
  runs wherever the installed bitsandbytes can quantize on the device (a CUDA GPU, or the CPU
  with bitsandbytes 0.50.2's CPU backend), decided by a tiny quantization, not by versions.
  A QLoRA run folder loads on the 4-bit base where bitsandbytes can quantize, else, with a
  notice, as LoRA on the full-precision base (the adapter and the head are the same).
- ``frozen``: the backbone is fixed; only the head trains (a linear probe).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from torch import nn

from seqrep.errors import ConfigError, ModelError
from seqrep.model.architectures import table_lora_targets
from seqrep.model.device import qlora_device

if TYPE_CHECKING:
    from seqrep.config import LabelerConfig

# Attention projections LoRA adapts by default (the paper: q, k, v, o).
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "query", "key", "value")


# On CPUs with AVX512-BF16, importing bitsandbytes 0.50 (which peft does for LoRA too) logs
# that the optional `kernels` package is missing: it would serve only the packed inference
# kernel that keep_unpacked turns off, and it is the module's only message, so it is muted.
logging.getLogger("bitsandbytes.backends.cpu.ops").setLevel(logging.ERROR)

# How to get what QLoRA needs (the version verified with this release, CPU and CUDA)
QLORA_INSTALL = "pip install bitsandbytes==0.50.2 (or the extra: pip install 'seqrep[qlora]')"


def lora_targets(model: nn.Module, wanted: Sequence[str] = ()) -> list[str]:
    """Names of the modules to adapt: ``wanted`` (``--lora-targets``) checked against the
    model, or by default the attention projections: the architecture table's for the model
    type (:mod:`seqrep.model.architectures`), else those found by walking the modules."""
    linear = {name.rsplit(".", 1)[-1] for name, m in model.named_modules()
              if isinstance(m, nn.Linear)}  # bitsandbytes' Linear4bit is one too
    if wanted:
        leaves = {name.rsplit(".", 1)[-1] for name, m in model.named_modules()
                  if name and not any(True for _ in m.children())}
        missing = sorted(set(wanted) - leaves)
        if missing:
            raise ConfigError(f"--lora-targets {','.join(wanted)}: {type(model).__name__} "
                              f"has no linear layer named {', '.join(missing)}; it has "
                              f"{', '.join(sorted(linear))}")
        return sorted(set(wanted))
    table = table_lora_targets(model, linear)
    if table:
        return table
    names = sorted(linear & set(LORA_TARGETS))
    if not names:
        raise ModelError(f"no attention projections named {', '.join(LORA_TARGETS)} in "
                         f"{type(model).__name__}; name the layers to adapt with "
                         f"--lora-targets (its linear layers: {', '.join(sorted(linear))})")
    return names


@functools.cache
def qlora_problem(device: str | None = None) -> str | None:
    """What keeps QLoRA from running on ``device`` (default :func:`qlora_device`), or None.

    Decided by what the installed bitsandbytes does, not by its version: it must import and
    quantize a small matrix to NF4 with double quantization on the device and back, close to
    the original."""
    import torch

    device = device or qlora_device()
    try:
        import bitsandbytes.functional as bnbf
    except Exception as err:  # noqa: BLE001 - ImportError, or its native library failing
        return f"bitsandbytes cannot be imported ({_first_line(err)})"
    try:
        w = torch.linspace(-1.0, 1.0, 64 * 64, device=device).reshape(64, 64)
        packed, state = bnbf.quantize_4bit(w, quant_type="nf4", compress_statistics=True)
        back = bnbf.dequantize_4bit(packed, state).float()
        if not (back - w).abs().max().item() < 0.1:
            return f"bitsandbytes' 4-bit quantization on {device} gives wrong values"
    except Exception as err:  # noqa: BLE001 - bitsandbytes raises many kinds here
        import bitsandbytes

        return (f"bitsandbytes {getattr(bitsandbytes, '__version__', '?')} cannot quantize "
                f"to 4-bit on {device} ({_first_line(err)})")
    return None


def _first_line(err: Exception) -> str:
    return str(err).splitlines()[0] if str(err) else type(err).__name__


def check_qlora() -> None:
    """Raise a ConfigError saying what is missing and how to get it when QLoRA cannot run."""
    problem = qlora_problem()
    if problem:
        raise ConfigError(f"--finetune qlora needs bitsandbytes able to quantize to 4-bit on "
                          f"{qlora_device()}: {problem}; {QLORA_INSTALL}, or use "
                          f"--finetune lora")


def keep_unpacked(model: nn.Module) -> None:
    """Keep bitsandbytes' Linear4bit layers in their one, trainable format.

    On CPUs with AVX512-BF16, bitsandbytes 0.50 repacks a Linear4bit's weight in place for a
    fused inference kernel the first time it runs in eval mode without gradients, and keeps
    that layout afterwards: a training pass after an evaluation then gets no gradient through
    the base layers (measured: every LoRA weight below the last projection gets a zero
    gradient), and layers narrower than its block of 64 inputs fail to repack. Turning it off
    keeps training and inference on the same dequantize-and-multiply path.
    """
    for module in model.modules():
        if hasattr(module, "support_avx512bf16_for_cpu"):
            module.support_avx512bf16_for_cpu = False


def quantization_config() -> Any:  # a transformers BitsAndBytesConfig
    """The paper's 4-bit base: NF4, double quantization, bf16 compute."""
    import torch
    from transformers import BitsAndBytesConfig

    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                              bnb_4bit_use_double_quant=True,
                              bnb_4bit_compute_dtype=torch.bfloat16)


def prepare_backbone(backbone: nn.Module, config: LabelerConfig) -> nn.Module:
    """Set which weights of ``backbone`` train for ``config.finetune``; returns the module to
    use (a peft model for ``lora`` and ``qlora``)."""
    if getattr(backbone, "is_loaded_in_4bit", False):
        keep_unpacked(backbone)
    if config.finetune == "qlora" and getattr(backbone, "is_loaded_in_4bit", False):
        from peft import prepare_model_for_kbit_training

        backbone = prepare_model_for_kbit_training(backbone, use_gradient_checkpointing=False)
    if config.finetune in ("lora", "qlora"):
        from peft import LoraConfig, get_peft_model

        lora = LoraConfig(r=config.lora_rank, lora_alpha=config.lora_alpha,
                          lora_dropout=config.lora_dropout,
                          target_modules=lora_targets(backbone, config.lora_targets))
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
            raise ConfigError(f"frozen_layers={config.frozen_layers} but the model has "
                              f"{len(blocks)} layers (after the exit layer)")
        for block in blocks[: config.frozen_layers]:
            block.requires_grad_(False)
    return backbone

