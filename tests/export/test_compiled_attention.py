"""The compiled pass's attention (``seqrep.export.compiled._causal_attention``) against
attention written out by hand: a softmax over the keys each query may see (itself and the
keys before it; in a sliding-window layer only the ``window`` latest of them), on random
states with several query heads sharing one key-value head, as Gemma 3's do."""

from __future__ import annotations

import math

import pytest
import torch

from seqrep.export.compiled import _causal_attention


class _Layer(torch.nn.Module):  # what transformers' SDPA attention reads of a layer
    is_causal = True
    num_key_value_groups = 2


def _by_hand(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
             window: int | None) -> torch.Tensor:
    """``(B, T, H, D)``: each query's softmax over the keys it may see, one at a time."""
    b, h, t, d = q.shape
    out = torch.zeros(b, t, h, d, dtype=torch.float64)
    for row in range(b):
        for head in range(h):
            kv = head // (h // k.shape[1])
            for i in range(t):
                seen = [j for j in range(i + 1) if window is None or i - j < window]
                scores = torch.tensor([float(q[row, head, i] @ k[row, kv, j]) / math.sqrt(d)
                                       for j in seen], dtype=torch.float64)
                weights = torch.softmax(scores, 0)
                out[row, i, head] = sum(w * v[row, kv, j].double()
                                        for w, j in zip(weights, seen))
    return out


@pytest.mark.parametrize("window", [None, 3, 7, 9])
def test_attention_sees_each_key_before_the_query_within_its_window(window) -> None:
    torch.manual_seed(0)
    q = torch.randn(2, 4, 7, 8)  # 4 query heads, 2 key-value heads, 7 positions
    k, v = torch.randn(2, 2, 7, 8), torch.randn(2, 2, 7, 8)
    out, _ = _causal_attention(_Layer(), q, k, v, None, sliding_window=window,
                               scaling=1 / math.sqrt(8))
    assert torch.allclose(out.double(), _by_hand(q, k, v, window), atol=1e-5)


def test_right_padding_leaves_the_real_tokens_as_they_were() -> None:
    """A row padded on the right with junk keys: its real positions come out as the row
    alone gives them (what lets the compiled pass drop the padding mask)."""
    torch.manual_seed(1)
    q, k, v = torch.randn(1, 4, 5, 8), torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8)
    padded = [torch.cat([t, 100 * torch.randn(1, t.shape[1], 3, 8)], 2) for t in (q, k, v)]
    alone, _ = _causal_attention(_Layer(), q, k, v, None, scaling=1 / math.sqrt(8))
    longer, _ = _causal_attention(_Layer(), *padded, None, scaling=1 / math.sqrt(8))
    assert torch.allclose(longer[:, :5], alone, atol=1e-6)
