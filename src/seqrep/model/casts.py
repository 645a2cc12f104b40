"""A labeler's inference weights: the Linear weights cast once for bf16 and fp16 inference,
and when they are cast again (see :class:`WeightCasts`)."""

from __future__ import annotations

import random
import threading
import weakref
from dataclasses import dataclass
from typing import Any

import torch

# Optimizer steps taken in this process, by any torch optimizer (fused, foreach or not):
# counted by torch's global step hook, registered with the first WeightCasts
_STEPS = [0]
_STEP_HOOK: list[Any] = []
_STEP_HOOK_LOCK = threading.Lock()
# sampled entries of each source tensor compared at every pass (all of a smaller tensor)
SAMPLED = 64


def _count_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    _STEPS[0] += 1


def _watch_optimizers() -> None:
    with _STEP_HOOK_LOCK:
        if not _STEP_HOOK:
            from torch.optim.optimizer import register_optimizer_step_post_hook

            _STEP_HOOK.append(register_optimizer_step_post_hook(_count_step))


def _castable(module: torch.nn.Module) -> tuple[list[tuple[str, torch.Tensor, list]], tuple]:
    """``([(name, fp32 parameter, its modules)], merge state)``: one name per parameter that
    only exact ``nn.Linear`` layers read, as weight or bias (a parameter tied to an
    Embedding, say, keeps its own); the state is peft's merged adapters per tuner layer."""
    users: dict[int, tuple[str, torch.Tensor, list, list[bool]]] = {}
    merges = []
    for prefix, m in module.named_modules(remove_duplicate=False):
        merged = getattr(m, "merged_adapters", None)
        if isinstance(merged, list):
            merges.append((prefix, tuple(merged)))
        plain = type(m) is torch.nn.Linear
        for attr, p in m.named_parameters(recurse=False):
            name = f"{prefix}.{attr}" if prefix else attr
            use = users.setdefault(id(p), (name, p, [], []))
            use[2].append(m)
            use[3].append(plain and attr in ("weight", "bias"))
    return ([(name, p, mods) for name, p, mods, ok in users.values()
             if all(ok) and p.dtype == torch.float32], tuple(merges))


def _where(tensor: torch.Tensor) -> tuple:
    return (tensor.data_ptr(), tensor.device, tuple(tensor.shape), tensor.stride())


@dataclass
class _Copy:
    source: torch.Tensor  # the fp32 parameter it was cast from
    where: tuple  # that parameter's storage then (.data = ..., .to(...) move it)
    at: torch.Tensor  # the sampled positions (as if flattened)
    sample: torch.Tensor  # the parameter's values there, as bits
    copy: torch.Tensor


class WeightCasts:
    """A labeler's inference weights: one copy of each ``nn.Linear`` weight and bias in the
    autocast dtype, for bf16 and fp16 inference (``SequenceLabeler.inference_weights``).

    Autocast casts each Linear's fp32 weight at every call: for Gemma-3-270m cut at 11 layers,
    61 M parameters read and written again for every batch, a quarter of the labeling time on
    a CPU with AMX (torch's profiler: ``aten::copy_`` 24%, ``aten::mm`` 36%). Cast once and
    kept here, the numbers are the same (autocast's own cast of the same weight). The copies
    are made at the first inference pass and checked at every pass, without torch's private
    version counter (which a fused optimizer step and an edit through ``.data`` leave as it
    was). A copy is made again when:

    - any torch optimizer steps (fused, foreach or not; torch's global step hook: the Hugging
      Face Trainer's default fused AdamW included);
    - ``load_state_dict`` loads into its layer (a hook on the layer, at any depth);
    - peft merges or unmerges an adapter (the tuner layers' ``merged_adapters``), or the
      modules change (a parameter replaced, ``merge_and_unload``, ``.data = ...``, a move);
    - the labeler goes to training mode, is placed again, or ``clear()`` is called
      (``SequenceLabeler.refresh_inference_weights()``);
    - a sampled check differs: 64 entries of each weight, chosen at random when it is cast,
      are compared at every pass, which sees an in-place edit of a whole weight (``p.data
      .mul_(3.0)``, a merge) but not surely one of a few entries. **After editing weights by
      hand in place, call** ``refresh_inference_weights()``.

    Only exact ``nn.Linear`` layers (quantized subclasses, bitsandbytes', keep their own
    kernels) and fp32 tensors; a parameter tied between Linears is cast once (functional_call
    gives it to every tied name); one also read by another module (an Embedding) is not. The
    copies cost half the fp32 weights' memory again; training mode frees them.

    Asked for fp32 copies, the "copies" are the parameters themselves (nothing is cast) and
    the same checks run: :attr:`generation` then says when the weights changed, for a pass
    that keeps what it read (``--runtime compile`` freezes them into its graph).
    """

    def __init__(self) -> None:
        self._copies: dict[str, _Copy] = {}
        self._state: tuple = ()
        self._stale = False
        self._hooked: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._random = random.Random(0)
        # counts every copy made and every drop: a pass built from the copies of one
        # generation reads stale weights once it differs
        self.generation = 0
        self.lock = threading.Lock()  # held by the caller around a pass that swaps them in
        _watch_optimizers()

    def __reduce__(self) -> tuple:  # a copied or pickled module (its load hooks) gets none
        return (WeightCasts, ())

    def clear(self) -> None:
        """Drop every copy: the next inference pass casts the weights as they are then."""
        with self.lock:
            self._drop()

    def _drop(self) -> None:
        self.generation += 1
        for handle in self._hooked.values():
            handle.remove()
        self._hooked.clear()
        self._copies.clear()
        self._state = ()

    def _loaded(self, module: torch.nn.Module, incompatible: Any) -> None:
        self._stale = True  # load_state_dict wrote into a layer whose weights are cast

    def _cast(self, key: str, tensor: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        source = tensor.detach()
        n = source.numel()
        at = torch.tensor(sorted(self._random.sample(range(n), SAMPLED)) if n > SAMPLED
                          else list(range(n)), dtype=torch.long, device=source.device)
        copy = source.to(dtype)
        self.generation += 1
        self._copies[key] = _Copy(tensor, _where(tensor), at,
                                  torch.take(source, at).view(torch.int32), copy)
        return copy

    def _unchanged(self, kept: list[tuple[str, _Copy]]) -> set[str]:
        """The names among ``kept`` whose sampled entries hold the same bits (one comparison
        per device when nothing changed)."""
        out: set[str] = set()
        groups: dict[torch.device, list[tuple[str, _Copy, torch.Tensor]]] = {}
        for name, c in kept:
            now = torch.take(c.source.detach(), c.at).view(torch.int32)
            groups.setdefault(now.device, []).append((name, c, now))
        for group in groups.values():
            if torch.equal(torch.cat([g[2] for g in group]), torch.cat([g[1].sample
                                                                        for g in group])):
                out.update(g[0] for g in group)
            else:
                out.update(name for name, c, now in group if torch.equal(now, c.sample))
        return out

    def tensors(self, module: torch.nn.Module, dtype: torch.dtype) -> dict[str, torch.Tensor]:
        """``{parameter name: its copy in dtype}`` for the fp32 weights and biases of the
        module's Linear layers, for ``torch.func.functional_call``; the caller holds
        :attr:`lock` (the copies are checked, and made where missing or stale, here)."""
        found, merges = _castable(module)
        state = (_STEPS[0], dtype, merges)
        if self._stale or state != self._state:
            self._drop()
            self._stale, self._state = False, state
        kept = [(name, c) for name, p, _ in found
                if (c := self._copies.get(name)) is not None and c.source is p
                and c.where == _where(p)]
        good = self._unchanged(kept)
        out: dict[str, torch.Tensor] = {}
        for name, p, modules in found:
            out[name] = self._copies[name].copy if name in good else \
                self._cast(name, p, dtype)
            for m in modules:
                if m not in self._hooked:
                    self._hooked[m] = m.register_load_state_dict_post_hook(self._loaded)
        for name in self._copies.keys() - out.keys():
            del self._copies[name]  # layers gone (merge_and_unload) or no longer fp32
        return out
