"""Resumable training state, written atomically and in safetensors/JSON only (no pickles).

``DIR/checkpoint/`` holds the trainable weights, the AdamW moments, the RNG state and the
:class:`~seqrep.train.state.TrainState`; restoring it and replaying the same seeded data order
reproduces an uninterrupted run exactly (the learning rate follows from the step).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from seqrep.errors import SeqrepError
from seqrep.fileio import atomic_dir, write_json
from seqrep.train.state import TrainState


def trainable_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The parameters that train, by name (detached, contiguous, on CPU)."""
    return {n: p.detach().contiguous().cpu() for n, p in model.named_parameters()
            if p.requires_grad}


def save_checkpoint(path: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                    state: TrainState) -> None:
    """Write the full training state to ``path`` (replacing any previous one atomically)."""
    names = {id(p): n for n, p in model.named_parameters()}
    tensors, groups = {}, []
    for group in optimizer.param_groups:
        groups.append({"params": [names[id(p)] for p in group["params"]],
                       **{k: v for k, v in group.items() if k != "params"}})
        for p in group["params"]:
            for key, value in optimizer.state.get(p, {}).items():
                tensors[f"{names[id(p)]}::{key}"] = value.detach().contiguous().cpu()
    with atomic_dir(path) as tmp:
        save_file(trainable_state(model), str(tmp / "trainable.safetensors"))
        save_file(tensors, str(tmp / "optimizer.safetensors"))
        save_file({"torch": torch.get_rng_state()}, str(tmp / "rng.safetensors"))
        write_json(tmp / "state.json", {"state": state.to_dict(), "param_groups": groups})


def load_checkpoint(path: Path, model: torch.nn.Module,
                    optimizer: torch.optim.Optimizer) -> TrainState:
    """Restore what :func:`save_checkpoint` wrote; returns the saved state."""
    if not (path / "state.json").exists():
        raise SeqrepError(f"{path}: no checkpoint to resume from")
    saved = json.loads((path / "state.json").read_text(encoding="utf-8"))
    weights = load_file(str(path / "trainable.safetensors"))
    params = dict(model.named_parameters())
    missing = set(weights) ^ {n for n, p in params.items() if p.requires_grad}
    if missing:
        raise SeqrepError(f"{path}: checkpoint does not match the model "
                          f"({len(missing)} parameters differ, e.g. {sorted(missing)[0]})")
    with torch.no_grad():
        for n, t in weights.items():
            params[n].copy_(t)
    moments = load_file(str(path / "optimizer.safetensors"))
    for group, saved_group in zip(optimizer.param_groups, saved["param_groups"]):
        for key, value in saved_group.items():
            if key != "params":
                group[key] = value
        for p, name in zip(group["params"], saved_group["params"]):
            optimizer.state[p] = {k.split("::", 1)[1]: v for k, v in moments.items()
                                  if k.split("::", 1)[0] == name}
    torch.set_rng_state(load_file(str(path / "rng.safetensors"))["torch"])
    return TrainState.from_dict(saved["state"])
