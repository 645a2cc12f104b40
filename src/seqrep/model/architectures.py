"""What seqrep needs to know of a backbone's layout, by ``config.model_type``: where its stack
of transformer blocks is, the name of its final norm, and the modules LoRA adapts.

The table is consulted first (:func:`seqrep.model.backbone.layer_stack`,
:func:`~seqrep.model.backbone.final_norm_owner`, :func:`seqrep.model.tuning.lora_targets`);
a model type it does not hold, or an entry that does not fit the loaded model, falls back to
the heuristics (the shallowest ModuleList with one entry per layer, the usual norm names, the
usual projection names). ``--lora-targets`` overrides the table's LoRA targets.

Where a model numbers its first token (:func:`first_position`) has its own table,
:data:`FIRST_POSITION`: BERT and the decoders count from 0, RoBERTa-type encoders (RoBERTa,
XLM-R, CamemBERT, MPNet, ...) from their position embedding's ``padding_idx + 1`` (2), as
transformers' ``create_position_ids_from_input_ids`` does; a model type the table does not
hold is recognised by that embedding. ``FIRST_POSITION["my_arch"] = 2`` fixes it per type.

Add or replace an entry for a new architecture with :func:`register_architecture`::

    register_architecture("my_arch", Architecture("decoder.blocks", "ln_out", ("wq", "wv")))
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

_ATTENTION = ("k_proj", "o_proj", "q_proj", "v_proj")
#: What table_final_norm answers when the table cannot say (no entry, or it does not fit).
UNKNOWN = object()


@dataclass(frozen=True)
class Architecture:
    """One model type's layout.

    Attributes:
        layers: dotted path from the base model (what ``AutoModel`` returns) to the ModuleList
            of its blocks, e.g. ``layers`` or ``encoder.layer``.
        final_norm: attribute of the base model holding the norm after the last block, or
            None when there is none (BERT-style encoders).
        lora_targets: names of the Linear modules LoRA adapts by default.
    """

    layers: str
    final_norm: str | None
    lora_targets: tuple[str, ...]


#: The table, by ``config.model_type``; a user may add entries (see register_architecture).
ARCHITECTURES: dict[str, Architecture] = {
    name: Architecture("layers", "norm", _ATTENTION)
    for name in ("llama", "mistral", "qwen2", "qwen3", "gemma3_text")
}
ARCHITECTURES["bert"] = Architecture("encoder.layer", None, ("key", "query", "value"))


#: First position id per ``config.model_type``, where the model's own embedding is not asked.
FIRST_POSITION: dict[str, int] = {
    name: 0 for name in ("llama", "mistral", "qwen2", "qwen3", "gemma3_text", "bert")}


def first_position(model: nn.Module) -> int:
    """The position id of a row's first token: :data:`FIRST_POSITION`'s for the model type,
    else ``padding_idx + 1`` for an encoder whose position embedding skips its padding index
    and whose transformers code numbers positions after it (``create_position_ids_from_
    input_ids``: RoBERTa, MPNet and their kin), else 0."""
    import sys

    model_type = getattr(getattr(model, "config", None), "model_type", None) or ""
    if model_type in FIRST_POSITION:
        return FIRST_POSITION[model_type]
    for base in _bases(model):
        embeddings = getattr(base, "embeddings", None)
        table = getattr(embeddings, "position_embeddings", None)
        if not isinstance(table, nn.Embedding) or table.padding_idx is None:
            continue
        code = sys.modules.get(type(embeddings).__module__)
        if hasattr(embeddings, "create_position_ids_from_input_ids") or \
                hasattr(code, "create_position_ids_from_input_ids"):
            return int(table.padding_idx) + 1
    return 0


def register_architecture(model_type: str, architecture: Architecture) -> None:
    """Add (or replace) the table's entry for ``model_type``."""
    if not isinstance(architecture, Architecture):
        raise TypeError(f"register_architecture({model_type!r}, ...): expected an "
                        f"Architecture, got {type(architecture).__name__}")
    ARCHITECTURES[model_type] = architecture


def architecture_of(model: nn.Module) -> Architecture | None:
    """The table's entry for the model's ``config.model_type`` (None when it has none)."""
    config = getattr(model, "config", None)
    return ARCHITECTURES.get(getattr(config, "model_type", None) or "")


def _bases(model: nn.Module) -> list[nn.Module]:
    """The model and the base models it may wrap (peft, a head on a base model)."""
    out = [model]
    get_base = getattr(model, "get_base_model", None)
    for candidate in (get_base() if callable(get_base) else None,
                      getattr(model, "base_model", None), getattr(model, "model", None)):
        if isinstance(candidate, nn.Module) and all(candidate is not m for m in out):
            out.append(candidate)
    return out


def _walk(module: nn.Module, path: str) -> object | None:
    for part in path.split("."):
        module = getattr(module, part, None)
        if module is None:
            return None
    return module


def table_layer_stack(model: nn.Module) -> nn.ModuleList | None:
    """The block stack the table names, when it holds one entry per configured layer."""
    arch = architecture_of(model)
    if arch is None:
        return None
    n = model.config.num_hidden_layers
    for base in _bases(model):
        found = _walk(base, arch.layers)
        if isinstance(found, nn.ModuleList) and len(found) == n:
            return found
    return None


def table_final_norm(model: nn.Module) -> tuple[nn.Module, str] | None | object:
    """``(parent, attribute)`` of the final norm the table names; None when the table says
    the model has none; :data:`UNKNOWN` when the table cannot say (no entry, or it does not
    fit the model)."""
    arch = architecture_of(model)
    if arch is None:
        return UNKNOWN
    if arch.final_norm is None:
        return None
    for base in _bases(model):
        if isinstance(getattr(base, arch.final_norm, None), nn.Module):
            return base, arch.final_norm
    return UNKNOWN


def table_lora_targets(model: nn.Module, linear: set[str]) -> list[str] | None:
    """The table's LoRA targets when the model has a Linear of each name (else None)."""
    arch = architecture_of(model)
    if arch is None or not set(arch.lora_targets) <= linear:
        return None
    return sorted(arch.lora_targets)
