"""The training state as a typed object, and the optimisation it drives.

The learning rate is a pure function of the optimizer step (:func:`lr_factor`), so resuming a
run restores a step count and nothing else: there is no scheduler object to rebuild.
"""

from __future__ import annotations

import dataclasses
import math
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
        """The state a checkpoint's ``state.json`` holds, every field checked: the file may
        have been edited, and a negative step or a string count would fail deep inside the
        loop (a ZeroDivisionError in the schedule) instead of naming the field.

        Raises:
            ValueError: ``'FIELD' is VALUE; expected ...`` for the first field that is wrong.
        """
        if not isinstance(data, dict):
            raise ValueError(f"'state' is {short_repr(data)}; expected an object")
        names = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in names}
        for name, value in values.items():
            expected = _expected(name, value)
            if expected:
                raise ValueError(f"'{name}' is {short_repr(value)}; expected {expected}")
        return cls(**values)

    def check_plan(self, epoch_sizes: list[int]) -> None:
        """Refuse a position outside the run's batch plan (``epoch_sizes``: batches of each
        epoch): resuming there would skip training silently."""
        if self.epoch > len(epoch_sizes):
            raise ValueError(f"'epoch' is {self.epoch}; the run has {len(epoch_sizes)} epochs")
        if self.epoch < len(epoch_sizes) and self.batch > epoch_sizes[self.epoch]:
            raise ValueError(f"'batch' is {self.batch}; epoch {self.epoch} of the run has "
                             f"{epoch_sizes[self.epoch]} batches")


COUNTS = ("epoch", "batch", "step", "bad_evals", "evals", "loss_n", "tokens", "sentences")


def is_number(value: Any) -> bool:
    """A finite int or float read from JSON (``true`` is no number)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value)


def _expected(name: str, value: Any) -> str | None:
    """What field ``name`` of a :class:`TrainState` must hold, if ``value`` is not that."""
    if name in COUNTS:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        return None if ok else "a whole number, 0 or more"
    if name == "best_f1":
        return None if is_number(value) and -1 <= value <= 1 else "a score from -1 to 1"
    if name in ("train_seconds", "loss_sum"):
        return None if is_number(value) and value >= 0 else "a finite number, 0 or more"
    if name == "done":
        return None if isinstance(value, bool) else "true or false"
    if name == "best":  # the log record of the best evaluation; its f1 is reported
        ok = value is None or (isinstance(value, dict) and is_number(value.get("f1"))
                               and 0 <= value["f1"] <= 1)
        return None if ok else "null or an evaluation record with an 'f1' from 0 to 1"
    return None


def short_repr(value: Any) -> str:
    """``repr(value)`` cut to 40 characters, for a one-line message about a file's value."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


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
