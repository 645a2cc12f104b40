"""The rows of the device benchmark (``scripts/bench_gpu.py``): forward passes and training
steps of a labeler on batches already on the device, timed with :mod:`seqrep.lab.speed`
(the device synchronised around each pass, one warm-up pass, the fastest pass counts), the
matrix-multiply ceiling of a model shape, and the speed-up of a shallow exit over the deepest.
"""

from __future__ import annotations

import math
import random
import time
from typing import Any

import torch

from seqrep.lab.speed import (
    allocated,
    flops_per_token,
    forward_flops,
    gb,
    matmul_rate,
    peak_allocated,
    reset_memory,
    sig,
    time_passes,
)
from seqrep.lab.synthetic import CONFIGS, CONLL_TAGS, make_labeler, quantized_backbone
from seqrep.model.backbone import layer_stack


def shape_ceiling(name: str, tokens: int, device: torch.device, dtype: torch.dtype,
                  repeats: int = 10) -> dict[str, Any]:
    """Measured TFLOP/s of ``x @ w.T`` on the Linear shapes of model shape ``name`` at
    ``tokens`` rows, plus large square products on a GPU; the best is the measured ceiling."""
    shape = CONFIGS[name]["shape"]
    h, f = shape["hidden_size"], shape["intermediate_size"]
    kv = shape["num_key_value_heads"] * shape["head_dim"]
    q = shape["num_attention_heads"] * shape["head_dim"]
    shapes = sorted({(tokens, h, q), (tokens, h, kv), (tokens, q, h), (tokens, h, f),
                     (tokens, f, h)})
    if device.type == "cuda":
        shapes += [(8192, 8192, 8192), (16384, 8192, 8192)]
    rates = {f"{m}x{k}x{n}": sig(matmul_rate(m, k, n, device, dtype, repeats) / 1e12)
             for m, k, n in shapes}
    return {"tflops": max(rates.values()), "dtype": str(dtype).replace("torch.", ""),
            "repeats": repeats, "shapes": rates}


def plan_batches(labeler: Any, sentences: list[list[list[int]]], batch_tokens: int,
                 device: torch.device, labels: bool = False) -> tuple[list[Any], list[int]]:
    """Device batches of the sentences' segments (length-sorted, at most ``batch_tokens``
    padded tokens each) and the real length of every row."""
    from seqrep.encode.batch import collate, length_batches
    from seqrep.encode.repeat import encode_sentence

    segments = [seg for words in sentences for seg in encode_sentence(words, labeler.spec)]
    lengths = [len(s) for s in segments]
    rng = random.Random(1)
    batches = []
    for idx in length_batches(lengths, batch_size=batch_tokens, batch_tokens=batch_tokens):
        segs = [segments[i] for i in idx]
        tags = [[rng.randrange(len(CONLL_TAGS)) for _ in s.words] for s in segs] if labels \
            else None
        batches.append(collate(segs, labeler.encoder.pad_id, labeler.config.padding_side,
                               tags).to(device))
    return batches, lengths


def forward_row(labeler: Any, sentences: list[list[list[int]]], batch_tokens: int,
                device: torch.device, repeats: int, ceiling: float, peak: float | None,
                weights: float | None) -> dict[str, Any]:
    """Time ``labeler.forward`` over all sentences in ``batch_tokens`` batches."""
    batches, lengths = plan_batches(labeler, sentences, batch_tokens, device)
    real = sum(lengths)
    padded = sum(int(b.attention_mask.numel()) for b in batches)
    flops = forward_flops(lengths, flops_per_token(labeler.backbone))
    reset_memory(device)
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
        "max_tokens": batch_tokens, "batches": len(batches), "sentences": len(sentences),
        "rows": len(lengths), "tokens": real, "padded_tokens": padded,
        "padding_waste": round(1 - real / padded, 4),
        "seconds": round(seconds, 4), "seconds_all": [round(t, 4) for t in times],
        "tokens_per_second": round(real / seconds, 1),
        "sentences_per_second": round(len(sentences) / seconds, 2),
        "flops": int(flops), "flops_per_token": round(flops / real),
        "tflops_per_second": sig(tflops),
        "share_of_peak": sig(tflops / peak) if peak else None,
        "share_of_measured_ceiling": sig(tflops / ceiling),
        "weights_gb": gb(weights), "peak_memory_gb": gb(peak_allocated(device)),
        "finite": finite,
    }


def train_step_row(labeler: Any, sentences: list[list[list[int]]], device: torch.device,
                   repeats: int) -> dict[str, Any]:
    """Forward + backward + AdamW step on one batch of ``sentences`` (train mode)."""
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

    reset_memory(device)
    losses: list[float] = []  # the first is the warm-up's (it allocates the optimizer state)
    times = time_passes(lambda _: losses.append(step()), [batch], device, repeats)
    labeler.eval()
    seconds = min(times)
    real = sum(lengths)
    base = getattr(labeler.backbone, "get_base_model", lambda: labeler.backbone)()
    fwd = forward_flops(lengths, flops_per_token(base))
    return {"sentences": len(sentences), "rows": len(lengths), "tokens": real,
            "padded_tokens": int(batch.attention_mask.numel()),
            "repetitions": labeler.config.repetitions, "exit_layer": labeler.config.exit_layer,
            "trainable_parameters": sum(p.numel() for p in params),
            "seconds": round(seconds, 4), "seconds_all": [round(t, 4) for t in times],
            "tokens_per_second": round(real / seconds, 1),
            "forward_flops": int(fwd),
            "approx_tflops_per_second": sig(3 * fwd / seconds / 1e12),
            "peak_memory_gb": gb(peak_allocated(device)),
            "losses": [round(x, 4) for x in losses],
            "finite": all(math.isfinite(x) for x in losses)}


def lora_facts(labeler: Any) -> dict[str, Any]:
    """The LoRA settings of a labeler's adapted backbone."""
    peft_config = next(iter(labeler.backbone.peft_config.values()))
    return {"r": peft_config.r, "alpha": peft_config.lora_alpha,
            "dropout": peft_config.lora_dropout,
            "targets": sorted(peft_config.target_modules)}


def qlora_row(name: str, layers: int, sentences: list[list[list[int]]], device: torch.device,
              precision: str, repeats: int, method: str, tmp: str | None,
              tokenizer: Any) -> dict[str, Any]:
    """A LoRA training step on a random 4-bit NF4 base of shape ``name``."""
    from peft import prepare_model_for_kbit_training

    t0 = time.perf_counter()
    backbone, used, replaced = quantized_backbone(name, layers, device, method, tmp, tokenizer)
    backbone.model = prepare_model_for_kbit_training(backbone.model,
                                                     use_gradient_checkpointing=False)
    build = time.perf_counter() - t0
    weights = allocated(device)
    labeler = make_labeler(backbone, name, 1, layers, "lora", device, precision)
    row = train_step_row(labeler, sentences, device, repeats)
    row.update({"method": used, "linears_quantized": replaced, "build_seconds": round(build, 2),
                "weights_gb": gb(weights), "quantization": "nf4, double quantization, "
                "bf16 compute", "lora": lora_facts(labeler), "gradient_checkpointing": False})
    del labeler, backbone
    return row


def exit_speedups(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
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
