"""seqrep.lab.speed: the primitives both benchmarks share (seqrep bench on the CPU and
scripts/bench_gpu.py on a GPU), checked against counts made by hand."""

from __future__ import annotations

import torch
from transformers import AutoModel, LlamaConfig

from seqrep.lab.speed import flops_per_token, forward_flops, matmul_rate, sig, table_peak


def test_flop_terms_of_a_tiny_llama_by_hand() -> None:
    cfg = LlamaConfig(vocab_size=50, hidden_size=32, intermediate_size=48, num_hidden_layers=3,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=8)
    model = AutoModel.from_config(cfg)
    # per block: q 32x32, k and v 32x16 (2 KV heads of 8), o 32x32, gate/up 32x48, down 48x32
    per_block = 32 * 32 + 2 * 32 * 16 + 32 * 32 + 3 * 32 * 48
    assert flops_per_token(model) == (3 * per_block, 3, 4 * 8)
    # two rows of 5 and 7 tokens: 2 * t * linear + 4 * blocks * t^2 * width each
    expected = sum(2 * t * 3 * per_block + 4 * 3 * t * t * 32 for t in (5, 7))
    assert forward_flops([5, 7], flops_per_token(model)) == expected


def test_matmul_rate_takes_the_device_and_dtype() -> None:
    for dtype in (torch.float32, torch.bfloat16):
        assert matmul_rate(16, 32, 24, torch.device("cpu"), dtype, repeats=2) > 0
    assert matmul_rate(16, 32, 24, "cpu", repeats=1) > 0


def test_peaks_and_rounding() -> None:
    assert table_peak("NVIDIA H100 PCIe") == 756.0 and table_peak("cpu") is None
    assert sig(0.000123456) == 0.0001235 and sig(987.654, 3) == 988.0


def test_a_packed_4bit_weight_counts_as_its_full_precision_self() -> None:
    """A 4-bit layer stores its weights packed (bitsandbytes: ``in * out / 2`` bytes in one
    column); the FLOP count takes ``in * out`` from the layer's shape, not the stored size."""
    cfg = LlamaConfig(vocab_size=50, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=8)
    model = AutoModel.from_config(cfg)
    for layer in model.layers:
        layer.mlp.down_proj.weight = torch.nn.Parameter(
            torch.zeros(48 * 32 // 2, 1, dtype=torch.uint8), requires_grad=False)
    per_block = 32 * 32 + 2 * 32 * 16 + 32 * 32 + 3 * 32 * 48  # by hand, as full precision
    assert flops_per_token(model)[0] == 2 * per_block
