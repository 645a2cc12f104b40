"""Attention strategies: which layers see the whole sequence (causal-mask removal).

``none`` leaves the model exactly as it is. ``full``, ``middle`` or a list of layers makes
those layers bidirectional through one forward pre-hook per layer that swaps the
``attention_mask`` keyword the model already passes to the layer for a padding-only mask.
The causal layers keep the model's own mask (and its fused SDPA path); the swapped mask is an
additive float mask (0 / dtype min), which eager and SDPA attention both read correctly, and it is
never None, so SDPA cannot fall back to ``is_causal=True`` at batch size 1. Sliding-window
layers keep their window, symmetric: ``|i - j| < window`` (Gemma's bidirectional convention).

The mask is built in the dtype attention computes in (the autocast dtype under bf16/fp16
autocast), so its minimum stays finite there (an fp32 minimum becomes -inf in bf16 and fp16),
and a padding query with no key in its window sees itself, so no row is empty (an empty row of
-inf is NaN on some SDPA backends, and a NaN in a padding row's output reaches real tokens in
the next layer through a zero attention weight).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence

import torch
from torch import nn

from seqrep.errors import ConfigError, ModelError


def middle_layers(n: int) -> list[int]:
    """The paper's central bidirectional layers (0-indexed) for an ``n``-layer model.

    ``c = 2 * floor(n / 6)``; layers ``n//2 - 1 - c//2 .. n//2 + c//2`` inclusive.
    """
    c = 2 * (n // 6)
    lo, hi = n // 2 - 1 - c // 2, n // 2 + c // 2
    return [i for i in range(max(lo, 0), min(hi, n - 1) + 1)]


def unmasked_layers(unmask: str | Sequence[int], n: int, depth: int | None = None
                    ) -> list[int]:
    """Resolve an ``unmask`` setting (see :func:`seqrep.model.labeler_config.parse_unmask`) to
    sorted layer indices of an ``n``-layer stack.

    ``middle`` is the middle of the model's own ``depth`` (its layers before any cut; default
    ``n``), kept where below ``n``: a model cut at an exit layer unmasks the layers the uncut
    model (and a probe of it) unmasks there, not the middle of what is left.
    """
    from seqrep.model.labeler_config import parse_unmask

    value = parse_unmask(unmask) if isinstance(unmask, str) else tuple(sorted(set(unmask)))
    if value == "none":
        return []
    if value == "full":
        return list(range(n))
    if value == "middle":
        return [i for i in middle_layers(depth or n) if i < n]
    bad = [i for i in value if not 0 <= i < n]
    if bad:
        raise ConfigError(f"unmask layers {list(bad)} do not exist: the model has layers "
                          f"0..{n - 1}")
    return list(value)


def layer_windows(config: object, n: int) -> list[int | None]:
    """Sliding-window size of each layer (None for full attention)."""
    window = getattr(config, "sliding_window", None)
    types = getattr(config, "layer_types", None)
    if types:
        return [window if t == "sliding_attention" else None for t in list(types)[:n]]
    if window and getattr(config, "use_sliding_window", True):
        return [window] * n
    return [None] * n


def bidirectional_mask(attention_mask: torch.Tensor, dtype: torch.dtype,
                       window: int | None = None) -> torch.Tensor:
    """Additive ``(B, 1, T, T)`` mask: every query sees every real key (within ``window``).

    Args:
        attention_mask: ``(B, T)`` 1 for real tokens, 0 for padding.
        dtype: dtype of the attention scores (see :func:`compute_dtype`).
        window: symmetric sliding window, or None.
    """
    keep = attention_mask[:, None, None, :].bool()  # (B, 1, 1, T)
    if window is not None:
        idx = torch.arange(attention_mask.shape[1], device=attention_mask.device)
        keep = keep & ((idx[:, None] - idx[None, :]).abs() < window)[None, None]
        # a padding query far from every real token would have no key: it sees itself
        eye = (idx[:, None] == idx[None, :])[None, None]
        keep = keep | (eye & ~keep.any(-1, keepdim=True))
    mask = torch.zeros(keep.shape, dtype=dtype, device=attention_mask.device)
    return mask.masked_fill(~keep, torch.finfo(dtype).min).expand(
        -1, 1, attention_mask.shape[1], -1)


def compute_dtype(hidden: torch.Tensor) -> torch.dtype:
    """The dtype attention scores are computed in for ``hidden``: the autocast dtype when
    autocast is on for its device, else its own."""
    kind = hidden.device.type
    if torch.is_autocast_enabled(kind):
        return torch.get_autocast_dtype(kind)
    return hidden.dtype


class Unmasker:
    """Makes chosen layers bidirectional for the forward passes run inside :meth:`active`.

    The batch's padding and the masks built from it live in thread-local state, so several
    threads may run forward passes through the same model at once.

    Args:
        layers: the model's layer stack.
        unmasked: indices of the layers to make bidirectional.
        config: the model config (for sliding windows and the attention backend).
    """

    def __init__(self, layers: nn.ModuleList, unmasked: Sequence[int], config: object) -> None:
        self.unmasked = list(unmasked)
        impl = getattr(config, "_attn_implementation", None) or ""
        if self.unmasked and "flash" in impl:
            raise ConfigError(f"attn_implementation={impl!r} accepts only 2-D padding masks, "
                              f"so layers cannot be unmasked; use sdpa or eager")
        self._windows = layer_windows(config, len(layers))
        self._local = threading.local()  # .padding, .masks and .calls of this thread's pass
        self._handles = [layers[i].register_forward_pre_hook(self._hook(i), with_kwargs=True)
                         for i in self.unmasked]

    def _hook(self, index: int):  # noqa: ANN202 - a torch hook
        def hook(module: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
            state = self._local
            if getattr(state, "padding", None) is None:
                raise ModelError("an unmasked layer ran outside Unmasker.active(); the "
                                 "bidirectional mask needs the batch's padding mask")
            if "attention_mask" not in kwargs:
                raise ModelError(f"layer {index} of {type(module).__name__} receives no "
                                 f"attention_mask keyword, so it cannot be unmasked")
            hidden = args[0] if args else kwargs["hidden_states"]
            window = self._windows[index]
            if window not in state.masks:
                state.masks[window] = bidirectional_mask(state.padding, compute_dtype(hidden),
                                                         window)
            kwargs["attention_mask"] = state.masks[window]
            state.calls += 1
            return args, kwargs

        return hook

    @contextlib.contextmanager
    def active(self, attention_mask: torch.Tensor) -> Iterator[None]:
        """Run forward passes with ``attention_mask`` (``(B, T)``) as the padding of this batch.

        Raises:
            ModelError: if an unmasked layer was not reached (the hook never fired), which
                would mean the model silently stayed causal.
        """
        state = self._local
        state.padding, state.masks, state.calls = attention_mask, {}, 0
        try:
            yield
        finally:
            calls = state.calls
            state.padding, state.masks = None, {}
        if self.unmasked and calls < len(self.unmasked):
            raise ModelError(f"only {calls} of {len(self.unmasked)} unmasked "
                             f"layers ran; the model did not call its layers as expected")

    def remove(self) -> None:
        """Detach the hooks."""
        for h in self._handles:
            h.remove()
        self._handles = []
