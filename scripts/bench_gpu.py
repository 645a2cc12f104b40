#!/usr/bin/env python
# On the GPU machine, from the repository root (its python3 must already hold torch with CUDA;
# the lent H200's image has python3 3.12 with torch 2.11+cu130, transformers 5.17, peft,
# safetensors and accelerate, but no bitsandbytes):
#   PYTHONPATH=src python3 scripts/bench_gpu.py --device cuda --config mistral-7b-shape \
#       --output results/gpu-bench-h200.json
# Through the device tool only $OUT comes back, so there write the JSON and the log to it:
#   set -o pipefail; PYTHONUNBUFFERED=1 PYTHONPATH=src python3 scripts/bench_gpu.py \
#       --device cuda --config mistral-7b-shape --output $OUT/gpu-bench-h200.json \
#       2>&1 | tee $OUT/bench-gpu.log
# For the QLoRA step too, carry bitsandbytes as a wheel (43 MB; here, in the repo root:
#   echo /.whl/ >> .git/info/exclude; python3 -m pip download --no-deps --only-binary=:all: \
#     --python-version 3.12 --implementation cp --platform manylinux_2_24_x86_64 -d .whl \
#     bitsandbytes==0.50.2
# ), name .whl in the run's carry, and start the command with
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target \
#     /tmp/site .whl/*.whl && export PYTHONPATH=src:/tmp/site || exit;
# On a CPU (what tests/lab/test_bench_gpu.py runs, in seconds):
#   PYTHONPATH=src python scripts/bench_gpu.py --device cpu --config tiny --quick
"""GPU benchmark of the sequence labeler at Mistral-7B shape, with random weights.

Nothing is downloaded or read from disk: a ``transformers.MistralConfig`` of the 7B shape
(32 layers, hidden 4096, 32 heads / 8 KV heads, intermediate 14336, vocab 32000,
``sliding_window=None``: every sequence here is far shorter than 4096 anyway) is cut with
:func:`seqrep.model.backbone.cut_config` to the exit layer *before* the model is built, and the
model is created directly on the device in bf16 (``with torch.device(dev):
AutoModel.from_config(...)``), so the layers above L never exist. It is wrapped in seqrep's
own ``SequenceLabeler(LabelerConfig(model="random:mistral-7b-shape", ...), Backbone(...))``
(frozen backbone, the 9 CoNLL tags) with a tiny word-level tokenizer built in code; the
timed passes feed token ids directly.

Inputs: ``--sentences`` (1,024) synthetic CoNLL-2003-test-like sentences from a fixed seed:
words per sentence from Gamma(2), scaled to mean 13.4 (as CoNLL-2003 test), clipped to 1..124,
subtokens per word 1, 2 or 3 with probability .7/.2/.1 (mean 1.4), random ids. Each sentence
is laid out k = r + 1 times behind one BOS by :func:`seqrep.encode.repeat.encode_sentence`
(which calls ``build_segment``), grouped by ``length_batches`` and padded by ``collate`` into
batches of at most ``--max-tokens`` padded tokens: 512 (seqrep's own inference default) and
4096 (a GPU-sized batch), every batch moved to the device before timing.

Measured, for r in {0, 1, 4} and exit layer 19 against 32, under ``torch.no_grad()``, with
the device synchronised around each pass, one full warm-up pass and the best of 3 passes
(``labeler.forward``: backbone, pooling of the read positions, linear head):

- real (non-padding) tokens/s and sentences/s;
- useful FLOP/s, counted as ``seqrep.lab.bench`` does: ``2 * tokens * linear weights of the
  used blocks + 4 * blocks * tokens^2 * attention width`` per row, real tokens only;
- the share of the GPU's dense bf16 peak (a table by ``torch.cuda.get_device_name()``:
  H200 / H100 SXM 989 TFLOP/s, H100 PCIe 756, A100 312, L4 121; otherwise the measured ceiling)
  and of a measured matmul ceiling (best of large bf16 products and the model's own Linear
  shapes), always both;
- peak memory (``torch.cuda.max_memory_allocated``, reset for each setting) and the weights;
- the speed-up of L=19 over L=32 at each r and batch size.

Training steps (forward + backward + AdamW step on a batch of ``--train-sentences`` 32
sentences at r=1, L=32, autocast bf16, dropout on; one warm-up step, best of 3):

- ``lora``: LoRA r=16, alpha 16, dropout 0.1 on q, k, v, o of the bf16 base, through
  ``LabelerConfig(finetune="lora")``;
- ``qlora`` (only when bitsandbytes imports): the same LoRA on a 4-bit NF4 base with double
  quantization and bf16 compute, the settings read from a ``transformers.BitsAndBytesConfig``.
  ``from_config`` cannot quantize, so by default (``--qlora-method memory``) every Linear of the
  freshly built random bf16 blocks is replaced by a ``bitsandbytes.nn.Linear4bit`` whose
  ``Params4bit`` is quantized on the device from that very weight (what ``from_pretrained``
  does per tensor), then ``peft.prepare_model_for_kbit_training`` (no gradient checkpointing)
  and LoRA. ``--qlora-method saved`` instead writes the random bf16 model to a temporary folder
  (safetensors, on the GPU machine's disk only, deleted after) and loads it with
  ``quantization_config=``; ``auto`` (the default) tries ``memory`` and falls back to ``saved``.
  The JSON says which ran. Without bitsandbytes: ``"qlora": {"skipped": "bitsandbytes is not
  installed"}``.

Budget on one H200 (about 790 TFLOP/s measured on bf16 products there): start and imports
~15 s; ceiling ~2 s; building the random 32- and 19-layer models ~5-10 s each; forward passes:
1,024 sentences are ~20k / 39k / 97k real tokens at r = 0 / 1 / 4, ~14 GFLOP per token at
L=32, so 4 passes x 2 batch sizes come to ~18 PFLOP at L=32 and ~10 at L=19: ~60-90 s in all;
LoRA step ~10 s; QLoRA ~20 s in memory (a ``saved`` fallback adds ~1-2 min of writing and
reading 14 GB). About 2-3 minutes, under 5. ``--quick`` (256 sentences, 1 timed pass, no
512-token batches on CUDA) is about a minute.

The same code runs on a CPU with ``--config tiny`` (4 layers, hidden 64, vocab 1000, exit
layers 2 vs 4, fp32): that is its test (tests/lab/test_bench_gpu.py).

Needs only torch, transformers (and its tokenizers), peft (training steps), safetensors (the
``saved`` QLoRA method), bitsandbytes (QLoRA, optional) and seqrep from ``src/``; whatever is
missing is said in one line, not a traceback. Exit status: 0 when every setting ran, 1 when
some setting failed (its row holds the error; the JSON is still written), 2 when it cannot
start.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import math
import platform
import random
import re
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

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

# Dense (no sparsity) bf16 tensor-core peaks in TFLOP/s, by device name; first match wins.
PEAK_BF16_TFLOPS: list[tuple[str, float]] = [
    (r"H200", 989.0),
    (r"H100.*(SXM|HBM3)", 989.0),
    (r"H100.*PCIe", 756.0),
    (r"A100", 312.0),
    (r"\bL4\b", 121.0),
]

# Words per sentence ~ Gamma(shape 2), the draw scaled to mean 13.4 (CoNLL-2003 test: 46,435
# words in 3,453 sentences); subtokens per word drawn from SUBTOKENS (mean 1.4).
WORDS_SHAPE, WORDS_MEAN = 2.0, 13.4
MAX_WORDS = 124
SUBTOKENS = ((1, 2, 3), (0.7, 0.2, 0.1))


class Missing(RuntimeError):
    """Something the benchmark needs is not installed or not available here."""


# ----------------------------------------------------------------------------- requirements
def _version(name: str, load: bool = False) -> str | None:
    """The installed version of ``name`` (None when absent); with ``load``, also import it
    (None when that fails: a package that is there but cannot load is not usable)."""
    import importlib.metadata
    import importlib.util

    try:
        if importlib.util.find_spec(name) is None:
            return None
        if load:
            importlib.import_module(name)
    except Exception:  # noqa: BLE001 - any import failure means "not usable here"
        return None
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def check_requirements(device: str) -> dict[str, str | None]:
    """Versions of what the benchmark uses; raises Missing naming what is absent."""
    versions = {name: _version(name, load=name in ("torch", "transformers", "tokenizers"))
                for name in ("torch", "transformers", "tokenizers", "peft", "safetensors",
                             "bitsandbytes")}
    for name in ("torch", "transformers", "tokenizers"):
        if versions[name] is None:
            raise Missing(f"{name} is not installed in {sys.executable}; this benchmark needs "
                          f"torch and transformers (with its tokenizers)")
    try:
        importlib.import_module("seqrep.model.labeler")
    except ImportError as err:
        raise Missing(f"cannot import seqrep ({err}); run from the repository root as "
                      f"PYTHONPATH=src python scripts/bench_gpu.py ...") from None
    import torch

    if device.startswith("cuda") and not torch.cuda.is_available():
        raise Missing(f"--device {device}: CUDA is not available (torch {torch.__version__}, "
                      f"built for CUDA {torch.version.cuda}); use a CUDA build of torch on a "
                      f"GPU machine, or --device cpu --config tiny")
    return versions


# ----------------------------------------------------------------------------- building
def make_tokenizer() -> Any:
    """A tiny word-level tokenizer for the labeler's Encoder (the passes feed ids directly)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, "<pad>": 3, "a": 4}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>", pad_token="<pad>")


def model_config(name: str, exit_layer: int | None = None) -> Any:
    """The MistralConfig of ``name``, cut to ``exit_layer`` layers when given."""
    from transformers import MistralConfig

    from seqrep.model.backbone import cut_config

    cfg = MistralConfig(bos_token_id=1, eos_token_id=2, pad_token_id=3,
                        **CONFIGS[name]["shape"])
    if exit_layer is not None:
        cut_config(cfg, exit_layer)
    return cfg


def build_backbone(name: str, exit_layer: int, device: Any, dtype: Any) -> Any:
    """A random ``name``-shaped model with ``exit_layer`` layers, built on ``device``."""
    import torch
    from transformers import AutoModel

    from seqrep.model.backbone import Backbone, BackboneInfo, layer_stack

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
    return Backbone(model, make_tokenizer(), info)


def make_labeler(backbone: Any, name: str, repetitions: int, exit_layer: int, finetune: str,
                 device: Any, precision: str) -> Any:
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
    words = [len(s) for s in sentences]
    subs = [len(w) for s in sentences for w in s]
    return {"sentences": len(sentences), "words_mean": round(sum(words) / len(words), 2),
            "words_max": max(words), "subtokens_per_word": round(sum(subs) / len(subs), 3),
            "subtokens_per_sentence": round(sum(subs) / len(sentences), 2)}


def plan_batches(labeler: Any, sentences: list[list[list[int]]], max_tokens: int,
                 device: Any, labels: bool = False) -> tuple[list[Any], list[int]]:
    """Device batches of the sentences' segments (length-sorted, at most ``max_tokens``
    padded tokens each) and the real length of every row."""
    from seqrep.encode.batch import collate, length_batches
    from seqrep.encode.repeat import encode_sentence

    segments = [seg for words in sentences for seg in encode_sentence(words, labeler.spec)]
    lengths = [len(s) for s in segments]
    rng = random.Random(1)
    batches = []
    for idx in length_batches(lengths, batch_size=max_tokens, max_tokens=max_tokens):
        segs = [segments[i] for i in idx]
        tags = [[rng.randrange(len(CONLL_TAGS)) for _ in s.words] for s in segs] if labels \
            else None
        batches.append(collate(segs, labeler.encoder.pad_id, labeler.config.padding_side,
                               tags).to(device))
    return batches, lengths


# ----------------------------------------------------------------------------- measuring
def flops_per_token(model: Any) -> tuple[int, int, int]:
    """``(linear weights in the blocks, blocks, attention width)``: the terms of the FLOP
    count of ``seqrep.lab.bench.flops_per_token``, with each Linear counted as
    ``in * out`` so that a 4-bit layer (packed weights) counts as its full-precision self."""
    from torch import nn

    from seqrep.model.backbone import layer_stack

    blocks = layer_stack(model)
    linear = sum(m.in_features * m.out_features for m in blocks.modules()
                 if isinstance(m, nn.Linear))
    cfg = model.config
    width = cfg.num_attention_heads * (getattr(cfg, "head_dim", None)
                                       or cfg.hidden_size // cfg.num_attention_heads)
    return linear, len(blocks), width


def _sync(device: Any) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _reset_memory(device: Any) -> None:
    import torch

    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def _sig(x: float, digits: int = 4) -> float:
    """``x`` to ``digits`` significant digits (rates span 1e-4 TFLOP/s on a CPU to 1e3)."""
    return float(f"{x:.{digits}g}")


def _gb(n: float | None) -> float | None:
    return None if n is None else round(n / 2**30, 3)


def _allocated(device: Any) -> float | None:
    import torch

    return torch.cuda.memory_allocated(device) if device.type == "cuda" else None


def _peak(device: Any) -> float | None:
    import torch

    return torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None


def _rss_peak_mb() -> float | None:
    try:
        import resource
    except ImportError:
        return None
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def table_peak(device_name: str) -> float | None:
    """The dense bf16 peak of a known GPU, TFLOP/s; None for others (and CPUs)."""
    for pattern, tflops in PEAK_BF16_TFLOPS:
        if re.search(pattern, device_name):
            return tflops
    return None


def matmul_ceiling(name: str, tokens: int, device: Any, dtype: Any,
                   repeats: int = 10) -> dict[str, Any]:
    """Measured TFLOP/s of ``x @ w.T`` on the model's own Linear shapes at ``tokens`` rows,
    plus large square products on a GPU; the best is the measured ceiling."""
    import torch

    shape = CONFIGS[name]["shape"]
    h, f = shape["hidden_size"], shape["intermediate_size"]
    kv = shape["num_key_value_heads"] * shape["head_dim"]
    q = shape["num_attention_heads"] * shape["head_dim"]
    shapes = sorted({(tokens, h, q), (tokens, h, kv), (tokens, q, h), (tokens, h, f),
                     (tokens, f, h)})
    if device.type == "cuda":
        shapes += [(8192, 8192, 8192), (16384, 8192, 8192)]
    rates = {}
    for m, k, n in shapes:
        x = torch.randn(m, k, device=device, dtype=dtype)
        w = torch.randn(n, k, device=device, dtype=dtype)
        for _ in range(3):
            torch.nn.functional.linear(x, w)
        _sync(device)
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(repeats):
                torch.nn.functional.linear(x, w)
            end.record()
            end.synchronize()
            seconds = start.elapsed_time(end) / 1000 / repeats
        else:
            seconds = float("inf")
            for _ in range(repeats):
                t0 = time.perf_counter()
                torch.nn.functional.linear(x, w)
                seconds = min(seconds, time.perf_counter() - t0)
        rates[f"{m}x{k}x{n}"] = _sig(2 * m * k * n / seconds / 1e12)
        del x, w
    return {"tflops": max(rates.values()), "dtype": str(dtype).replace("torch.", ""),
            "repeats": repeats, "shapes": rates}


def time_passes(fn: Any, batches: list[Any], device: Any, repeats: int) -> list[float]:
    """One warm-up pass over ``batches``, then ``repeats`` timed passes (seconds each)."""
    for b in batches:
        fn(b)
    times = []
    for _ in range(max(1, repeats)):
        _sync(device)
        t0 = time.perf_counter()
        for b in batches:
            fn(b)
        _sync(device)
        times.append(time.perf_counter() - t0)
    return times


def forward_row(labeler: Any, sentences: list[list[list[int]]], max_tokens: int,
                device: Any, repeats: int, ceiling: float, peak: float | None,
                weights: float | None) -> dict[str, Any]:
    """Time ``labeler.forward`` over all sentences in ``max_tokens`` batches."""
    import torch

    from seqrep.model.backbone import layer_stack

    batches, lengths = plan_batches(labeler, sentences, max_tokens, device)
    real = sum(lengths)
    padded = sum(int(b.attention_mask.numel()) for b in batches)
    linear, blocks, width = flops_per_token(labeler.backbone)
    flops = sum(2 * t * linear + 4 * blocks * t * t * width for t in lengths)
    _reset_memory(device)
    with torch.no_grad():
        times = time_passes(labeler.forward, batches, device, repeats)
        finite = bool(torch.isfinite(labeler.forward(batches[-1])).all())
    seconds = min(times)
    tflops = flops / seconds / 1e12
    return {
        "exit_layer": labeler.config.exit_layer,
        "layers_computed": len(layer_stack(labeler.backbone)),
        "config_layers": int(labeler.backbone.config.num_hidden_layers),
        "total_layers": labeler.backbone_info.total_layers,
        "repetitions": labeler.config.repetitions, "copies": labeler.spec.copies,
        "max_tokens": max_tokens, "batches": len(batches), "sentences": len(sentences),
        "rows": len(lengths), "tokens": real, "padded_tokens": padded,
        "padding_waste": round(1 - real / padded, 4),
        "seconds": round(seconds, 4), "seconds_all": [round(t, 4) for t in times],
        "tokens_per_second": round(real / seconds, 1),
        "sentences_per_second": round(len(sentences) / seconds, 2),
        "flops": int(flops), "flops_per_token": round(flops / real),
        "tflops_per_second": _sig(tflops),
        "share_of_peak": _sig(tflops / peak) if peak else None,
        "share_of_measured_ceiling": _sig(tflops / ceiling),
        "weights_gb": _gb(weights), "peak_memory_gb": _gb(_peak(device)),
        "finite": finite,
    }


def train_step_row(labeler: Any, sentences: list[list[list[int]]], device: Any,
                   repeats: int) -> dict[str, Any]:
    """Forward + backward + AdamW step on one batch of ``sentences`` (train mode)."""
    import torch

    batches, lengths = plan_batches(labeler, sentences, 10**9, device, labels=True)
    (batch,) = batches
    params = [p for p in labeler.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=2e-4)
    labeler.train()

    def step() -> float:
        loss = torch.nn.functional.cross_entropy(labeler(batch), batch.labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return float(loss.detach())

    _reset_memory(device)
    losses = [step()]  # warm-up (also allocates the optimizer state)
    times = []
    for _ in range(max(1, repeats)):
        _sync(device)
        t0 = time.perf_counter()
        losses.append(step())
        _sync(device)
        times.append(time.perf_counter() - t0)
    labeler.eval()
    seconds = min(times)
    real = sum(lengths)
    base = getattr(labeler.backbone, "get_base_model", lambda: labeler.backbone)()
    linear, blocks, width = flops_per_token(base)
    fwd = sum(2 * t * linear + 4 * blocks * t * t * width for t in lengths)
    return {"sentences": len(sentences), "rows": len(lengths), "tokens": real,
            "padded_tokens": int(batch.attention_mask.numel()),
            "repetitions": labeler.config.repetitions, "exit_layer": labeler.config.exit_layer,
            "trainable_parameters": sum(p.numel() for p in params),
            "seconds": round(seconds, 4), "seconds_all": [round(t, 4) for t in times],
            "tokens_per_second": round(real / seconds, 1),
            "forward_flops": int(fwd),
            "approx_tflops_per_second": _sig(3 * fwd / seconds / 1e12),
            "peak_memory_gb": _gb(_peak(device)), "losses": [round(x, 4) for x in losses],
            "finite": all(math.isfinite(x) for x in losses)}


# ----------------------------------------------------------------------------- QLoRA
def bnb_config() -> Any:
    """QLoRA's 4-bit base: NF4, double quantization, bf16 compute."""
    import torch
    from transformers import BitsAndBytesConfig

    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                              bnb_4bit_use_double_quant=True,
                              bnb_4bit_compute_dtype=torch.bfloat16)


def quantize_in_memory(model: Any, qc: Any, device: Any) -> int:
    """Replace every Linear of the blocks by a bitsandbytes Linear4bit quantized on
    ``device`` from its own weight; returns how many were replaced."""
    import bitsandbytes as bnb
    from torch import nn

    from seqrep.model.backbone import layer_stack

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


def quantized_backbone(name: str, layers: int, device: Any, method: str,
                       tmp: str | None) -> tuple[Any, str, int]:
    """A random 4-bit ``name`` backbone; ``(backbone, method used, replaced Linears)``."""
    import torch
    from transformers import AutoModel

    from seqrep.model.backbone import Backbone, BackboneInfo, layer_stack

    qc = bnb_config()
    backbone = build_backbone(name, layers, device, torch.bfloat16)
    if method in ("memory", "auto"):
        try:
            quantize_in_memory(backbone.model, qc, device)
            return backbone, "memory", _count_4bit(backbone.model)
        except Exception as err:  # noqa: BLE001 - fall back to a saved checkpoint
            if method == "memory":
                raise
            print(f"  qlora: in-memory quantization failed ({type(err).__name__}: {err}); "
                  f"saving the random model and loading it quantized", flush=True)
            del backbone
            _reset_memory(device)
            backbone = build_backbone(name, layers, device, torch.bfloat16)
    folder = tempfile.mkdtemp(prefix="bench-gpu-qlora-", dir=tmp)
    try:
        backbone.model.save_pretrained(folder, safe_serialization=True)
        info, tokenizer = backbone.info, backbone.tokenizer
        del backbone
        _reset_memory(device)
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
    return Backbone(model, tokenizer, info), "saved", _count_4bit(model)


def _count_4bit(model: Any) -> int:
    import bitsandbytes as bnb

    return sum(isinstance(m, bnb.nn.Linear4bit) for m in model.modules())


def qlora_row(name: str, layers: int, sentences: list[list[list[int]]], device: Any,
              precision: str, repeats: int, method: str, tmp: str | None) -> dict[str, Any]:
    from peft import prepare_model_for_kbit_training

    t0 = time.perf_counter()
    backbone, used, replaced = quantized_backbone(name, layers, device, method, tmp)
    backbone.model = prepare_model_for_kbit_training(backbone.model,
                                                     use_gradient_checkpointing=False)
    build = time.perf_counter() - t0
    weights = _allocated(device)
    labeler = make_labeler(backbone, name, 1, layers, "lora", device, precision)
    row = train_step_row(labeler, sentences, device, repeats)
    row.update({"method": used, "linears_quantized": replaced, "build_seconds": round(build, 2),
                "weights_gb": _gb(weights), "quantization": "nf4, double quantization, "
                "bf16 compute", "lora": _lora_facts(labeler), "gradient_checkpointing": False})
    del labeler, backbone
    return row


def _lora_facts(labeler: Any) -> dict[str, Any]:
    peft_config = next(iter(labeler.backbone.peft_config.values()))
    return {"r": peft_config.r, "alpha": peft_config.lora_alpha,
            "dropout": peft_config.lora_dropout,
            "targets": sorted(peft_config.target_modules)}


# ----------------------------------------------------------------------------- the run
def _error(err: BaseException) -> dict[str, str]:
    line = str(err).splitlines()[0] if str(err) else ""
    return {"error": f"{type(err).__name__}: {line}"[:500],
            "where": traceback.format_exc(limit=-3)[-1500:]}


def speedups(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per r and batch size: the shallowest exit against the deepest (time ratio)."""
    ok = [r for r in rows if "error" not in r]
    out = []
    for key in sorted({(r["repetitions"], r["max_tokens"]) for r in ok}):
        group = sorted((r for r in ok if (r["repetitions"], r["max_tokens"]) == key),
                       key=lambda r: r["layers_computed"])
        deep = group[-1]
        for row in group[:-1]:
            out.append({"repetitions": key[0], "max_tokens": key[1],
                        "exit_layer": row["exit_layer"], "against": deep["exit_layer"],
                        "layer_share": round(row["layers_computed"] / deep["layers_computed"],
                                             4),
                        "ideal_speedup": round(deep["layers_computed"] / row["layers_computed"],
                                               3),
                        "speedup": round(deep["seconds"] / row["seconds"], 3),
                        "memory_share": (round(row["peak_memory_gb"] / deep["peak_memory_gb"],
                                               3) if row["peak_memory_gb"] else None)})
    return out


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (default cuda)")
    p.add_argument("--config", default="mistral-7b-shape", choices=sorted(CONFIGS))
    p.add_argument("--output", type=Path, default=None, help="write the JSON here")
    p.add_argument("--quick", action="store_true",
                   help="256 sentences, 1 timed pass, one batch size (4096 on CUDA)")
    p.add_argument("--sentences", type=int, default=None, help="default 1024 (quick: 256)")
    p.add_argument("--repeats", type=int, default=None, help="timed passes, best counts "
                                                              "(default 3; quick: 1)")
    p.add_argument("--repetitions", type=_ints, default=(0, 1, 4), help="values of r")
    p.add_argument("--exit-layers", type=_ints, default=None,
                   help="default: the config's (19,32 for mistral-7b-shape; 2,4 for tiny)")
    p.add_argument("--max-tokens", type=_ints, default=None,
                   help="padded tokens per batch (default 512,4096; quick: 4096 on CUDA)")
    p.add_argument("--train-sentences", type=int, default=32, help="sentences in the step")
    p.add_argument("--no-train", action="store_true", help="skip the LoRA and QLoRA steps")
    p.add_argument("--qlora-method", choices=("auto", "memory", "saved"), default="auto")
    p.add_argument("--tmp", default=None, help="folder for the 'saved' QLoRA checkpoint")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--allow-cpu", action="store_true",
                   help="run a full-size --config on the CPU anyway")
    args = p.parse_args(argv)
    cuda = args.device.startswith("cuda")
    args.sentences = args.sentences or (256 if args.quick else 1024)
    args.repeats = args.repeats or (1 if args.quick else 3)
    args.exit_layers = tuple(sorted(args.exit_layers or CONFIGS[args.config]["exit_layers"]))
    args.max_tokens = args.max_tokens or ((4096,) if args.quick and cuda else (512, 4096))
    return args


def run(args: argparse.Namespace, versions: dict[str, str | None]) -> dict[str, Any]:
    import torch

    from seqrep.model.device import resolve_device

    device = resolve_device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    cuda = device.type == "cuda"
    dtype = torch.bfloat16 if cuda else torch.float32
    precision = "bf16" if cuda else "fp32"
    shape = CONFIGS[args.config]["shape"]
    total = shape["num_hidden_layers"]
    if not cuda and args.config != "tiny" and not args.allow_cpu:
        raise Missing(f"--config {args.config} on the CPU would build a full-size model in "
                      f"fp32; use --device cuda on a GPU machine, or --config tiny here "
                      f"(--allow-cpu to insist)")
    if any(not 1 <= x <= total for x in args.exit_layers):
        raise Missing(f"--exit-layers {args.exit_layers}: {args.config} has layers 1..{total}")
    name = torch.cuda.get_device_name(device) if cuda else (platform.processor()
                                                             or platform.machine())
    peak = table_peak(name) if cuda else None
    env = {"device": name, "device_type": device.type, "python": platform.python_version(),
           "torch_cuda": torch.version.cuda, **{k: v for k, v in versions.items()}}
    if cuda:
        props = torch.cuda.get_device_properties(device)
        env.update({"capability": f"{props.major}.{props.minor}",
                    "multiprocessors": props.multi_processor_count,
                    "memory_gb": _gb(props.total_memory)})
    print(f"bench_gpu: {args.config} on {name} ({device}), torch {versions['torch']}, "
          f"transformers {versions['transformers']}", flush=True)

    t_start = time.perf_counter()
    ceiling = matmul_ceiling(args.config, max(args.max_tokens), device, dtype,
                             repeats=10 if cuda else 5)
    measured = ceiling["tflops"]
    print(f"  matmul ceiling (measured, {ceiling['dtype']}): {measured} TFLOP/s; "
          f"table peak: {peak or 'none for this device'}", flush=True)

    sentences = synthetic_sentences(args.sentences, shape["vocab_size"], args.seed)
    train_sentences = synthetic_sentences(args.train_sentences, shape["vocab_size"],
                                          args.seed + 1)
    rows: list[dict[str, Any]] = []
    builds: list[dict[str, Any]] = []
    deepest = max(args.exit_layers)
    lora: dict[str, Any] = {"skipped": "--no-train"} if args.no_train else {}
    print(HEADER, flush=True)
    for layers in sorted(args.exit_layers, reverse=True):
        _reset_memory(device)
        t0 = time.perf_counter()
        try:
            backbone = build_backbone(args.config, layers, device, dtype)
        except Exception as err:  # noqa: BLE001 - record and go on
            builds.append({"exit_layer": layers, **_error(err)})
            print(f"  L={layers}: build failed: {builds[-1]['error']}", flush=True)
            continue
        weights = _allocated(device)
        builds.append({"exit_layer": layers, "seconds": round(time.perf_counter() - t0, 2),
                       "weights_gb": _gb(weights),
                       "parameters": sum(p.numel() for p in backbone.model.parameters()),
                       "layers_built": backbone.info.num_layers})
        for r in args.repetitions:
            labeler = make_labeler(backbone, args.config, r, layers, "frozen", device,
                                   precision).eval()
            for mt in args.max_tokens:
                try:
                    row = forward_row(labeler, sentences, mt, device, args.repeats, measured,
                                      peak, weights)
                except Exception as err:  # noqa: BLE001 - e.g. out of memory
                    row = {"exit_layer": layers, "repetitions": r, "max_tokens": mt,
                           **_error(err)}
                rows.append(row)
                _print_row(row)
            del labeler
        if layers == deepest and not args.no_train:
            lora = _lora_step(backbone, args, train_sentences, device, precision)
        del backbone
    _reset_memory(device)
    qlora = _qlora(args, deepest, train_sentences, device, precision, versions)
    result = {
        "kind": "bench_gpu", "env": env,
        "config": {"name": args.config, "model": f"random:{args.config}",
                   "shape": shape, "dtype": str(dtype).replace("torch.", ""),
                   "precision": precision, "attn_implementation": "sdpa",
                   "exit_layers": list(args.exit_layers),
                   "repetitions": list(args.repetitions), "max_tokens": list(args.max_tokens),
                   "repeats": args.repeats, "warmup_passes": 1, "quick": args.quick,
                   "labels": CONLL_TAGS, "bos": True, "seed": args.seed,
                   "inputs": sentence_stats(sentences),
                   "timing": "labeler.forward over every batch (already on the device) under "
                             "torch.no_grad(), device synchronised around each pass; one "
                             "warm-up pass, the fastest of `repeats` passes counts",
                   "flops": "2 * real tokens * linear weights of the blocks + "
                            "4 * blocks * tokens^2 * attention width, per row"},
        "peak_bf16_tflops": peak,
        "peak_source": "table" if peak else "measured (no table entry)",
        "matmul_ceiling": ceiling, "builds": builds, "rows": rows,
        "speedups": speedups(rows), "lora": lora, "qlora": qlora,
        "rss_peak_mb": _rss_peak_mb(),
        "total_seconds": round(time.perf_counter() - t_start, 1),
    }
    return result


def _lora_step(backbone: Any, args: argparse.Namespace, sentences: list, device: Any,
               precision: str) -> dict[str, Any]:
    if _version("peft") is None:
        return {"skipped": "peft is not installed"}
    layers = backbone.info.num_layers
    try:
        labeler = make_labeler(backbone, args.config, 1, layers, "lora", device, precision)
        row = train_step_row(labeler, sentences, device, args.repeats)
        row.update({"base": "bf16" if precision == "bf16" else "fp32",
                    "lora": _lora_facts(labeler)})
        del labeler
    except Exception as err:  # noqa: BLE001 - record and go on
        row = _error(err)
    _print_step("lora", row)
    return row


def _qlora(args: argparse.Namespace, layers: int, sentences: list, device: Any,
           precision: str, versions: dict[str, str | None]) -> dict[str, Any]:
    if args.no_train:
        row: dict[str, Any] = {"skipped": "--no-train"}
    elif versions.get("bitsandbytes") is None:
        row = {"skipped": "bitsandbytes is not installed"}
    elif _version("bitsandbytes", load=True) is None:
        row = {"skipped": "bitsandbytes is installed but does not import"}
    elif versions.get("peft") is None:
        row = {"skipped": "peft is not installed"}
    else:
        try:
            row = qlora_row(args.config, layers, sentences, device, "bf16"
                            if device.type == "cuda" else precision, args.repeats,
                            args.qlora_method, args.tmp)
        except Exception as err:  # noqa: BLE001 - record and go on
            row = _error(err)
        _reset_memory(device)
    _print_step("qlora", row)
    return row


# ----------------------------------------------------------------------------- printing
HEADER = (f"{'L':>3} {'r':>2} {'maxtok':>6} {'tokens/s':>11} {'sent/s':>9} {'TFLOP/s':>8} "
          f"{'%peak':>6} {'%meas':>6} {'peakGB':>7} {'waste':>6}")


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def _print_row(row: dict[str, Any]) -> None:
    if "error" in row:
        print(f"{row['exit_layer']:>3} {row['repetitions']:>2} {row['max_tokens']:>6}  "
              f"FAILED {row['error']}", flush=True)
        return
    gb = "-" if row["peak_memory_gb"] is None else f"{row['peak_memory_gb']:.2f}"
    print(f"{row['layers_computed']:>3} {row['repetitions']:>2} {row['max_tokens']:>6} "
          f"{row['tokens_per_second']:>11,.0f} {row['sentences_per_second']:>9,.1f} "
          f"{row['tflops_per_second']:>8.3f} {_pct(row['share_of_peak']):>6} "
          f"{_pct(row['share_of_measured_ceiling']):>6} {gb:>7} "
          f"{_pct(row['padding_waste']):>6}", flush=True)


def _print_step(kind: str, row: dict[str, Any]) -> None:
    if "skipped" in row:
        print(f"  {kind} step: skipped ({row['skipped']})", flush=True)
    elif "error" in row:
        print(f"  {kind} step: FAILED {row['error']}", flush=True)
    else:
        gb = "-" if row["peak_memory_gb"] is None else f"{row['peak_memory_gb']:.2f} GB peak"
        extra = f", {row['method']} quantization" if "method" in row else ""
        print(f"  {kind} step: {row['sentences']} sentences ({row['tokens']} tokens) r=1 "
              f"L={row['exit_layer']}: {1000 * row['seconds']:.1f} ms, {gb}{extra}",
              flush=True)


def print_summary(result: dict[str, Any]) -> None:
    print(HEADER)
    for row in result["rows"]:
        _print_row(row)
    for s in result["speedups"]:
        print(f"  r={s['repetitions']} maxtok={s['max_tokens']}: L={s['exit_layer']} vs "
              f"L={s['against']}: {s['speedup']:.2f}x (ideal {s['ideal_speedup']:.2f}x)")
    _print_step("lora", result["lora"])
    _print_step("qlora", result["qlora"])
    print(f"  total {result['total_seconds']} s")


def main(argv: list[str] | None = None) -> int:
    import warnings

    args = parse_args(argv)
    warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*")
    threads = None
    try:
        versions = check_requirements(args.device)
        import torch

        threads = torch.get_num_threads()
        result = run(args, versions)
    except Missing as err:
        print(f"bench_gpu: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001 - seqrep's ConfigError and the like: one line
        if type(err).__name__ not in ("ConfigError", "ModelError"):
            raise
        print(f"bench_gpu: {err}", file=sys.stderr)
        return 2
    finally:
        if threads is not None:
            torch.set_num_threads(threads)  # as it was (a caller's process, e.g. a test)
    print_summary(result)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(f"  wrote {args.output}")
    failed = [r for r in result["rows"] + result["builds"] if "error" in r]
    failed += [r for r in (result["lora"], result["qlora"]) if "error" in r]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
