"""The bidirectional masks, compared with masks written out by hand."""

from __future__ import annotations

from types import SimpleNamespace

import torch
from torch import nn

from seqrep.model.masks import Unmasker, bidirectional_mask

# 6 positions, the last two padding, symmetric window 2 (|i - j| < 2): 1 = may attend
BY_HAND = [[1, 1, 0, 0, 0, 0],
           [1, 1, 1, 0, 0, 0],
           [0, 1, 1, 1, 0, 0],
           [0, 0, 1, 1, 0, 0],
           [0, 0, 0, 1, 0, 0],   # padding queries: their rows are never read
           [0, 0, 0, 0, 0, 0]]


def _visible(mask: torch.Tensor) -> list[list[int]]:
    return (mask[0, 0] == 0).int().tolist()


def test_sliding_window_mask_by_hand() -> None:
    padding = torch.tensor([[1, 1, 1, 1, 0, 0]])
    mask = bidirectional_mask(padding, torch.float32, window=2)
    assert mask.shape == (1, 1, 6, 6)
    # real queries (rows 0-3) exactly as written; padding queries as written on real keys
    assert _visible(mask)[:4] == BY_HAND[:4]
    assert [r[:4] for r in _visible(mask)[4:]] == [r[:4] for r in BY_HAND[4:]]
    full = bidirectional_mask(padding, torch.float32)
    assert _visible(full) == [[1, 1, 1, 1, 0, 0]] * 6


class _Layer(nn.Module):
    """Records the attention mask it is given."""

    def forward(self, hidden: torch.Tensor, attention_mask: torch.Tensor | None = None
                ) -> torch.Tensor:
        self.seen = attention_mask
        return hidden


def test_mask_stays_finite_in_bf16_with_no_empty_row() -> None:
    # under bf16 autocast attention runs in bf16: an fp32 finfo.min mask becomes -inf there,
    # and a padding query with no key in its window becomes a row of -inf (NaN on some SDPA
    # backends); the hook's mask must be finite in bf16 and leave every row one key
    layers = nn.ModuleList([_Layer()])
    unmasker = Unmasker(layers, [0], SimpleNamespace(sliding_window=2))
    padding = torch.tensor([[1, 1, 1, 1, 0, 0]])
    with torch.autocast("cpu", dtype=torch.bfloat16), unmasker.active(padding):
        layers[0](torch.zeros(1, 6, 4), attention_mask=None)
    seen = layers[0].seen.to(torch.bfloat16)
    assert torch.isfinite(seen).all()
    assert _visible(seen)[:4] == BY_HAND[:4]
    assert [r[:4] for r in _visible(seen)[4:]] == [r[:4] for r in BY_HAND[4:]]
    assert all(any(row) for row in _visible(seen))
    scores = torch.randn(1, 1, 6, 6, dtype=torch.bfloat16) + seen
    assert torch.isfinite(torch.softmax(scores.float(), -1)).all()
