"""The word -> subtoken cache of WordTokenizer is bounded: a server labeling an endless
vocabulary keeps at most ``cache_size`` words in at most ``cache_bytes`` (least recently used
go first; issue 37 item 6: long unique words once made a count-only cache hold gigabytes), and
a sentence with more distinct words than that is still tokenized whole and right."""

from __future__ import annotations

from transformers import AutoTokenizer

from seqrep.encode.align import WordTokenizer


def test_cache_holds_at_most_cache_size_words(tiny) -> None:
    tok = AutoTokenizer.from_pretrained(tiny("llama"))
    words = WordTokenizer(tok, cache_size=8)
    for i in range(200):
        words([f"w{i}a", f"w{i}b", "Paris"])  # 401 distinct words, "Paris" in every call
        assert len(words._cache) <= 8
    assert len(words._cache) == 8  # 401 distinct words seen: full, not fewer
    assert "Paris" in words._cache  # used all along: never the least recent
    assert "w0a" not in words._cache


def test_sentence_longer_than_the_cache_is_tokenized_right(tiny) -> None:
    tok = AutoTokenizer.from_pretrained(tiny("llama"))
    small, big = WordTokenizer(tok, cache_size=3), WordTokenizer(tok)
    sentence = [f"word{i}" for i in range(20)] + ["word3", "Obama"]
    # the expected ids come from the unbounded tokenizer and from the tokenizer itself
    assert small(sentence) == big(sentence)
    assert small.leads(sentence) == big.leads(sentence)
    assert small(["Obama"]) == [tok(" Obama", add_special_tokens=False)["input_ids"]]
    assert len(small._cache) <= 3


class _CharTokenizer:
    """A stand-in tokenizer with one id per character, every id above 256 (so each is an int
    object of its own, as most ids of a 49,152-token vocabulary are): a word's ids are known
    by hand."""

    unk_token_id, pad_token_id, eos_token_id = 0, 0, 0

    def __call__(self, texts, add_special_tokens: bool = False):  # noqa: ANN001, ANN204
        one = isinstance(texts, str)
        ids = [[1000 + ord(c) for c in t] for t in ([texts] if one else texts)]
        return {"input_ids": ids[0] if one else ids}

    def convert_ids_to_tokens(self, tid: int) -> str:
        return chr(tid - 1000)


def _word(i: int, size: int) -> str:
    return f"{i:04d}" + "x" * (size - 4)


def test_cache_is_bounded_by_bytes_counted_by_hand() -> None:
    # a 1,000-character ASCII word: the str object is 49 + 1,000 bytes (CPython's compact
    # ASCII layout); its 1,001 ids (the leading space too) are each an 8-byte slot in the list
    # and a 32-byte int object; 256 bytes for the entry itself (its tuple, the list header,
    # the dictionary slot): 1,049 + 1,001 * 40 + 256 = 41,345 bytes. A budget of 200,000
    # holds 4 of them (165,380), not 5 (206,725).
    words = WordTokenizer(_CharTokenizer(), cache_bytes=200_000)
    for i in range(20):
        # (what a call returns is cut to the first 64 ids; the cache keeps them all)
        assert words([_word(i, 1000)]) == [[1000 + ord(c) for c in " " + _word(i, 1000)][:64]]
    assert list(words._cache) == [_word(i, 1000) for i in (16, 17, 18, 19)]
    assert words.cache_bytes_used == 4 * 41_345
    # short words still fill the cache up to the word count: "12" costs 51 + 3 * 40 + 256
    small = WordTokenizer(_CharTokenizer(), cache_bytes=10 * 427, cache_size=8)
    small([f"{i:02d}" for i in range(30)])
    assert list(small._cache) == [f"{i:02d}" for i in range(22, 30)]
    assert small.cache_bytes_used == 8 * 427


def test_a_word_larger_than_the_whole_budget_is_tokenized_but_not_kept() -> None:
    words = WordTokenizer(_CharTokenizer(), cache_bytes=40_000)
    words(["Paris"])
    assert words([_word(1, 1000)]) == [[1000 + ord(c) for c in " " + _word(1, 1000)][:64]]
    assert list(words._cache) == ["Paris"]  # the big word did not push Paris out either
    assert words.cache_bytes_used == 54 + 6 * 40 + 256


def test_the_byte_count_is_what_the_cache_holds(tiny) -> None:
    """The count checked against Python's own allocation tracing (an independent measure):
    what caching 40 distinct 10,000-character words keeps alive is what the count says."""
    import random
    import string
    import tracemalloc

    for tokenizer in (_CharTokenizer(), AutoTokenizer.from_pretrained(tiny("llama"))):
        words = WordTokenizer(tokenizer, cache_bytes=1 << 30)
        words(["warm", "up"])
        before = words.cache_bytes_used
        rng = random.Random(6)
        tracemalloc.start()  # before the words are made: they are part of what is kept
        try:
            start = tracemalloc.get_traced_memory()[0]
            text = ["".join(rng.choice(string.ascii_letters) for _ in range(10_000))
                    for _ in range(40)]
            words(text)
            del text  # the cache's keys are all that keep the words alive now
            grown = tracemalloc.get_traced_memory()[0] - start
        finally:
            tracemalloc.stop()
        counted = words.cache_bytes_used - before
        # within a few hundred bytes of 3.7 to 16 MB (dictionary growth, the allocator's
        # rounding): never more than 1% below, nor 10% above
        assert 0.99 * grown <= counted <= 1.1 * grown, (type(tokenizer), grown, counted)


def test_the_default_cache_keeps_at_most_32_mib_of_long_words() -> None:
    # the attack, scaled down: 1,000 distinct 1,000-character words of 41,345 bytes each (see
    # above) are 41 MB; the default budget, 32 MiB = 33,554,432 bytes, holds 811 of them
    words = WordTokenizer(_CharTokenizer())
    for i in range(0, 1000, 50):
        words([_word(j, 1000) for j in range(i, i + 50)])
    assert len(words._cache) == 811
    assert next(iter(words._cache)) == _word(1000 - 811, 1000)  # the most recent 811
