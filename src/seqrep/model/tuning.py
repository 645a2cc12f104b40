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

Each mode is one :class:`Mode` in :data:`MODES`, the one table (:class:`~seqrep.core.table.Table`)
every caller asks (the config validates ``finetune`` against it and takes its help text from
it; training takes its default rates; saving and loading a labeler folder read what it
keeps): adding a mode adds one entry (``MODES.register(Mode(...))``). The module imports
neither torch nor the config at load time, so the config can validate against the table.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from seqrep.core.table import Table
from seqrep.errors import ConfigError, ModelError, first_line

if TYPE_CHECKING:
    from torch import nn

# Attention projections LoRA adapts by default (the paper: q, k, v, o).
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "query", "key", "value")


# On CPUs with AVX512-BF16, importing bitsandbytes 0.50 (which peft does for LoRA too) logs
# that the optional `kernels` package is missing: it would serve only the packed inference
# kernel that keep_unpacked turns off, and it is the module's only message, so it is muted.
logging.getLogger("bitsandbytes.backends.cpu.ops").setLevel(logging.ERROR)

# How to get what QLoRA needs (the version verified with this release, CPU and CUDA)
QLORA_INSTALL = ("pip install bitsandbytes==0.50.2 (or the extra: pip install "
                 "'seqrep-labeler[qlora]')")


def lora_targets(model: nn.Module, wanted: Sequence[str] = ()) -> list[str]:
    """Names of the modules to adapt: ``wanted`` (``--lora-targets``) checked against the
    model, or by default the attention projections: the architecture table's for the model
    type (:mod:`seqrep.model.architectures`), else those found by walking the modules."""
    from torch import nn

    from seqrep.model.architectures import table_lora_targets

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

    from seqrep.model.device import qlora_device

    device = device or qlora_device()
    try:
        import bitsandbytes.functional as bnbf
    except Exception as err:  # noqa: BLE001 - ImportError, or its native library failing
        return f"bitsandbytes cannot be imported ({first_line(err)})"
    try:
        w = torch.linspace(-1.0, 1.0, 64 * 64, device=device).reshape(64, 64)
        packed, state = bnbf.quantize_4bit(w, quant_type="nf4", compress_statistics=True)
        back = bnbf.dequantize_4bit(packed, state).float()
        if not (back - w).abs().max().item() < 0.1:
            return f"bitsandbytes' 4-bit quantization on {device} gives wrong values"
    except Exception as err:  # noqa: BLE001 - bitsandbytes raises many kinds here
        import bitsandbytes

        return (f"bitsandbytes {getattr(bitsandbytes, '__version__', '?')} cannot quantize "
                f"to 4-bit on {device} ({first_line(err)})")
    return None


def check_qlora() -> None:
    """Raise a ConfigError saying what is missing and how to get it when QLoRA cannot run."""
    from seqrep.model.device import qlora_device

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


class TuningConfig(Protocol):
    """What a mode reads of a :class:`~seqrep.model.labeler_config.LabelerConfig` (named
    structurally: that module imports this one, to validate ``finetune`` against
    :data:`MODES`)."""

    finetune: str
    lora_rank: int
    lora_alpha: int
    lora_dropout: float
    lora_targets: list[str]
    train_embeddings: bool
    frozen_layers: int


@dataclass(frozen=True)
class Mode:
    """One fine-tuning mode: everything the config, training and a labeler folder ask of it.

    Attributes:
        name: the ``finetune`` value.
        help: what trains, as ``--finetune``'s help text shows it.
        train: sets which weights of a fresh backbone train and adds any adapters; returns
            the module to use.
        lr: the default rate of the trained backbone weights (or adapters), used where
            ``TrainConfig.lr`` is unset.
        head_lr: the default rate of the head (``TrainConfig.head_lr`` unset).
        saves_backbone: a labeler folder keeps the whole cut backbone (``DIR/backbone/``);
            otherwise the base model is reloaded by name.
        saves_adapter: a labeler folder keeps a LoRA adapter over the base (``DIR/adapter/``,
            peft format).
        quantized: the base is loaded in 4-bit NF4, which needs bitsandbytes able to quantize
            on the device (:func:`check_qlora`).
        fallback: the mode a saved run reloads as where its quantized base cannot be loaded
            (the same adapter and head on the full-precision base).
    """

    name: str
    help: str
    train: Callable[[nn.Module, TuningConfig], nn.Module]
    lr: float
    head_lr: float = 1e-3
    saves_backbone: bool = False
    saves_adapter: bool = False
    quantized: bool = False
    fallback: str | None = None

    def prepare(self, backbone: nn.Module, config: TuningConfig) -> nn.Module:
        """``backbone`` set up to train in this mode (a 4-bit base is kept in its one,
        trainable format first)."""
        if getattr(backbone, "is_loaded_in_4bit", False):
            keep_unpacked(backbone)
        return self.train(backbone, config)

    def check(self) -> None:
        """Raise a ConfigError where this mode cannot run here (before any data is read)."""
        if self.quantized:
            check_qlora()

    def quantization(self) -> Any:  # a transformers BitsAndBytesConfig, or None
        """What to load the base with: the 4-bit config for a quantized mode (checked first),
        else None."""
        if not self.quantized:
            return None
        self.check()
        return quantization_config()


def _train_full(backbone: nn.Module, config: TuningConfig) -> nn.Module:
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


def _train_lora(backbone: nn.Module, config: TuningConfig) -> nn.Module:
    from peft import LoraConfig, get_peft_model

    lora = LoraConfig(r=config.lora_rank, lora_alpha=config.lora_alpha,
                      lora_dropout=config.lora_dropout,
                      target_modules=lora_targets(backbone, config.lora_targets))
    return get_peft_model(backbone, lora)


def _train_qlora(backbone: nn.Module, config: TuningConfig) -> nn.Module:
    if getattr(backbone, "is_loaded_in_4bit", False):
        from peft import prepare_model_for_kbit_training

        backbone = prepare_model_for_kbit_training(backbone, use_gradient_checkpointing=False)
    return _train_lora(backbone, config)


def _train_frozen(backbone: nn.Module, config: TuningConfig) -> nn.Module:
    backbone.requires_grad_(False)
    return backbone


# The backbone fixed, only the head trains: what a probe trains (the exit-layer sweep, the
# lab's probes) and what the benchmark times (the forward pass, nothing added to it).
FROZEN = "frozen"
# full: the CPU recipe measured in README.md; lora: the paper's 2e-4; frozen: no backbone
# weight trains, so only the head's rate matters.
MODES: Table[Mode] = Table("finetune", (
    Mode("full", "all backbone weights; the CPU default", _train_full, lr=5e-5,
         saves_backbone=True),
    Mode("lora", "adapters on q,k,v,o", _train_lora, lr=2e-4, saves_adapter=True),
    Mode("qlora", "the paper's: LoRA on a 4-bit NF4 base; needs bitsandbytes able to "
                  "quantize on the device: a CUDA GPU, or the CPU with bitsandbytes 0.50.2",
         _train_qlora, lr=2e-4, saves_adapter=True, quantized=True, fallback="lora"),
    Mode(FROZEN, "head only", _train_frozen, lr=5e-5),
))
# The mode a saved labeler is rebuilt in before its own weights go on: it adds nothing and
# trains nothing.
REBUILT = FROZEN


def prepare_backbone(backbone: nn.Module, config: TuningConfig) -> nn.Module:
    """Set which weights of ``backbone`` train for ``config.finetune``; returns the module to
    use (a peft model for ``lora`` and ``qlora``)."""
    return MODES[config.finetune].prepare(backbone, config)
