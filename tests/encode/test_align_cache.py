"""The word -> subtoken cache of WordTokenizer is bounded: a server labeling an endless
vocabulary keeps at most ``cache_size`` words (least recently used go first), and a sentence
with more distinct words than that is still tokenized whole and right."""

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
