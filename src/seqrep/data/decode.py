"""From per-word logits to tags: the decodings' algorithms (greedy argmax, Viterbi restricted
to valid IOB2 sequences), which :data:`seqrep.data.tasks.DECODINGS` names, and :func:`decode`, which
runs the one a decoding's name picks."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import torch

from seqrep.data.tasks import DECODINGS, Decoding


def allowed_transitions(labels: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """IOB2 rules as boolean tables.

    Returns:
        ``(start, trans)``: ``start[j]`` whether a sentence may begin with tag j;
        ``trans[i, j]`` whether tag j may follow tag i (``I-X`` only after ``B-X``/``I-X``).
    """
    prefix = np.array([tag[:2] for tag in labels], dtype=object)
    kinds: dict[str, int] = {}
    kind = np.array([kinds.setdefault(tag[2:], len(kinds)) for tag in labels], dtype=np.int64)
    inside = prefix == "I-"
    in_span = inside | (prefix == "B-")
    # j may follow i unless j is I-X and i is neither B-X nor I-X (array ops: O(L) Python)
    trans = ~inside[None, :] | (in_span[:, None] & (kind[:, None] == kind[None, :]))
    return torch.from_numpy(~inside).reshape(len(labels)), \
        torch.from_numpy(np.asarray(trans, dtype=bool)).reshape(len(labels), len(labels))


@functools.lru_cache(maxsize=64)
def _penalties(labels: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """``allowed_transitions`` as additive 0 / -inf tables, computed once per tag set."""
    start, trans = allowed_transitions(labels)
    return (np.where(start.numpy(), 0.0, -np.inf), np.where(trans.numpy(), 0.0, -np.inf))


def viterbi(log_probs: torch.Tensor, start: torch.Tensor, trans: torch.Tensor) -> list[int]:
    """Best tag path under hard transition constraints.

    Args:
        log_probs: ``(n, L)`` per-word log-probabilities.
        start: ``(L,)`` allowed first tags.
        trans: ``(L, L)`` allowed transitions.

    Returns:
        ``n`` tag ids.
    """
    n = log_probs.shape[0]
    if n == 0:
        return []
    neg = torch.tensor(float("-inf"))
    penalty = torch.where(trans, torch.tensor(0.0), neg)  # (L, L)
    score = torch.where(start, log_probs[0], neg)
    back = []
    for t in range(1, n):
        total = score[:, None] + penalty  # (L_prev, L)
        score, idx = total.max(dim=0)
        score = score + log_probs[t]
        back.append(idx)
    path = [int(score.argmax())]
    for idx in reversed(back):
        path.append(int(idx[path[-1]]))
    return path[::-1]


def _viterbi(log_probs: np.ndarray, start: np.ndarray, trans: np.ndarray) -> list[int]:
    """:func:`viterbi` on additive penalty tables, in numpy (about 10x fewer small-op costs
    than torch for a sentence)."""
    n = log_probs.shape[0]
    if n == 0:
        return []
    score = start + log_probs[0]
    back = np.empty((max(n - 1, 0), log_probs.shape[1]), dtype=np.int64)
    for t in range(1, n):
        total = score[:, None] + trans  # (L_prev, L)
        back[t - 1] = total.argmax(axis=0)
        score = total.max(axis=0) + log_probs[t]
    path = [int(score.argmax())]
    for idx in back[::-1]:
        path.append(int(idx[path[-1]]))
    return path[::-1]


def greedy(log_probs: torch.Tensor, labels: Sequence[str]) -> list[int]:
    """The ``greedy`` decoding: each word's most probable tag."""
    return log_probs.argmax(-1).tolist()


def constrained(log_probs: torch.Tensor, labels: Sequence[str]) -> list[int]:
    """The ``constrained`` decoding: the most probable tag path with only valid IOB2
    transitions (Viterbi)."""
    return _viterbi(log_probs.double().numpy(), *_penalties(tuple(labels)))


def decode(logits: torch.Tensor, labels: Sequence[str], method: str | Decoding = "constrained"
           ) -> tuple[list[str], list[float]]:
    """Tags and their probabilities for one sentence.

    Args:
        logits: ``(n, L)`` head outputs.
        labels: tag names, index-aligned with the logits.
        method: a decoding or its name (:data:`seqrep.data.tasks.DECODINGS`; a ConfigError
            names the choices).

    Returns:
        ``(tags, probs)``: one tag and the softmax probability of that tag per word.
    """
    decoding = DECODINGS.of(method)
    log_probs = torch.log_softmax(logits.detach().float().cpu(), dim=-1)  # any device in
    ids = decoding.decode(log_probs, labels)
    probs = log_probs.exp()[torch.arange(len(ids)), torch.tensor(ids, dtype=torch.long)]
    return [labels[i] for i in ids], probs.tolist()
