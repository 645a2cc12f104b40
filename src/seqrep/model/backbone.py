"""Load any transformers backbone (decoder or encoder), cut at an exit layer.

Architecture knowledge lives in small tables here, never in per-family files: the layer stack
is the ``ModuleList`` with ``num_hidden_layers`` entries, the final norm is found by name.
Early exit sets ``num_hidden_layers=L`` (and truncates ``layer_types``) before loading, so the
layers above L are never built, loaded or computed. The cut model's output is then
``norm(hidden_states[L])``, the same convention as the full model's last layer.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from seqrep.errors import ModelError, first_line
from seqrep.model.architectures import (
    UNKNOWN,
    first_position,
    table_final_norm,
    table_layer_stack,
)
from seqrep.model.checks import (
    check_described_weights,
    check_files,
    check_sizes,
    check_tokenizer,
)
from seqrep.model.exit_layer import cut_layer, parse_exit_layer
from seqrep.model.packaged import PACKAGED, resolve_packaged

# Names of the final norm in base models (Llama/Mistral/Qwen/Gemma: norm; Phi: final_layernorm;
# GPT-2/Falcon: ln_f; OPT: final_layer_norm).
FINAL_NORM_NAMES = ("norm", "final_layernorm", "ln_f", "final_layer_norm", "norm_f")


@dataclass(frozen=True)
class BackboneInfo:
    """What a labeler needs to know about its loaded backbone, beside the module itself.

    Attributes:
        source: the local folder or hub id it was loaded from (a Hub model's id, though it
            is read from its snapshot in huggingface_hub's cache).
        is_encoder: True for BERT-like bidirectional encoders.
        total_layers: layers of the uncut model.
        num_layers: layers actually present (the exit layer).
        hidden_size: width of the states.
        pad_id: id put on padding.
        first_position: the position id the model gives a row's first token (0; 2 for
            RoBERTa-type encoders, see :func:`~seqrep.model.architectures.first_position`);
            batches count from 0 and the labeler adds this before calling the model.
        revision: the commit of a Hub model it was loaded at (None for a local folder), so
            a run that keeps no backbone of its own reloads on exactly that base.
    """

    source: str
    is_encoder: bool
    total_layers: int
    num_layers: int
    hidden_size: int
    pad_id: int = 0
    first_position: int = 0
    revision: str | None = None


@dataclass
class Backbone:
    """A loaded, possibly cut, transformers base model, its tokenizer and its facts."""

    model: nn.Module
    tokenizer: Any
    info: BackboneInfo


def resolve_source(name: str) -> str:
    """A packaged alias becomes its local folder; a path or hub id stays as it is."""
    if name in PACKAGED:
        return str(resolve_packaged(name))
    return name


def load_backbone(name: str, exit_layer: int | str | None = None, final_norm: bool = True,
                  attn_implementation: str | None = "sdpa", dtype: str = "float32",
                  trust_remote_code: bool = False, tokenizer: str | None = None,
                  quantization: Any = None, complete: bool = False) -> Backbone:
    """Load a base model and its tokenizer, cut after ``exit_layer`` layers.

    Args:
        name: packaged alias (``smollm2-135m`` ...), local folder or hub id.
        exit_layer: keep layers ``0..exit_layer-1``; None keeps all; a fraction of the
            depth (``"2/3"``) or ``"default"`` is resolved against the model's config
            (:func:`~seqrep.model.exit_layer.cut_layer`).
        final_norm: apply the model's final norm to the exit layer's output.
        attn_implementation: ``sdpa``, ``eager``, or another transformers backend.
        dtype: torch dtype name of the weights.
        trust_remote_code: allow code from the model repo (off unless the user asks).
        tokenizer: where to load the tokenizer from (default: the model's source).
        quantization: a transformers quantization config (QLoRA's 4-bit base), or None.
        complete: every weight of the model must come from the folder, and every weight in
            it must be used (a run's own saved backbone); otherwise a missing weight would
            stay randomly initialised.

    Raises:
        ModelError: unknown model, or an exit layer the model does not have.
    """
    from transformers import AutoConfig, AutoModel, AutoTokenizer
    from transformers.models.auto.modeling_auto import MODEL_FOR_MASKED_LM_MAPPING_NAMES

    from seqrep.model.device import qlora_device
    from seqrep.model.hub import base_snapshot

    source = resolve_source(name)
    # a Hub model is read from one snapshot (config, weights and tokenizer of one commit),
    # pinned now; the commit is recorded by a run that keeps no backbone of its own
    hub = None if name in PACKAGED else base_snapshot(source)
    if hub is not None:
        source = str(hub[0])
    kw = {"trust_remote_code": trust_remote_code}
    tokenizer_source = tokenizer or source
    for folder in {source, tokenizer_source}:
        # a base model: links may point anywhere the user keeps models, but not out of a
        # Hub snapshot's own repository (a labeler's own tokenizer folder was checked with
        # its folder); devices, pipes and giants are refused either way
        check_files(Path(folder), within=Path(source).parent.parent
                    if hub is not None and folder == source else Path("/"))
    try:
        with quiet_transformers():
            config = AutoConfig.from_pretrained(source, **kw)
    except Exception as err:  # noqa: BLE001 - config classes validate with many types
        raise _load_error(name, source, err) from None
    check_sizes(config, source)
    total = int(config.num_hidden_layers)
    is_encoder = config.model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES
    exit_layer = cut_layer(parse_exit_layer(exit_layer), total, is_encoder)
    if exit_layer is not None:
        if not 1 <= exit_layer <= total:
            raise ModelError(f"exit_layer={exit_layer} but {name} has {total} layers "
                             f"(choose 1..{total})")
        cut_config(config, exit_layer)
    attn_implementation = _attention_for(config, attn_implementation)
    if Path(source).is_dir():
        require_weights(Path(source), SAFETENSORS_NAMES, "model")
    if complete:
        check_described_weights(config, Path(source), **kw)
    try:
        tokenizer = AutoTokenizer.from_pretrained(tokenizer_source, **kw)
        with quiet_transformers():
            extra = {} if quantization is None else {
                "quantization_config": quantization,
                "device_map": {"": qlora_device()}}
            model, loading = AutoModel.from_pretrained(
                source, config=config, dtype=getattr(torch, dtype), use_safetensors=True,
                attn_implementation=attn_implementation, output_loading_info=True,
                **extra, **kw)
    except Exception as err:  # noqa: BLE001 - loaders of untrusted files raise many types
        raise _load_error(name, source, err) from None
    if complete:
        check_complete(source, loading)
    check_tokenizer(tokenizer, model.get_input_embeddings().num_embeddings, tokenizer_source)
    pad_id = pad_token_id(tokenizer, model.get_input_embeddings().num_embeddings)
    if getattr(model.config, "pad_token_id", None) is None:
        model.config.pad_token_id = pad_id
    if not final_norm:
        set_final_norm(model, nn.Identity())
    model.eval()
    info = BackboneInfo(source if hub is None else hub[1], is_encoder, total,
                        len(layer_stack(model)), int(model.config.hidden_size), pad_id,
                        first_position(model), None if hub is None else hub[2])
    return Backbone(model, tokenizer, info)


# the weight files transformers reads from a folder with use_safetensors=True
SAFETENSORS_NAMES = ("model.safetensors", "model.safetensors.index.json")
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".ckpt")


# A base's fingerprint reads this many blocks of this size from each of its files (the first
# block of a weight file holds its safetensors header: tensor names, dtypes and shapes).
SAMPLE_BLOCKS, SAMPLE_BYTES = 16, 1 << 16


def fingerprint(folder: Path) -> dict[str, dict[str, Any]]:
    """What tells a local base model folder from another, cheaply enough to check on every
    load of a run that keeps no backbone: for ``config.json`` and each weight file, its size
    and the SHA-256 of :data:`SAMPLE_BLOCKS` blocks of :data:`SAMPLE_BYTES` read at even
    offsets through it (the whole file when it is smaller: ``config.json`` is hashed whole).

    Why a sample, not sizes or full hashes: two fine-tunes of one architecture have the same
    config, shapes and so byte sizes, but nearly every weight differs, so blocks spread
    through the file tell them apart; a full hash would read a 7B base's 14 GB on every load
    (tens of seconds) where the sample reads 1 MiB per file. A base changed in a few tensors
    only (a resized embedding) can pass unseen: this guards against another model at the
    path, not against a tampered one (the run's own files are checked as always).
    """
    import hashlib

    names = sorted({"config.json", *(p.name for p in folder.glob("*.safetensors")),
                    *(p.name for p in folder.glob("*.safetensors.index.json"))})
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        path = folder / name
        if not path.is_file():  # a device, a pipe or a missing file: nothing is read
            continue
        try:
            size = path.stat().st_size
            digest = hashlib.sha256()
            with open(path, "rb") as f:
                if size <= SAMPLE_BLOCKS * SAMPLE_BYTES:
                    digest.update(f.read(size))
                else:
                    step = (size - SAMPLE_BYTES) / (SAMPLE_BLOCKS - 1)
                    for i in range(SAMPLE_BLOCKS):
                        f.seek(round(i * step))
                        digest.update(f.read(SAMPLE_BYTES))
        except OSError as err:
            raise ModelError(f"{path}: cannot be read ({first_line(err)})") from None
        out[name] = {"bytes": size, "sample_sha256": digest.hexdigest()}
    return out


def require_weights(folder: Path, names: tuple[str, ...], what: str) -> None:
    """Refuse ``folder`` unless it holds one of ``names``, the exact safetensors files the
    loader reads (another ``*.safetensors`` beside a pickle proves nothing)."""
    if any((folder / n).is_file() for n in names):
        return
    pickles = sorted(p.name for p in folder.glob("*") if p.suffix in PICKLE_SUFFIXES)
    found = f" (found {', '.join(pickles)}, which could run code when unpickled)" \
        if pickles else ""
    raise ModelError(f"{folder}: no safetensors weights for the {what} (no "
                     f"{' or '.join(names)}){found}; seqrep loads safetensors only")


def check_complete(source: str, loading: dict[str, Any]) -> None:
    """Raise a one-line ModelError when a saved model's weights did not fill it exactly."""
    for key, what in (("missing_keys", "missing from the folder (they would stay random)"),
                      ("mismatched_keys", "of the wrong shape"),
                      ("unexpected_keys", "in the folder but not in the model")):
        keys = sorted(str(k) for k in loading.get(key) or ())
        if keys:
            raise ModelError(f"{source}: {len(keys)} weights {what}, e.g. {keys[0]}; the "
                             f"folder is damaged or its config.json does not match its "
                             f"weights")


def _attention_for(config: Any, attn_implementation: str | None) -> str | None:
    """``sdpa`` (the default) where the architecture has it, else its eager attention: some
    encoders (MPNet) have no sdpa path, and the masks seqrep builds work with both."""
    if attn_implementation != "sdpa":
        return attn_implementation
    from transformers.models.auto.modeling_auto import MODEL_MAPPING

    try:
        cls = MODEL_MAPPING[type(config)]
    except KeyError:
        return attn_implementation
    return attn_implementation if getattr(cls, "_supports_sdpa", True) else "eager"


def _load_error(name: str, source: str, err: Exception) -> ModelError:
    first = first_line(err)
    if "trust_remote_code" in str(err):
        return ModelError(f"cannot load model {name!r}: it needs code from its repository, "
                          f"which seqrep runs only when you pass --trust-remote-code "
                          f"(trust_remote_code=True); a model folder's own settings never "
                          f"enable it")
    hint = f"; packaged aliases: {', '.join(PACKAGED)}" if not Path(source).exists() else ""
    return ModelError(f"cannot load model {name!r}: {first}{hint}")


def pad_token_id(tokenizer: Any, vocab_size: int) -> int:
    """A pad id inside the embedding table, giving the tokenizer a pad token if it has none.

    Padding is always masked, so any valid id is correct; but some tokenizer classes add a
    pad token past the end of the model's vocabulary, which would index out of range.
    """
    from seqrep.encode.align import ensure_pad_token

    pad = ensure_pad_token(tokenizer)
    if 0 <= pad < vocab_size:
        return pad
    for tid in (tokenizer.eos_token_id, tokenizer.unk_token_id, tokenizer.bos_token_id, 0):
        if tid is not None and 0 <= tid < vocab_size:
            return int(tid)
    return 0


def cut_config(config: Any, exit_layer: int) -> None:
    """Shrink a config to ``exit_layer`` layers, keeping per-layer lists consistent."""
    config.num_hidden_layers = exit_layer
    types = getattr(config, "layer_types", None)
    if isinstance(types, (list, tuple)):
        config.layer_types = list(types)[:exit_layer]


def layer_stack(model: nn.Module) -> nn.ModuleList:
    """The model's list of transformer blocks: where the architecture table
    (:mod:`seqrep.model.architectures`) says, else the ModuleList with one entry per layer."""
    table = table_layer_stack(model)
    if table is not None:
        return table
    n = model.config.num_hidden_layers
    found = [(name, m) for name, m in model.named_modules()
             if isinstance(m, nn.ModuleList) and len(m) == n]
    if not found:
        raise ModelError(f"cannot find the {n} transformer layers of {type(model).__name__}")
    return min(found, key=lambda x: x[0].count("."))[1]


def final_norm_owner(model: nn.Module) -> tuple[nn.Module, str] | None:
    """``(parent, attribute)`` of the final norm, or None for models without one (BERT): as
    the architecture table says, else found by its usual names."""
    table = table_final_norm(model)
    if table is not UNKNOWN:
        return table
    for parent in (model, getattr(model, "base_model", None), getattr(model, "model", None)):
        for attr in FINAL_NORM_NAMES:
            if parent is not None and isinstance(getattr(parent, attr, None), nn.Module):
                return parent, attr
    return None


def get_final_norm(model: nn.Module) -> nn.Module:
    """The final norm module, or Identity for models without one."""
    owner = final_norm_owner(model)
    return getattr(*owner) if owner else nn.Identity()


def set_final_norm(model: nn.Module, module: nn.Module) -> None:
    """Replace the final norm (e.g. by Identity to read raw states)."""
    owner = final_norm_owner(model)
    if owner:
        setattr(owner[0], owner[1], module)


@contextlib.contextmanager
def quiet_transformers():
    """Silence the expected 'unused weights' report when loading a cut model."""
    import logging

    from transformers.utils import logging as hf_logging

    hub_logger = logging.getLogger("huggingface_hub")
    level, hub_level = hf_logging.get_verbosity(), hub_logger.level
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    hub_logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        hub_logger.setLevel(hub_level)
        if bars:
            hf_logging.enable_progress_bar()
