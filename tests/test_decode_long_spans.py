"""Constrained decoding against an independent oracle: the IOB2 rule written out here (an
``I-X`` only after ``B-X`` or ``I-X``) and brute-force enumeration of every tag sequence.
Spans longer than two words must survive (``I-X`` after ``I-X`` is allowed)."""

from __future__ import annotations

import itertools

import pytest
import torch

from seqrep.data.decode import allowed_transitions, decode, viterbi

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def valid(tags: tuple[str, ...]) -> bool:
    """IOB2, by hand: every I-X follows B-X or I-X of the same type."""
    prev = "O"
    for tag in tags:
        if tag.startswith("I-") and prev[2:] != tag[2:]:
            return False
        prev = tag
    return True


def brute_force(log_probs: torch.Tensor) -> list[str]:
    """The valid sequence of the highest summed log-probability, over all 5^n sequences."""
    n = log_probs.shape[0]
    best, best_score = None, float("-inf")
    for ids in itertools.product(range(len(LABELS)), repeat=n):
        tags = tuple(LABELS[i] for i in ids)
        if valid(tags):
            s = sum(float(log_probs[t, i]) for t, i in enumerate(ids))
            if s > best_score:
                best, best_score = list(tags), s
    return best


def test_a_five_word_span_survives_constrained_decoding() -> None:
    # "Juan Carlos de la Vega spoke": one PER span over five words, then O; every word's
    # own best tag already forms that valid sequence, so decoding must return it unchanged
    logits = torch.full((6, 5), 0.0)
    for t, tag in enumerate(["B-PER", "I-PER", "I-PER", "I-PER", "I-PER", "O"]):
        logits[t, LABELS.index(tag)] = 4.0
    expected = ["B-PER", "I-PER", "I-PER", "I-PER", "I-PER", "O"]
    tags, _ = decode(logits, LABELS, "constrained")
    assert tags == expected
    start, trans = allowed_transitions(LABELS)
    assert viterbi(torch.log_softmax(logits, -1), start, trans) == [LABELS.index(t)
                                                                     for t in expected]
    assert trans[LABELS.index("I-PER"), LABELS.index("I-PER")]


def test_a_long_span_is_repaired_not_cut() -> None:
    # each word: I-PER 3, B-PER 2, the rest 0; greedy reads I-PER x5, which cannot start a
    # sentence. By hand: a B-PER in place of an I-PER costs 1, any other tag 3, so the best
    # valid path pays 1 once (B-PER I-PER I-PER I-PER I-PER); cutting the span into pieces
    # (B-PER I-PER B-PER ...) would pay 1 per extra B-PER
    logits = torch.zeros(5, 5)
    logits[:, LABELS.index("I-PER")] = 3.0
    logits[:, LABELS.index("B-PER")] = 2.0
    tags, _ = decode(logits, LABELS, "constrained")
    assert tags == ["B-PER", "I-PER", "I-PER", "I-PER", "I-PER"]


@pytest.mark.parametrize("seed", range(6))
def test_viterbi_equals_brute_force(seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(6, 5, generator=g) * 2
    # make seed-dependent long runs likely: push one type's I- tag on words 1..5
    logits[1:, 2 + 2 * (seed % 2)] += 2.5
    log_probs = torch.log_softmax(logits, -1)
    expected = brute_force(log_probs)
    assert decode(logits, LABELS, "constrained")[0] == expected
    start, trans = allowed_transitions(LABELS)
    assert [LABELS[i] for i in viterbi(log_probs, start, trans)] == expected
