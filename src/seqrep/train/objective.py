"""What a run trains toward: an :class:`Objective` brings its extra training data, its loss and
its entry in ``run.json``, so :func:`seqrep.train.train` runs gold-label training and
distillation (:class:`seqrep.train.distill.Distillation`) by one path, with no branch on
which it is.

The loss of a batch is a sum over its labeled words; the trainer divides it by the words of
the whole optimizer step (see :mod:`seqrep.train.loop`), whatever the objective.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import torch
from torch import nn

from seqrep.data.types import Sentence


class BatchLoss(Protocol):
    """The loss of one batch of encoder items (``labels``: their gold label ids, or None
    where a batch holds rows without gold)."""

    def loss(self, logits: torch.Tensor, labels: torch.Tensor | None,
             items: list[Any]) -> torch.Tensor:
        """The loss summed over the words of a batch of ``items`` (encoder items)."""
        ...


class Objective(Protocol):
    """A training objective, chosen once in the plan (:mod:`seqrep.train.plan`).

    Attributes:
        record: entries ``run.json`` gains (a distillation names its teacher); ``{}`` for none.
        keeps_folder: the caller has already checked and prepared the output folder and
            its files stay (a distillation's request and teacher labels): the run neither
            refuses nor clears it as it would a folder it found.
    """

    record: dict[str, Any]
    keeps_folder: bool

    def bind(self, train: list[Sentence], labels: Sequence[str]
             ) -> tuple[list[Sentence], BatchLoss]:
        """The training split the run fits (``train`` and any sentences the objective adds)
        and the loss over it; called once, after the exit-layer probe, which fits on the
        gold labels alone."""
        ...


class GoldLabels:
    """Cross-entropy on the gold labels of the training split: ``seqrep train``'s objective."""

    keeps_folder = False

    def __init__(self) -> None:
        self.record: dict[str, Any] = {}

    def bind(self, train: list[Sentence], labels: Sequence[str]
             ) -> tuple[list[Sentence], BatchLoss]:
        return train, self

    def loss(self, logits: torch.Tensor, labels: torch.Tensor | None,
             items: list[Any]) -> torch.Tensor:
        return nn.functional.cross_entropy(logits, labels, reduction="sum")


def soft_cross_entropy(logits: torch.Tensor, target_logp: torch.Tensor,
                       temperature: float = 1.0) -> torch.Tensor:
    """Per word, ``-T^2 sum_c p_c log q_c`` with ``p = softmax(target_logp / T)`` (the
    teacher's distribution at temperature T) and ``q = softmax(logits / T)`` (the student's);
    ``T^2`` keeps the gradient's size independent of T (Hinton et al., 2015)."""
    p = torch.softmax(target_logp.float() / temperature, dim=-1)
    logq = torch.log_softmax(logits.float() / temperature, dim=-1)
    return -(p * logq).sum(-1) * temperature**2
