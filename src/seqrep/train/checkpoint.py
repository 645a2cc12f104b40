"""Resumable training state, written atomically and in safetensors/JSON only (no pickles).

``DIR/checkpoint/`` holds the trainable weights, the AdamW moments, each process's RNG states
(the CPU generator's and, when it trains on a GPU, that GPU's) and the
:class:`~seqrep.train.state.TrainState`; restoring it and replaying the same seeded data order
reproduces an uninterrupted run exactly (the learning rate follows from the step).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from seqrep.errors import SeqrepError, first_line
from seqrep.files.atomic import atomic_dir, read_json, write_json
from seqrep.train.state import TrainState, is_number, short_repr

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


DAMAGED = "the checkpoint is damaged, so start the run over (--overwrite instead of --resume)"


def _corrupt(path: Path, what: str) -> SeqrepError:
    return SeqrepError(f"{path}: {what}; {DAMAGED}")


def _tensors(path: Path) -> dict[str, torch.Tensor]:
    """A safetensors file of the checkpoint, or one line naming it (never unpickled)."""
    try:
        return load_file(str(path))
    except Exception as err:  # noqa: BLE001 - safetensors raises its own error types
        raise _corrupt(path, f"not a readable safetensors file ({first_line(err)})") from None


def load_checkpoint(path: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                    rank: int = 0, epoch_sizes: list[int] | None = None) -> TrainState:
    """Restore what :func:`save_checkpoint` wrote (process ``rank``'s RNG); returns the state.
    Every value is checked before anything is restored (``epoch_sizes``: the run's batches
    per epoch, which the saved position must fall in), since the folder may be shared or
    edited and a bad value would otherwise fail steps later, deep inside the optimizer.

    Raises:
        SeqrepError: a missing, truncated or tampered file, named, with what to do.
    """
    file = path / "state.json"
    if not (file.exists() or file.is_symlink()):
        raise SeqrepError(f"{path}: no checkpoint to resume from")
    try:
        saved = read_json(file, "a valid training state", SeqrepError, MAX_STATE_BYTES)
    except SeqrepError as err:
        raise SeqrepError(f"{err}; {DAMAGED}") from None
    try:
        if not isinstance(saved, dict):
            raise ValueError(f"{short_repr(saved)}; expected an object")
        state = TrainState.from_dict(saved.get("state", saved.get("progress")))
        if epoch_sizes is not None:
            state.check_plan(epoch_sizes)
        groups = checked_groups(saved.get("param_groups"), model, optimizer)
    except ValueError as err:
        raise _corrupt(file, f"not a valid training state ({err})") from None
    try:
        _restore(path, model, optimizer, groups, rank)
    except SeqrepError:
        raise
    except (RuntimeError, ValueError, KeyError, TypeError) as err:
        raise _corrupt(path, f"does not fit the model ({first_line(err)})") from None
    return state


def checked_groups(saved: object, model: torch.nn.Module, optimizer: torch.optim.Optimizer
                   ) -> list[dict[str, Any]]:
    """The optimizer's parameter groups with the saved rates, decay and betas: each saved
    group must list the names of the model's parameters of that group, in order, and each
    number must be a finite one of its range. Implementation switches (``foreach``,
    ``fused``, ``amsgrad`` ...) stay the optimizer's own: a file has no say in them.

    Raises:
        ValueError: the first entry that is wrong, named.
    """
    if not isinstance(saved, list):
        raise ValueError(f"'param_groups' is {short_repr(saved)}; expected a list")
    if len(saved) != len(optimizer.param_groups):
        raise ValueError(f"{len(saved)} parameter groups, the model has "
                         f"{len(optimizer.param_groups)}")
    names = {id(p): n for n, p in model.named_parameters()}
    out = []
    for i, (current, group) in enumerate(zip(optimizer.param_groups, saved)):
        where = f"param_groups[{i}]"
        if not isinstance(group, dict):
            raise ValueError(f"{where} is {short_repr(group)}; expected an object")
        expect = [names[id(p)] for p in current["params"]]
        if group.get("params") != expect:
            raise ValueError(f"{where} 'params' is {short_repr(group.get('params'))}; "
                             f"expected the {len(expect)} names of the model's parameters "
                             f"of that group, from {expect[0]!r}")
        merged = dict(current)
        for key, now in current.items():
            if key == "params" or key not in group or now is None or isinstance(now, bool):
                continue
            value = group[key]
            if isinstance(now, tuple):  # betas
                ok = isinstance(value, list) and len(value) == len(now) and all(
                    is_number(b) and 0 <= b < 1 for b in value)
                expected = f"a list of {len(now)} numbers in [0, 1)"
            else:
                ok = is_number(value) and value >= 0
                expected = "a finite number, 0 or more"
            if not ok:
                raise ValueError(f"{where} '{key}' is {short_repr(value)}; expected {expected}")
            merged[key] = tuple(value) if isinstance(now, tuple) else value
        out.append(merged)
    return out


def checked_moments(path: Path, moments: dict[str, torch.Tensor],
                    params: dict[str, torch.nn.Parameter], groups: list[dict[str, Any]]
                    ) -> dict[str, dict[str, torch.Tensor]]:
    """The saved AdamW state by parameter name: for each parameter, none (it never had a
    gradient) or every entry its group keeps, moments of its shape and a scalar step."""
    by_name: dict[str, dict[str, torch.Tensor]] = {}
    for key, value in moments.items():
        name, sep, entry = key.partition("::")
        if not sep or name not in params:
            raise _corrupt(path, f"{key!r} belongs to no parameter the model trains")
        by_name.setdefault(name, {})[entry] = value
    amsgrad = {id(p): bool(g.get("amsgrad")) for g in groups for p in g["params"]}
    for name, state in by_name.items():
        p = params[name]
        keys = {"step", "exp_avg", "exp_avg_sq"} | ({"max_exp_avg_sq"} if amsgrad[id(p)]
                                                    else set())
        if set(state) != keys:
            raise _corrupt(path, f"{name!r} has {', '.join(sorted(state))}; expected "
                                 f"{', '.join(sorted(keys))}")
        for entry, value in state.items():
            shape = () if entry == "step" else tuple(p.shape)
            if tuple(value.shape) != shape or not value.is_floating_point():
                raise _corrupt(path, f"'{name}::{entry}' is {value.dtype} of shape "
                                     f"{list(value.shape)}; expected floating point of shape "
                                     f"{list(shape)}")
        step = float(state["step"])
        if not (math.isfinite(step) and step >= 0):
            raise _corrupt(path, f"'{name}::step' is {step}; expected a count, 0 or more")
    return by_name


def _restore(path: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
             groups: list[dict[str, Any]], rank: int) -> None:
    weights = _tensors(path / "trainable.safetensors")
    params = {n: p for n, p in model.named_parameters() if p.requires_grad}
    missing = set(weights) ^ set(params)
    if missing:
        raise SeqrepError(f"{path}: checkpoint does not match the model "
                          f"({len(missing)} parameters differ, e.g. {sorted(missing)[0]})")
    for n, t in weights.items():  # copy_ would broadcast a smaller tensor without a word
        if t.shape != params[n].shape or not t.is_floating_point():
            raise _corrupt(path / "trainable.safetensors",
                           f"{n!r} is {t.dtype} of shape {list(t.shape)}; the model's is "
                           f"{params[n].dtype} of shape {list(params[n].shape)}")
    moments = checked_moments(path / "optimizer.safetensors",
                              _tensors(path / "optimizer.safetensors"), params, groups)
    rng = _tensors(path / "rng.safetensors")
    with torch.no_grad():
        for n, t in weights.items():
            params[n].copy_(t)
    # torch's own loader puts each moment on its parameter's device and dtype and keeps
    # ``step`` where AdamW expects it (the CPU unless fused or capturable)
    indexed = optimizer.state_dict()["param_groups"]  # the same groups, params as indices
    names = {id(p): n for n, p in model.named_parameters()}
    state_dict: dict = {"state": {}, "param_groups": []}
    for ids, current, group in zip(indexed, optimizer.param_groups, groups):
        state_dict["param_groups"].append({**{k: v for k, v in group.items()
                                              if k != "params"}, "params": ids["params"]})
        for index, p in zip(ids["params"], current["params"]):
            if names[id(p)] in moments:
                state_dict["state"][index] = moments[names[id(p)]]
    optimizer.load_state_dict(state_dict)
    torch.set_rng_state(rng[_rng_name("torch", rank)])
    device = next((p.device for p in params.values() if p.device.type == "cuda"), None)
    if device is not None and _rng_name("cuda", rank) in rng:
        torch.cuda.set_rng_state(rng[_rng_name("cuda", rank)], device)
