from __future__ import annotations

import pytest

from seqrep.encode.batch import collate, length_batches, padding_waste
from seqrep.encode.repeat import RepeatSpec, build_segment, encode_sentence, windows

WORDS = [[10, 11], [12], [13, 14, 15]]


def test_layout_and_last_copy_reads() -> None:
    spec = RepeatSpec(repetitions=2, prefix=(1,), suffix=(2,), separator=(9,))
    seg = build_segment(WORDS, spec)
    copy = [10, 11, 12, 13, 14, 15]
    assert list(seg.input_ids) == [1] + copy + [9] + copy + [9] + copy + [2]
    # last copy starts at 1 + 2 * (6 + 1) = 15
    assert seg.reads == ((15,), (17,), (18,))
    assert seg.words == (0, 1, 2)


@pytest.mark.parametrize("subtoken,expected", [("first", ((7,), (9,), (10,))),
                                               ("last", ((8,), (9,), (12,))),
                                               ("mean", ((7, 8), (9,), (10, 11, 12)))])
def test_subtoken_choice(subtoken: str, expected: tuple) -> None:
    seg = build_segment(WORDS, RepeatSpec(repetitions=1, prefix=(1,), subtoken=subtoken))
    assert seg.reads == expected


def test_r0_is_one_copy_and_mean_over_copies() -> None:
    assert len(build_segment(WORDS, RepeatSpec(repetitions=0))) == 6
    seg = build_segment(WORDS, RepeatSpec(repetitions=1, read="mean"))
    assert seg.reads == ((0, 6), (2, 8), (3, 9))


def test_windows_cover_every_word_once() -> None:
    lengths = [1, 3, 2, 5, 1, 1, 4, 2, 2, 1, 3, 1] * 20
    spans = windows(lengths, limit=10, overlap=3)
    owned = sorted(i for _, _, o in spans for i in o)
    assert owned == list(range(len(lengths)))
    for s, e, o in spans:
        assert sum(lengths[s:e]) <= 10 or e - s == 1
        assert all(s <= i < e for i in o)
    # consecutive windows overlap, so owned words have context on both sides
    assert all(spans[k + 1][0] < spans[k][1] for k in range(len(spans) - 1))


def test_word_longer_than_limit_still_gets_a_window() -> None:
    segs = encode_sentence([[1] * 3, [2] * 20, [3] * 3], RepeatSpec(repetitions=1,
                                                                     max_subtokens=8))
    assert sorted(w for s in segs for w in s.words) == [0, 1, 2]


def test_collate_padding_and_positions() -> None:
    a = build_segment(WORDS, RepeatSpec(repetitions=0))
    b = build_segment(WORDS[:1], RepeatSpec(repetitions=0))
    right = collate([a, b], pad_id=0)
    assert right.attention_mask.tolist() == [[1] * 6, [1, 1, 0, 0, 0, 0]]
    assert right.position_ids[1].tolist() == [0, 1, 0, 0, 0, 0]
    left = collate([a, b], pad_id=0, side="left")
    assert left.attention_mask[1].tolist() == [0, 0, 0, 0, 1, 1]
    assert left.position_ids[1].tolist() == [0, 0, 0, 0, 0, 1]
    assert left.read_pos.tolist() == [0, 2, 3, 4]
    assert right.num_words == left.num_words == 4


def test_length_batches_sort_and_waste() -> None:
    lengths = [5, 50, 7, 48, 6, 49, 8, 51]
    batches = length_batches(lengths, batch_size=2)
    assert sorted(i for b in batches for i in b) == list(range(8))
    assert padding_waste(lengths, batches) < 0.05
    assert padding_waste(lengths, [[0, 1], [2, 3], [4, 5], [6, 7]]) > 0.4
    shuffled = length_batches(lengths, batch_size=2, shuffle=True, seed=1)
    assert shuffled == length_batches(lengths, batch_size=2, shuffle=True, seed=1)
    assert sorted(i for b in shuffled for i in b) == list(range(8))


def test_long_sentence_windows_and_ownership_by_hand() -> None:
    # ten one-subtoken words, 4 per window, 2 shared: worked out on paper from the rules
    # (a window holds whole words up to the limit; the next one repeats `overlap` subtokens;
    # a word is read where its distance to the nearest cut edge is largest)
    spans = windows([1] * 10, limit=4, overlap=2)
    assert spans == [(0, 4, [0, 1, 2]), (2, 6, [3, 4]), (4, 8, [5, 6]), (6, 10, [7, 8, 9])]
    segs = encode_sentence([[100 + i] for i in range(10)],
                           RepeatSpec(repetitions=1, max_subtokens=4), overlap=2)
    assert [list(s.input_ids) for s in segs] == [
        [100, 101, 102, 103] * 2, [102, 103, 104, 105] * 2,
        [104, 105, 106, 107] * 2, [106, 107, 108, 109] * 2]
    assert [s.words for s in segs] == [(0, 1, 2), (3, 4), (5, 6), (7, 8, 9)]
    # read in the second copy (positions 4..7) at the owned word's place in the window
    assert [s.reads for s in segs] == [((4,), (5,), (6,)), ((5,), (6,)), ((5,), (6,)),
                                       ((5,), (6,), (7,))]
