from __future__ import annotations

import pytest

from seqrep.data.charspans import (
    CharSpan,
    char_to_words,
    place_on_words,
    place_spans,
    placement_notes,
)
from seqrep.data.tokenize import split_words
from seqrep.errors import ConfigError, DataError

TEXT = "The dress code of the chef-run kitchen"
OFFSETS = split_words(TEXT)  # The dress code of the chef-run kitchen


@pytest.mark.parametrize("start, end, alignment, expected", [
    (4, 14, "expand", (1, 3, True)),  # "dress code": exact
    (4, 14, "strict", (1, 3, True)),
    (4, 13, "expand", (1, 3, False)),  # "dress cod" grows to "dress code"
    (4, 13, "contract", (1, 2, False)),  # ... or shrinks to "dress"
    (4, 13, "strict", None),
    (22, 26, "expand", (5, 6, False)),  # "chef" inside "chef-run"
    (22, 26, "contract", None),
    (3, 4, "expand", None),  # a space covers no word
    (0, len(TEXT), "expand", (0, 7, True)),
])
def test_char_to_words(start: int, end: int, alignment: str, expected: object) -> None:
    assert char_to_words(OFFSETS, start, end, alignment) == expected


def test_place_spans_reports_every_span_it_does_not_place_exactly() -> None:
    spans = [CharSpan(4, 13, "A", "dress cod"), CharSpan(4, 8, "B", "dres"),
             CharSpan(3, 4, "C", " "), CharSpan(22, 26, "A", "chef"),
             CharSpan(22, 30, "A", "chef-run"), CharSpan(31, 38, "D", "kitchen")]
    placed = place_spans(OFFSETS, spans)
    assert placed.spans == [(1, 3, "A"), (5, 6, "A"), (6, 7, "D")]
    assert [(cs.ref, i, j) for cs, i, j in placed.moved] == [("dress cod", 1, 3)]
    assert [cs.ref for cs in placed.unplaced] == [" "]
    assert [(a.ref, b.ref) for a, b in placed.overlapping] == [("dres", "dress cod")]
    # "chef-run" comes first (same start, longer first); "chef" lands on the same words
    assert [(a.ref, b.ref) for a, b in placed.duplicates] == [("chef", "chef-run")]
    notes = placement_notes(placed, "x.json example [0]", TEXT, OFFSETS, "slot")
    assert [n.split(":")[0] for n in notes] == ["cut mid-word", "no word", "overlapping",
                                                "duplicate"]
    assert "'dress cod'" in notes[0] and "'dress code'" in notes[0]
    assert notes[0].startswith("cut mid-word: x.json example [0]: slot 'dress cod' (A, chars 4-13)")


def test_place_spans_strict_leaves_misaligned_spans_unplaced() -> None:
    placed = place_spans(OFFSETS, [CharSpan(4, 13, "A"), CharSpan(31, 38, "D")], "strict")
    assert placed.spans == [(6, 7, "D")]
    assert len(placed.unplaced) == 1


def test_span_before_a_clitic_is_exact() -> None:
    # "Obama" in "Obama's visit" ends where the word "'s" starts, so it needs no moving
    text = "Obama's visit"
    offsets = split_words(text)
    assert char_to_words(offsets, 0, 5, "strict") == (0, 1, True)
    placed = place_spans(offsets, [CharSpan(0, 5, "PER", "Obama")], "strict")
    assert placed.spans == [(0, 1, "PER")] and not placed.moved


def test_place_on_words_cuts_places_and_notes_or_raises_under_strict() -> None:
    spans = [CharSpan(4, 13, "A", "dress cod"), CharSpan(31, 38, "D", "kitchen")]
    offsets, placed, notes = place_on_words(TEXT, spans, "expand", "x.json example [0]")
    assert offsets == OFFSETS and placed.spans == [(1, 3, "A"), (6, 7, "D")]
    assert notes == placement_notes(placed, "x.json example [0]", TEXT, OFFSETS)
    with pytest.raises(DataError) as err:
        place_on_words(TEXT, spans, "strict", "x.json example [0]", "term", "data/x.json",
                       {spans[0]: 7}.get)
    assert str(err.value) == ("data/x.json:7: term 'dress cod' (A, chars 4-13) does not fall on "
                              "word boundaries (alignment='strict'), in x.json example [0]")
    assert err.value.line == 7


def test_unknown_alignment_lists_the_allowed_ones() -> None:
    with pytest.raises(ConfigError, match="expand, contract, strict"):
        place_spans(OFFSETS, [], "loose")
