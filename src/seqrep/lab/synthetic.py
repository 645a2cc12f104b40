"""Random weights in a real model's shape, and synthetic sentences, for benchmarking where
nothing may be downloaded (``scripts/bench_gpu.py``).

A ``transformers.MistralConfig`` of the shape is cut with
:func:`seqrep.model.backbone.cut_config` to the exit layer *before* the model is built, and the
model is created directly on the device (``with torch.device(dev): AutoModel.from_config``),
so the layers above L never exist. QLoRA's 4-bit base is made from the same random weights,
either in memory (every Linear of the blocks replaced by a ``bitsandbytes.nn.Linear4bit``
quantized on the device from that very weight) or through a saved checkpoint loaded with
``quantization_config=``.
"""

from __future__ import annotations

import random
import shutil
import tempfile
from typing import Any

import torch
from torch import nn

from seqrep.lab.speed import reset_memory
from seqrep.model.backbone import Backbone, BackboneInfo, cut_config, layer_stack

CONLL_TAGS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]

# Model shapes, each with the exit layers to compare (the deepest is the uncut model).
CONFIGS: dict[str, dict[str, Any]] = {
    "mistral-7b-shape": {
        "shape": dict(vocab_size=32000, hidden_size=4096, intermediate_size=14336,
                      num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                      head_dim=128, max_position_embeddings=32768, rope_theta=10000.0,
                      rms_norm_eps=1e-5, sliding_window=None, tie_word_embeddings=False),
        "exit_layers": (19, 32),
    },
    "tiny": {
        "shape": dict(vocab_size=1000, hidden_size=64, intermediate_size=128,
                      num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                      head_dim=16, max_position_embeddings=4096, sliding_window=None,
                      tie_word_embeddings=False),
        "exit_layers": (2, 4),
    },
}

# Words per sentence ~ Gamma(shape 2), the draw scaled to mean 13.4 (CoNLL-2003 test: 46,435
# words in 3,453 sentences); subtokens per word drawn from SUBTOKENS (mean 1.4).
WORDS_SHAPE, WORDS_MEAN = 2.0, 13.4
MAX_WORDS = 124
SUBTOKENS = ((1, 2, 3), (0.7, 0.2, 0.1))


def synthetic_sentences(n: int, vocab: int, seed: int = 0) -> list[list[list[int]]]:
    """``n`` sentences of random word subtoken ids, CoNLL-2003-test-like lengths."""
    rng = random.Random(seed)
    raw = [rng.gammavariate(WORDS_SHAPE, 1.0) for _ in range(n)]
    scale = WORDS_MEAN / (sum(raw) / n) if n else 1.0
    out = []
    for x in raw:
        words = min(MAX_WORDS, max(1, round(x * scale)))
        subs = rng.choices(SUBTOKENS[0], SUBTOKENS[1], k=words)
        out.append([[rng.randrange(5, vocab) for _ in range(s)] for s in subs])
    return out


def sentence_stats(sentences: list[list[list[int]]]) -> dict[str, float]:
    """Counts and means of synthetic sentences (words, subtokens)."""
    words = [len(s) for s in sentences]
    subs = [len(w) for s in sentences for w in s]
    return {"sentences": len(sentences), "words_mean": round(sum(words) / len(words), 2),
            "words_max": max(words), "subtokens_per_word": round(sum(subs) / len(subs), 3),
            "subtokens_per_sentence": round(sum(subs) / len(sentences), 2)}


def model_config(name: str, exit_layer: int | None = None) -> Any:
    """The MistralConfig of ``name``, cut to ``exit_layer`` layers when given."""
    from transformers import MistralConfig

    cfg = MistralConfig(bos_token_id=1, eos_token_id=2, pad_token_id=3,
                        **CONFIGS[name]["shape"])
    if exit_layer is not None:
        cut_config(cfg, exit_layer)
    return cfg


def build_backbone(name: str, exit_layer: int, device: torch.device, dtype: torch.dtype,
                   tokenizer: Any) -> Backbone:
    """A random ``name``-shaped model with ``exit_layer`` layers, built on ``device``."""
    from transformers import AutoModel

    total = CONFIGS[name]["shape"]["num_hidden_layers"]
    cfg = model_config(name, exit_layer)
    torch.manual_seed(exit_layer)
    with torch.device(device):
        model = AutoModel.from_config(cfg, dtype=dtype, attn_implementation="sdpa")
    stray = {p.device for p in model.parameters()} - {torch.device(device)}
    if stray:  # a transformers version that builds elsewhere first
        model.to(device)
    model.eval()
    info = BackboneInfo(f"random:{name}", False, total, len(layer_stack(model)),
                        int(cfg.hidden_size), int(cfg.pad_token_id))
    return Backbone(model, tokenizer, info)


def make_labeler(backbone: Backbone, name: str, repetitions: int, exit_layer: int,
                 finetune: str, device: torch.device, precision: str) -> Any:
    """seqrep's own ``SequenceLabeler`` (the 9 CoNLL tags) around a random backbone."""
    from seqrep.config import LabelerConfig
    from seqrep.model.device import Placement
    from seqrep.model.labeler import SequenceLabeler

    config = LabelerConfig(model=f"random:{name}", labels=list(CONLL_TAGS),
                           repetitions=repetitions, exit_layer=exit_layer, finetune=finetune,
                           bos="yes", dtype="bfloat16" if precision == "bf16" else "float32")
    labeler = SequenceLabeler(config, backbone)
    if getattr(backbone.model, "is_loaded_in_4bit", False):
        labeler.head.to(device)  # a 4-bit base stays where bitsandbytes put it
        labeler.placement = Placement.resolve(device, precision)
    else:
        labeler.place(device, precision)
    return labeler


def bnb_config() -> Any:
    """QLoRA's 4-bit base: NF4, double quantization, bf16 compute."""
    from transformers import BitsAndBytesConfig

    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                              bnb_4bit_use_double_quant=True,
                              bnb_4bit_compute_dtype=torch.bfloat16)


def quantize_in_memory(model: nn.Module, qc: Any, device: torch.device) -> int:
    """Replace every Linear of the blocks by a bitsandbytes Linear4bit quantized on
    ``device`` from its own weight; returns how many were replaced."""
    import bitsandbytes as bnb

    count = 0
    for parent in list(layer_stack(model).modules()):
        for child_name, child in list(parent.named_children()):
            if type(child) is not nn.Linear:
                continue
            q = bnb.nn.Linear4bit(child.in_features, child.out_features,
                                  bias=child.bias is not None,
                                  compute_dtype=qc.bnb_4bit_compute_dtype,
                                  compress_statistics=qc.bnb_4bit_use_double_quant,
                                  quant_type=qc.bnb_4bit_quant_type,
                                  quant_storage=qc.bnb_4bit_quant_storage, device="meta")
            weight = bnb.nn.Params4bit(child.weight.data, requires_grad=False,
                                       compress_statistics=qc.bnb_4bit_use_double_quant,
                                       quant_type=qc.bnb_4bit_quant_type,
                                       quant_storage=qc.bnb_4bit_quant_storage, module=q)
            q.weight = weight.to(device)
            if child.bias is not None:
                q.bias = nn.Parameter(child.bias.data, requires_grad=False)
            setattr(parent, child_name, q)
            count += 1
    model.is_loaded_in_4bit = True
    return count


def count_4bit(model: nn.Module) -> int:
    """How many bitsandbytes 4-bit Linears ``model`` holds."""
    import bitsandbytes as bnb

    return sum(isinstance(m, bnb.nn.Linear4bit) for m in model.modules())


def quantized_backbone(name: str, layers: int, device: torch.device, method: str,
                       tmp: str | None, tokenizer: Any,
                       echo: Any = print) -> tuple[Backbone, str, int]:
    """A random 4-bit ``name`` backbone; ``(backbone, method used, replaced Linears)``.
    ``method``: memory, saved, or auto (memory, falling back to saved)."""
    from transformers import AutoModel

    qc = bnb_config()
    backbone = build_backbone(name, layers, device, torch.bfloat16, tokenizer)
    if method in ("memory", "auto"):
        try:
            quantize_in_memory(backbone.model, qc, device)
            return backbone, "memory", count_4bit(backbone.model)
        except Exception as err:  # noqa: BLE001 - fall back to a saved checkpoint
            if method == "memory":
                raise
            echo(f"  qlora: in-memory quantization failed ({type(err).__name__}: {err}); "
                 f"saving the random model and loading it quantized", flush=True)
            del backbone
            reset_memory(device)
            backbone = build_backbone(name, layers, device, torch.bfloat16, tokenizer)
    folder = tempfile.mkdtemp(prefix="bench-gpu-qlora-", dir=tmp)
    try:
        backbone.model.save_pretrained(folder, safe_serialization=True)
        info = backbone.info
        del backbone
        reset_memory(device)
        where = device.index if device.type == "cuda" and device.index is not None else (
            0 if device.type == "cuda" else "cpu")
        model = AutoModel.from_pretrained(folder, quantization_config=qc,
                                          device_map={"": where}, dtype=torch.bfloat16,
                                          attn_implementation="sdpa", use_safetensors=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    model.eval()
    info = BackboneInfo(info.source, False, info.total_layers, len(layer_stack(model)),
                        info.hidden_size, info.pad_id)
    return Backbone(model, tokenizer, info), "saved", count_4bit(model)
