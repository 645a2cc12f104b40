"""The training state as a typed object, and the optimisation it drives.

The learning rate is a pure function of the optimizer step (:func:`lr_factor`), so resuming a
run restores a step count and nothing else: there is no scheduler object to rebuild.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

if TYPE_CHECKING:
    from seqrep.config import TrainConfig


@dataclass
class TrainState:
    """Where a run is, and what it has seen so far (saved in every checkpoint).

    Attributes:
        epoch: epochs completed.
        batch: batches of the current epoch done.
        step: optimizer steps done.
        best_f1: best validation F1 so far (-1 before the first evaluation).
        best: the log record of the best evaluation.
        bad_evals: evaluations since the best one.
        evals: evaluations logged (lines of ``log.jsonl``).
        train_seconds: time in training steps (evaluation excluded).
        loss_sum, loss_n: training loss since the last evaluation.
        tokens: real (non-padding) tokens trained on.
        sentences: sentences trained on (each pass over a sentence counts once).
        done: early stopping ended the run.
    """

    epoch: int = 0
    batch: int = 0
    step: int = 0
    best_f1: float = -1.0
    best: dict[str, Any] | None = None
    bad_evals: int = 0
    evals: int = 0
    train_seconds: float = 0.0
    loss_sum: float = 0.0
    loss_n: int = 0
    tokens: int = 0
    sentences: int = 0
    done: bool = False

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainState:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def lr_factor(step: int, total_steps: int, warmup: float) -> float:
    """Learning-rate multiplier at optimizer step ``step`` (0-based): linear warm-up over the
    first ``warmup`` share of the steps, then linear decay to 0 at ``total_steps``."""
    warm = int(warmup * total_steps)
    if step < warm:
        return (step + 1) / warm
    return max(0.0, (total_steps - step) / max(1, total_steps - warm))


def build_optimizer(model: nn.Module, cfg: TrainConfig) -> torch.optim.AdamW:
    """AdamW with the head at ``head_lr`` and the rest at ``lr``; no decay on biases and norms.

    Each group keeps its peak rate as ``base_lr``; :func:`set_lr` scales it for a step.
    """
    groups: dict[tuple[float, float], list[nn.Parameter]] = {}
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        lr = cfg.head_lr if name.startswith("head.") else cfg.lr
        wd = cfg.weight_decay if p.ndim >= 2 else 0.0
        groups.setdefault((lr, wd), []).append(p)
    return torch.optim.AdamW([{"params": ps, "lr": lr, "base_lr": lr, "weight_decay": wd}
                              for (lr, wd), ps in groups.items()])


def set_lr(optimizer: torch.optim.Optimizer, factor: float) -> None:
    """Set every group's rate to ``base_lr * factor``."""
    for group in optimizer.param_groups:
        group["lr"] = group["base_lr"] * factor
