"""Timing primitives shared by ``seqrep bench`` (CPU, each setting in its own process) and
``scripts/bench_gpu.py`` (one process on a GPU): the FLOP count, a matrix-multiply rate on a
device in a dtype, timed passes with the device synchronised, memory and known peaks.

FLOPs of a forward pass are counted analytically: ``2 * tokens * (weights of the Linear
layers in the used blocks) + 4 * blocks * tokens^2 * attention width`` per row (attention
scores and their weighted sum, computed in full as fused kernels do), real tokens only.
"""

from __future__ import annotations

import gc
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

# Dense (no sparsity) bf16 tensor-core peaks in TFLOP/s, by device name; first match wins.
PEAK_BF16_TFLOPS: list[tuple[str, float]] = [
    (r"H200", 989.0),
    (r"H100.*(SXM|HBM3)", 989.0),
    (r"H100.*PCIe", 756.0),
    (r"A100", 312.0),
    (r"\bL4\b", 121.0),
]


def table_peak(device_name: str) -> float | None:
    """The dense bf16 peak of a known GPU, TFLOP/s; None for others (and CPUs)."""
    for pattern, tflops in PEAK_BF16_TFLOPS:
        if re.search(pattern, device_name):
            return tflops
    return None


def block_linears(model: nn.Module) -> list[nn.Linear]:
    """The Linear layers in the model's blocks (embeddings and head excluded); a 4-bit
    bitsandbytes layer is a Linear too."""
    from seqrep.model.backbone import layer_stack

    return [m for m in layer_stack(model).modules() if isinstance(m, nn.Linear)]


def flops_per_token(model: nn.Module) -> tuple[int, int, int]:
    """``(linear weights in the blocks, blocks, attention width)`` for the FLOP count; each
    Linear counts ``in * out`` weights, so a 4-bit layer (packed weights) counts as its
    full-precision self."""
    from seqrep.model.backbone import layer_stack

    linear = sum(m.in_features * m.out_features for m in block_linears(model))
    cfg = model.config
    heads = getattr(cfg, "num_attention_heads", 1)
    width = heads * (getattr(cfg, "head_dim", None) or cfg.hidden_size // heads)
    return linear, len(layer_stack(model)), width


def forward_flops(lengths: Sequence[int], terms: tuple[int, int, int]) -> int:
    """FLOPs of one forward pass over rows of ``lengths`` real tokens, with the
    :func:`flops_per_token` terms of the model."""
    linear, blocks, width = terms
    return sum(2 * t * linear + 4 * blocks * t * t * width for t in lengths)


def sync(device: torch.device) -> None:
    """Wait for the device's queued work (a no-op off CUDA)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def reset_memory(device: torch.device) -> None:
    """Free what can be freed and restart the device's peak-memory count."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def allocated(device: torch.device) -> float | None:
    """Bytes the device holds now (None off CUDA)."""
    return torch.cuda.memory_allocated(device) if device.type == "cuda" else None


def peak_allocated(device: torch.device) -> float | None:
    """Peak bytes since :func:`reset_memory` (None off CUDA)."""
    return torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None


def rss_peak_mb() -> float | None:
    """This process's peak resident memory, MB (None where ``resource`` is missing)."""
    try:
        import resource
    except ImportError:
        return None
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def sig(x: float, digits: int = 4) -> float:
    """``x`` to ``digits`` significant digits (rates span 1e-4 TFLOP/s on a CPU to 1e3)."""
    return float(f"{x:.{digits}g}")


def gb(n: float | None) -> float | None:
    """Bytes as GiB, 3 decimals (None stays None)."""
    return None if n is None else round(n / 2**30, 3)


def matmul_rate(m: int, k: int, n: int, device: torch.device | str = "cpu",
                dtype: torch.dtype = torch.float32, repeats: int = 20) -> float:
    """Measured FLOP/s of ``x @ w.T`` with ``x`` of shape ``(m, k)`` and ``w`` of shape
    ``(n, k)`` (what an ``nn.Linear(k, n)`` runs on ``m`` tokens) on ``device`` in ``dtype``:
    three warm-ups, then on CUDA the mean of ``repeats`` products between two events, on a
    CPU the fastest of ``repeats`` (least disturbed by other load)."""
    device = torch.device(device)
    x = torch.randn(m, k, device=device, dtype=dtype)
    w = torch.randn(n, k, device=device, dtype=dtype)
    for _ in range(3):
        nn.functional.linear(x, w)
    sync(device)
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeats):
            nn.functional.linear(x, w)
        end.record()
        end.synchronize()
        seconds = start.elapsed_time(end) / 1000 / repeats
    else:
        seconds = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            nn.functional.linear(x, w)
            seconds = min(seconds, time.perf_counter() - t0)
    return 2 * m * k * n / seconds


def time_passes(fn: Callable[[Any], Any], batches: Sequence[Any], device: torch.device,
                repeats: int) -> list[float]:
    """One warm-up pass of ``fn`` over ``batches``, then ``repeats`` timed passes (seconds
    each), the device synchronised around each."""
    for b in batches:
        fn(b)
    times = []
    for _ in range(max(1, repeats)):
        sync(device)
        t0 = time.perf_counter()
        for b in batches:
            fn(b)
        sync(device)
        times.append(time.perf_counter() - t0)
    return times
