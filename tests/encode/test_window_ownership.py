"""Which window reads each word (issue 37 item 7): the same answers as the plain rule, in work
that grows linearly with the document, counted (not timed).

The reference below is the rule as the docstrings of :func:`seqrep.encode.repeat.windows` and
:mod:`seqrep.encode.document` state it, written the slow, obvious way: windows of whole words
taken greedily up to the limit, the next one starting so that about ``overlap`` subtokens are
repeated; then, for every word, every window is looked at, and the word goes to the window
where its distance to the nearest cut edge is largest (the document's own ends are no cut
edges), the earlier window on a tie.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import seqrep.encode.repeat as repeat_module
from seqrep.encode.document import encode_document
from seqrep.encode.repeat import RepeatSpec, windows


def reference_windows(lengths: list[int], limit: int, overlap: int
                      ) -> list[tuple[int, int, list[int]]]:
    n = len(lengths)
    spans = []
    start = 0
    while True:
        end = start + 1  # a window holds at least one word, however long
        while end < n and sum(lengths[start:end + 1]) <= limit:
            end += 1
        spans.append((start, end))
        if end >= n:
            break
        # back off from the end while the repeated words stay within `overlap` subtokens,
        # never to the window's first two words
        nxt = end
        while nxt - 1 > start + 1 and sum(lengths[nxt - 1:end]) <= overlap:
            nxt -= 1
        start = max(nxt, start + 1)
    owned: list[list[int]] = [[] for _ in spans]
    for i in range(n):
        best, best_distance = None, None
        for k, (s, e) in enumerate(spans):
            if not s <= i < e:
                continue
            left = float("inf") if s == 0 else i - s
            right = float("inf") if e == n else e - 1 - i
            if best is None or min(left, right) > best_distance:
                best, best_distance = k, min(left, right)
        owned[best].append(i)
    return [(s, e, o) for (s, e), o in zip(spans, owned)]


# word lengths mostly short, some longer than a small window (a window of one word)
LENGTHS = st.lists(st.one_of(st.integers(1, 4), st.integers(1, 40)), min_size=1, max_size=300)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(LENGTHS, st.integers(1, 48), st.floats(0.0, 1.0))
def test_ownership_equals_the_plain_rule_on_random_documents(lengths: list[int], limit: int,
                                                             share: float) -> None:
    overlap = int(limit * share)
    assert windows(lengths, limit, overlap) == reference_windows(lengths, limit, overlap)


def test_ownership_equals_the_plain_rule_on_random_documents_of_real_length() -> None:
    rng = random.Random(37)
    for limit in (16, 64, 256):
        lengths = [rng.choice([1, 1, 1, 2, 2, 3, 5]) for _ in range(3000)]
        for overlap in (limit // 4, limit // 2):
            assert windows(lengths, limit, overlap) == \
                reference_windows(lengths, limit, overlap)


@settings(max_examples=100, deadline=None, derandomize=True, database=None)
@given(st.lists(st.lists(st.integers(1, 4), min_size=1, max_size=12), min_size=2,
                max_size=30), st.integers(4, 32))
def test_every_word_of_a_random_document_is_read_once_where_the_rule_says(
        sentences: list[list[int]], limit: int) -> None:
    # word w of sentence s is `lengths` long and made of ids 1000 * s + w (separator: 7)
    word_ids = [[[1000 * s + w] * n for w, n in enumerate(sent)] for s, sent in
                enumerate(sentences)]
    rows = encode_document(word_ids, RepeatSpec(repetitions=1, max_subtokens=limit), limit,
                           separator=(7,))
    read = [p for _, places in rows for p in places]
    flat = [(s, w) for s, sent in enumerate(sentences) for w in range(len(sent))]
    assert sorted(read) == flat
    # the separator is glued before each sentence's first word but the document's first
    lengths = [n + (w == 0 and s > 0) for s, sent in enumerate(sentences)
               for w, n in enumerate(sent)]
    if sum(lengths) > limit:
        expected = [[flat[i] for i in o] for *_, o in
                    reference_windows(lengths, limit, int(limit * 0.5)) if o]
        assert [list(places) for _, places in rows] == expected


@contextmanager
def _counting_lines() -> Iterator[list[int]]:
    """Counts the Python lines run in seqrep/encode/repeat.py (generator expressions
    included): the same count on any machine, however fast or loaded."""
    counter = [0]
    source = repeat_module.__file__

    def trace(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename != source:
            return None
        if event == "line":
            counter[0] += 1
        return trace

    old = sys.gettrace()
    sys.settrace(trace)
    try:
        yield counter
    finally:
        sys.settrace(old)


def _work(words: int, limit: int) -> int:
    rng = random.Random(words)
    lengths = [rng.choice([1, 1, 2, 3]) for _ in range(words)]
    with _counting_lines() as counter:
        windows(lengths, limit, limit // 2)
    return counter[0]


def test_the_work_of_choosing_windows_grows_linearly() -> None:
    # twice the words: at most 2.2 times the work (twice, plus a little for the ends); the
    # rule that scans every window for every word does about 4 times
    for limit in (16, 64):
        small, big = _work(2000, limit), _work(4000, limit)
        assert big <= 2.2 * small, (limit, small, big)
    # and a 100,000-word document costs about 50 times a 2,000-word one, not 2,500
    assert _work(100_000, 64) <= 55 * _work(2000, 64)
