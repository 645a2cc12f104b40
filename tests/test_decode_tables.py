"""The IOB2 transition tables: a hand-written table, and a build whose Python work grows
linearly with the tag set (issue 20: 5,001 labels took minutes in a Python double loop)."""

from __future__ import annotations

import sys

import torch

from seqrep.data.decode import allowed_transitions

# rows: previous tag, columns: next tag; written by hand from the IOB2 rule
# (I-X only after B-X or I-X; everything else anywhere)
LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "I-MISC"]
TRANS = [
    # O  B-PER I-PER B-LOC I-LOC I-MISC
    [1, 1, 0, 1, 0, 0],  # O
    [1, 1, 1, 1, 0, 0],  # B-PER
    [1, 1, 1, 1, 0, 0],  # I-PER
    [1, 1, 0, 1, 1, 0],  # B-LOC
    [1, 1, 0, 1, 1, 0],  # I-LOC
    [1, 1, 0, 1, 0, 1],  # I-MISC
]
START = [1, 1, 0, 1, 0, 0]


def test_tables_match_the_hand_written_ones() -> None:
    start, trans = allowed_transitions(LABELS)
    assert start.dtype == torch.bool and trans.dtype == torch.bool
    assert start.tolist() == [bool(x) for x in START]
    assert trans.tolist() == [[bool(x) for x in row] for row in TRANS]


def _line_events(labels: list[str]) -> int:
    count = 0

    def tracer(frame, event, arg):  # noqa: ANN001, ANN202
        nonlocal count
        if event == "line":
            count += 1
        return tracer

    sys.settrace(tracer)
    try:
        allowed_transitions(labels)
    finally:
        sys.settrace(None)
    return count


def test_building_the_tables_is_linear_python_work() -> None:
    """Timing-free: the Python lines run to build the tables grow with L, not L^2 (the work
    over L x L is done by array operations)."""
    def labels(n: int) -> list[str]:
        return ["O"] + [f"{p}-T{i}" for i in range(n // 2) for p in "BI"]

    small, large = _line_events(labels(100)), _line_events(labels(800))
    assert large < 12 * small, (small, large)  # 8x the tags: ~8x the lines, never ~64x
