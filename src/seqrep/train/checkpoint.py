"""Resumable training state, written atomically and in safetensors/JSON only (no pickles).

``DIR/checkpoint/`` holds the trainable weights, the AdamW moments, each process's RNG states
(the CPU generator's and, when it trains on a GPU, that GPU's) and the
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

# state.json holds the progress and the parameter groups' names: kilobytes, never gigabytes
MAX_STATE_BYTES = 1 << 24


def trainable_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The parameters that train, by name (detached, contiguous, on CPU)."""
    return {n: p.detach().contiguous().cpu() for n, p in model.named_parameters()
            if p.requires_grad}


def rng_states(device: torch.device) -> dict[str, torch.Tensor]:
    """This process's RNG states: the CPU generator's (``torch``) and, on a GPU, its
    generator's (``cuda``), which dropout on that GPU draws from."""
    out = {"torch": torch.get_rng_state()}
    if device.type == "cuda":
        out["cuda"] = torch.cuda.get_rng_state(device)
    return out


def _rng_name(key: str, rank: int) -> str:
    return f"{key}_{rank}" if rank else key


def save_checkpoint(path: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                    state: TrainState, rng: list[dict[str, torch.Tensor]] | None = None
                    ) -> None:
    """Write the full training state to ``path`` (replacing any previous one atomically).

    ``rng``: :func:`rng_states` of each process, by rank (default: this process's CPU one).
    """
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
        states = rng or [rng_states(torch.device("cpu"))]
        save_file({_rng_name(k, r): x for r, each in enumerate(states) for k, x in each.items()},
                  str(tmp / "rng.safetensors"))
        write_json(tmp / "state.json", {"state": state.to_dict(), "param_groups": groups})


def _corrupt(path: Path, what: str) -> SeqrepError:
    return SeqrepError(f"{path}: {what}; the checkpoint is damaged, so start the run over "
                       f"(--overwrite instead of --resume)")


def _tensors(path: Path) -> dict[str, torch.Tensor]:
    """A safetensors file of the checkpoint, or one line naming it (never unpickled)."""
    try:
        return load_file(str(path))
    except Exception as err:  # noqa: BLE001 - safetensors raises its own error types
        raise _corrupt(path, f"not a readable safetensors file "
                             f"({str(err).splitlines()[0] if str(err) else type(err).__name__})"
                       ) from None


def load_checkpoint(path: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                    rank: int = 0) -> TrainState:
    """Restore what :func:`save_checkpoint` wrote (process ``rank``'s RNG); returns the state.

    Raises:
        SeqrepError: a missing, truncated or tampered file, named, with what to do.
    """
    if not (path / "state.json").exists():
        raise SeqrepError(f"{path}: no checkpoint to resume from")
    try:
        if not (path / "state.json").is_file():
            raise ValueError("not a regular file")
        with open(path / "state.json", "rb") as f:
            raw = f.read(MAX_STATE_BYTES + 1)
        if len(raw) > MAX_STATE_BYTES:
            raise ValueError(f"larger than {MAX_STATE_BYTES} bytes")
        saved = json.loads(raw.decode("utf-8"))
        state = TrainState.from_dict(saved.get("state", saved.get("progress")))
        groups = saved["param_groups"]
        if len(groups) != len(optimizer.param_groups):
            raise ValueError(f"{len(groups)} parameter groups, the model has "
                             f"{len(optimizer.param_groups)}")
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as err:
        raise _corrupt(path / "state.json", f"not a valid training state ({err})") from None
    try:
        _restore(path, model, optimizer, groups, rank)
    except SeqrepError:
        raise
    except (RuntimeError, ValueError, KeyError, TypeError) as err:
        raise _corrupt(path, f"does not fit the model ({str(err).splitlines()[0]})") from None
    return state


def _restore(path: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
             groups: list[dict], rank: int) -> None:
    weights = _tensors(path / "trainable.safetensors")
    params = dict(model.named_parameters())
    missing = set(weights) ^ {n for n, p in params.items() if p.requires_grad}
    if missing:
        raise SeqrepError(f"{path}: checkpoint does not match the model "
                          f"({len(missing)} parameters differ, e.g. {sorted(missing)[0]})")
    with torch.no_grad():
        for n, t in weights.items():
            params[n].copy_(t)
    moments = _tensors(path / "optimizer.safetensors")
    rng = _tensors(path / "rng.safetensors")
    # torch's own loader puts each moment on its parameter's device and dtype and keeps
    # ``step`` where AdamW expects it (the CPU unless fused or capturable)
    indexed = optimizer.state_dict()["param_groups"]  # the same groups, params as indices
    state_dict: dict = {"state": {}, "param_groups": []}
    for ids, saved_group in zip(indexed, groups):
        if len(ids["params"]) != len(saved_group["params"]):
            raise ValueError(f"a parameter group of {len(saved_group['params'])} parameters, "
                             f"the model's has {len(ids['params'])}")
        state_dict["param_groups"].append({**{k: v for k, v in saved_group.items()
                                              if k != "params"}, "params": ids["params"]})
        for index, name in zip(ids["params"], saved_group["params"]):
            state = {k.split("::", 1)[1]: v for k, v in moments.items()
                     if k.split("::", 1)[0] == name}
            if state:
                state_dict["state"][index] = state
    optimizer.load_state_dict(state_dict)
    torch.set_rng_state(rng[_rng_name("torch", rank)])
    device = next((p.device for p in params.values() if p.device.type == "cuda"), None)
    if device is not None and _rng_name("cuda", rank) in rng:
        torch.cuda.set_rng_state(rng[_rng_name("cuda", rank)], device)
