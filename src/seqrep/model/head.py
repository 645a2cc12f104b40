"""The classification head: dropout then a linear layer over word states, kept in fp32."""

from __future__ import annotations

import torch
from torch import nn


class TokenHead(nn.Module):
    """``(W, H)`` word states -> ``(W, num_labels)`` logits.

    Args:
        hidden_size: H.
        num_labels: number of tags.
        dropout: dropout probability before the linear layer.
    """

    def __init__(self, hidden_size: int, num_labels: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.linear = nn.Linear(hidden_size, num_labels)

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        return self.linear(self.dropout(states.float()))
