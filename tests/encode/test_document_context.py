"""Document context at the encoding level: documents, windows over sentences, ownership
(issue 24). Expected rows are written out by hand from the rule in seqrep.encode.document."""

from __future__ import annotations

import pytest

from seqrep.config import LabelerConfig
from seqrep.core.contexts import DOCUMENT
from seqrep.encode.document import documents, encode_document
from seqrep.encode.repeat import RepeatSpec, encode_sentence, focus_segment
from seqrep.errors import ConfigError


def test_documents_are_runs_of_one_id_and_a_missing_id_stands_alone() -> None:
    assert documents(["a", "a", None, None, "b", "b", "a"]) == [[0, 1], [2], [3], [4, 5], [6]]
    assert documents([]) == []


def _doc(sizes: list[int]) -> list[list[list[int]]]:
    """A document of sentences of ``sizes`` words; word j of the document has the one id
    10 + j (so a row's ids say which words it holds)."""
    out, j = [], 0
    for n in sizes:
        out.append([[10 + j + w] for w in range(n)])
        j += n
    return out


def test_a_document_longer_than_the_window_is_read_once_from_the_best_window() -> None:
    # 7 words of one subtoken (sentences of 2, 3, 2 words), a budget of 4, overlap 2:
    # windows over document words 0-3, 2-5, 4-6. Each word goes to the window where its
    # distance to the nearest cut edge is largest (document ends are no cut edges):
    #   w0 w1 only in 0; w2: 0 gives 1, 1 gives 0 -> 0; w3: 0 gives 0, 1 gives 1 -> 1;
    #   w4: 1 gives 1, 2 gives 0 -> 1; w5: 1 gives 0, 2 gives 1 -> 2; w6 only in 2.
    spec = RepeatSpec(repetitions=1)
    rows = encode_document(_doc([2, 3, 2]), spec, limit=4)
    assert [places for _, places in rows] == [((0, 0), (0, 1), (1, 0)), ((1, 1), (1, 2)),
                                              ((2, 0), (2, 1))]
    seg = rows[1][0]
    assert seg.input_ids == (12, 13, 14, 15) * 2  # the window, k = 2 times
    assert seg.reads == ((5,), (6,))  # words 3 and 4 in the last copy


def test_the_focus_layout_puts_only_the_words_a_window_reads_in_its_last_copy() -> None:
    # the same 7 words, windows and owners as above; the first copy holds the window, the
    # last only the words the row reads (their positions counted by hand)
    rows = encode_document(_doc([2, 3, 2]), RepeatSpec(repetitions=1), limit=4,
                           segment=focus_segment)
    assert [places for _, places in rows] == [((0, 0), (0, 1), (1, 0)), ((1, 1), (1, 2)),
                                              ((2, 0), (2, 1))]
    assert [seg.input_ids for seg, _ in rows] == [(10, 11, 12, 13, 10, 11, 12),
                                                  (12, 13, 14, 15, 13, 14),
                                                  (14, 15, 16, 15, 16)]
    assert [seg.reads for seg, _ in rows] == [((4,), (5,), (6,)), ((4,), (5,)), ((3,), (4,))]
    # r = 2 with a separator between copies and every copy read: the window twice, then the
    # two words; word 3 sits at 1, 6 and 11, word 4 at 2, 7 and 12
    spec = RepeatSpec(repetitions=2, separator=(9,), read="mean")
    seg = encode_document(_doc([2, 3, 2]), spec, limit=4, segment=focus_segment)[1][0]
    assert seg.input_ids == (12, 13, 14, 15, 9, 12, 13, 14, 15, 9, 13, 14)
    assert seg.reads == ((1, 6, 10), (2, 7, 11))
    # at r = 0 there is no earlier copy: the window itself, as in the repeated layout
    plain = encode_document(_doc([2, 3, 2]), RepeatSpec(repetitions=0), limit=4)
    assert encode_document(_doc([2, 3, 2]), RepeatSpec(repetitions=0), limit=4,
                           segment=focus_segment) == plain
    # a document that fits one window reads every word there: both layouts agree
    whole = encode_document(_doc([2, 3, 2]), RepeatSpec(repetitions=1), limit=100,
                            segment=focus_segment)
    assert whole == encode_document(_doc([2, 3, 2]), RepeatSpec(repetitions=1), limit=100)


def test_the_focus_layout_keeps_sentence_separators_in_its_last_copy() -> None:
    # words 10 11 | 12 13 14 | 15 16 with separator 99 glued before 12 and 15 (lengths
    # 1 1 2 1 1 2 1); limit 5, overlap 2: windows over words 0-3 (10 11 99+12 13) and 3-6
    # (13 14 99+15 16: the next start steps back over 13 only). Word 3 has margin 0 in both
    # and stays with the first; words 4-6 are read from the second, whose last copy keeps
    # the separator before 15 and reads 15 after it
    rows = encode_document(_doc([2, 3, 2]), RepeatSpec(repetitions=1), limit=5,
                           separator=(99,), segment=focus_segment)
    seg, places = rows[-1]
    assert places == ((1, 2), (2, 0), (2, 1))
    assert seg.input_ids == (13, 14, 99, 15, 16, 14, 99, 15, 16)
    assert seg.reads == ((5,), (7,), (8,))


def test_the_separator_marks_sentence_starts_and_is_never_read() -> None:
    spec = RepeatSpec(repetitions=0)
    ((seg, places),) = encode_document(_doc([2, 3, 2]), spec, limit=100, separator=(99,))
    assert seg.input_ids == (10, 11, 99, 12, 13, 14, 99, 15, 16)
    assert seg.reads == ((0,), (1,), (3,), (4,), (5,), (7,), (8,))
    assert places == ((0, 0), (0, 1), (1, 0), (1, 1), (1, 2), (2, 0), (2, 1))
    mean = encode_document(_doc([1, 1]), RepeatSpec(repetitions=0, subtoken="mean"),
                           limit=100, separator=(98, 99))[0][0]
    assert mean.input_ids == (10, 98, 99, 11) and mean.reads == ((0,), (3,))


def test_every_word_of_a_40_sentence_document_is_read_exactly_once() -> None:
    sizes = [3 + (i * 7) % 11 for i in range(40)]  # 3..13 words
    doc = [[[5] * (1 + (s + w) % 3) for w in range(n)] for s, n in enumerate(sizes)]
    for limit in (16, 50, 10_000):
        rows = encode_document(doc, RepeatSpec(repetitions=1), limit, separator=(1,))
        read = sorted(p for _, places in rows for p in places)
        assert read == [(s, w) for s, n in enumerate(sizes) for w in range(n)]
        assert (len(rows) > 1) == (limit < 10_000)
        for seg, places in rows:  # k = 2 copies of a window within the budget (+1 separator
            assert len(seg) <= 2 * (limit + 3)  # or one word that is longer)
            assert len(seg.reads) == len(places)


def test_focus_rows_read_the_same_words_in_fewer_tokens() -> None:
    sizes = [3 + (i * 7) % 11 for i in range(40)]
    doc = [[[5] * (1 + (s + w) % 3) for w in range(n)] for s, n in enumerate(sizes)]
    spec = RepeatSpec(repetitions=1)
    repeated = encode_document(doc, spec, 50, separator=(1,))
    focus = encode_document(doc, spec, 50, separator=(1,), segment=focus_segment)
    assert [p for _, p in focus] == [p for _, p in repeated]
    for (a, _), (b, places) in zip(repeated, focus):
        # the first copy is the window in both; the last holds the read words only, each
        # with the separator glued before a sentence's first word (not the document's)
        half = len(a) // 2
        assert b.input_ids[:half] == a.input_ids[:half] and len(b) < len(a)
        assert len(b) - half == sum(len(doc[s][w]) + (w == 0 and s > 0) for s, w in places)


def test_a_one_sentence_document_is_encoded_as_the_sentence() -> None:
    words = [[3, 4], [5], [6, 7, 8]]
    spec = RepeatSpec(repetitions=2, prefix=(1,), separator=(2,), subtoken="last")
    ((seg, places),) = encode_document([words], spec, limit=256, separator=(99,))
    assert [seg] == encode_sentence(words, spec)
    assert places == ((0, 0), (0, 1), (0, 2))


def test_context_settings_are_checked_where_declared() -> None:
    assert LabelerConfig().context == "sentence"
    with pytest.raises(ConfigError, match="context='page'"):
        LabelerConfig(context="page")
    for bad in (0, -5):
        with pytest.raises(ConfigError, match=f"context_tokens={bad}; expected 1 to"):
            LabelerConfig(context_tokens=bad)


class _S:
    def __init__(self, doc_id: str | None) -> None:
        self.doc_id = doc_id


def test_the_missing_documents_notice_names_the_splits_without_any() -> None:
    assert DOCUMENT.notice({"train": [_S("d1"), _S(None)]}) is None
    line = DOCUMENT.notice({"train": [_S("d1")], "test": [_S(None), _S(None)],
                            "dev": []})
    assert line is not None and "\n" not in line
    assert "test has no document ids" in line and "train" not in line


def test_a_word_cut_with_its_separator_is_still_read_inside_itself() -> None:
    """A word longer than a copy (2 subtokens here) after a sentence boundary: separator and
    word [20, 21, 22] (20 a space-only lead) are cut to [99, 20], so only the lead is left,
    and it is read: the read stays inside the word, never past it (on the next sentence's
    30) and never an empty mean."""
    word_ids = [[[10]], [[20, 21, 22], [30]]]
    leads = [[0], [1, 0]]
    for subtoken in ("first", "mean"):
        spec = RepeatSpec(repetitions=0, subtoken=subtoken, max_subtokens=2)
        ((seg, places),) = encode_document(word_ids, spec, limit=100, separator=(99,),
                                           leads=leads)
        assert seg.input_ids == (10, 99, 20, 30)
        assert places == ((0, 0), (1, 0), (1, 1))
        assert seg.reads == ((0,), (2,), (3,))


def test_batches_can_count_sentences_instead_of_rows() -> None:
    from seqrep.encode.batch import length_batches

    # four rows of one length holding 3, 3, 1 and 1 sentences, 4 sentences a batch: a batch
    # closes before the row that would pass 4 (a row alone may hold more)
    assert length_batches([5, 5, 5, 5], 4, sizes=[3, 3, 1, 1]) == [[0], [1, 2], [3]]
    assert length_batches([5, 5, 5, 5], 2, sizes=[3, 3, 1, 1]) == [[0], [1], [2, 3]]
    # sizes of one are rows, as without sizes
    assert length_batches([3, 1, 2, 5, 4], 2, sizes=[1] * 5) == \
        length_batches([3, 1, 2, 5, 4], 2) == [[1, 2], [0, 4], [3]]
