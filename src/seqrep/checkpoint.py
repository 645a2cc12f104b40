"""Resumable training state, written atomically and in safetensors/JSON only (no pickles).

``DIR/checkpoint/`` holds the trainable weights, the AdamW moments, the scheduler position,
the RNG states and the loop position; restoring it and replaying the same seeded data order
reproduces an uninterrupted run exactly.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from seqrep.errors import SeqrepError
from seqrep.fileio import atomic_dir, write_json


def trainable_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The parameters that train, by name (detached, contiguous, on CPU)."""
    return {n: p.detach().contiguous().cpu() for n, p in model.named_parameters()
            if p.requires_grad}


def save_checkpoint(path: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                    scheduler: Any, progress: dict[str, Any]) -> None:
    """Write the full training state to ``path`` (replacing any previous one atomically)."""
    names = {id(p): n for n, p in model.named_parameters()}
    tensors, groups = {}, []
    for group in optimizer.param_groups:
        params = [names[id(p)] for p in group["params"]]
        groups.append({"params": params,
                       **{k: v for k, v in group.items() if k != "params"}})
        for p in group["params"]:
            for key, value in optimizer.state.get(p, {}).items():
                tensors[f"{names[id(p)]}::{key}"] = value.detach().contiguous().cpu()
    sched = {k: v for k, v in scheduler.state_dict().items() if k != "lr_lambdas"}
    with atomic_dir(path) as tmp:
        save_file(trainable_state(model), str(tmp / "trainable.safetensors"))
        save_file(tensors, str(tmp / "optimizer.safetensors"))
        save_file({"torch": torch.get_rng_state()}, str(tmp / "rng.safetensors"))
        write_json(tmp / "state.json", {"progress": progress, "param_groups": groups,
                                        "scheduler": sched,
                                        "python_random": _to_json(random.getstate())})


def load_checkpoint(path: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                    scheduler: Any) -> dict[str, Any]:
    """Restore what :func:`save_checkpoint` wrote; returns the saved progress."""
    if not (path / "state.json").exists():
        raise SeqrepError(f"{path}: no checkpoint to resume from")
    state = json.loads((path / "state.json").read_text(encoding="utf-8"))
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
    for group, saved in zip(optimizer.param_groups, state["param_groups"]):
        for key, value in saved.items():
            if key != "params":
                group[key] = value
        for p, name in zip(group["params"], saved["params"]):
            optimizer.state[p] = {k.split("::", 1)[1]: v for k, v in moments.items()
                                  if k.split("::", 1)[0] == name}
    sched = dict(state["scheduler"])
    sched["lr_lambdas"] = [None] * len(optimizer.param_groups)
    scheduler.load_state_dict(sched)
    torch.set_rng_state(load_file(str(path / "rng.safetensors"))["torch"])
    random.setstate(_from_json(state["python_random"]))
    return state["progress"]


def _to_json(obj: Any) -> Any:
    return [_to_json(x) for x in obj] if isinstance(obj, (tuple, list)) else obj


def _from_json(obj: Any) -> Any:
    return tuple(_from_json(x) for x in obj) if isinstance(obj, list) else obj
