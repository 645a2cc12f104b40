from __future__ import annotations

import pytest

from seqrep.data.tags import (
    TagError,
    convert_tags,
    detect_scheme,
    spans_to_tags,
    tags_to_spans,
)

SPANS = [(0, 2, "PER"), (2, 3, "PER"), (4, 5, "LOC"), (5, 7, "ORG")]


@pytest.mark.parametrize("scheme", ["IOB1", "IOB2", "BIOES", "TOKEN"])
def test_spans_tags_spans_round_trip(scheme: str) -> None:
    spans = SPANS if scheme != "TOKEN" else [(i, i + 1, "NN") for i in range(7)]
    assert tags_to_spans(spans_to_tags(spans, 8, scheme), scheme) == (spans, 0)


def test_io_merges_adjacent_spans_of_one_label() -> None:
    assert tags_to_spans(spans_to_tags(SPANS, 8, "IO"), "IO")[0] == [
        (0, 3, "PER"), (4, 5, "LOC"), (5, 7, "ORG")]


def test_repair_counts_and_strict() -> None:
    assert convert_tags(["I-PER", "O", "B-LOC", "I-ORG"], "IOB2") == (
        ["B-PER", "O", "B-LOC", "B-ORG"], 2)
    with pytest.raises(TagError) as err:
        tags_to_spans(["O", "I-PER"], "IOB2", strict=True)
    assert err.value.index == 1


@pytest.mark.parametrize("sequences, scheme", [
    ([["I-PER", "I-PER", "O", "I-LOC", "B-LOC"]], "IOB1"),
    ([["B-PER", "I-PER", "O", "B-LOC"]], "IOB2"),
    ([["S-PER", "O", "B-LOC", "E-LOC"]], "BIOES"),
    ([["I-PER", "O", "I-LOC"]], "IO"),
    ([["NN", "VBZ", "O"]], "TOKEN"),
    ([["O", "O"]], "IOB2"),
    # IOB1 with a few annotation slips (B- after O), as in CoNLL-2003 eng.train
    ([["I-PER", "O", "I-LOC", "I-LOC", "B-LOC"], ["I-ORG", "O", "I-MISC"], ["O", "B-MISC"]],
     "IOB1"),
    # IOB2 with a stray I- is still IOB2
    ([["B-PER", "O", "I-LOC"], ["B-ORG", "O", "B-LOC"]], "IOB2"),
])
def test_detect_scheme(sequences: list[list[str]], scheme: str) -> None:
    assert detect_scheme(sequences) == scheme
