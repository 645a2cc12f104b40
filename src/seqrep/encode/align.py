"""Words -> subtoken ids, with word boundaries we own.

Each word is tokenized on its own as it appears in running text: with a leading space, the way
RoBERTa's ``add_prefix_space`` does it, so byte-level BPE (GPT-2, Llama 3, SmolLM) and
SentencePiece (Gemma, Llama 2) tokenizers see ``" Paris"`` and not ``"Paris"`` glued to nothing.
The first word gets the space too, so a word's subtokens never depend on its position. The ids
are exactly those of the word in running text; when they start with a token that is only the
space (byte-level BPE splits ``" 1996"`` into ``"Ġ" "1" "9" "9" "6"``), the word's ``lead`` says
how many such tokens to skip when reading it, so "first subtoken" means its first content token.
Word boundaries are exact by construction; we never rely on ``word_ids()``, which some converted
Llama tokenizers return wrong.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

#: Words whose subtokens a WordTokenizer remembers (least recently used go first): an
#: ordinary word costs about 400 bytes (:func:`entry_bytes`), so 50,000 take about 20 MB.
CACHE_WORDS = 50_000
#: Bytes the remembered words may take together, whatever their length: a count alone let a
#: server keep 50,000 unique 10,000-character words (165 KB each with SmolLM2's tokenizer,
#: about 8 GB). Ordinary text reaches the word count first.
CACHE_BYTES = 32 << 20
# What one cached word keeps alive, in CPython: the word itself (sys.getsizeof), an 8-byte
# slot per id in its list, a 32-byte int object per id above 256 (smaller ids are shared
# singletons), and about 250 bytes for the entry (its tuple and size, the list header, the
# dictionary slot and its ordering link). tests/encode/test_align_cache.py checks the sum
# against what tracemalloc sees the cache keep.
_ID_SLOT, _INT_OBJECT, _ENTRY = 8, 32, 256


def entry_bytes(word: str, ids: Sequence[int]) -> int:
    """The memory a cached ``word`` with subtoken ``ids`` keeps alive (see ``_ENTRY``)."""
    return (sys.getsizeof(word) + _ENTRY + _ID_SLOT * len(ids)
            + _INT_OBJECT * sum(1 for i in ids if not -5 <= i <= 256))


@dataclass
class WordTokenizer:
    """Tokenizes words one at a time and remembers the results.

    Args:
        tokenizer: a Hugging Face tokenizer.
        max_word_subtokens: a single word longer than this is cut to its first subtokens (its
            label is read there anyway); each cut is counted in ``cut_words``.
        cache_size: words whose subtokens are remembered, least recently used dropped first.
        cache_bytes: the memory those words may take together (:func:`entry_bytes`); a word
            whose entry alone is larger is tokenized every time instead of flushing the cache.

    Attributes:
        prefix: special ids the tokenizer puts before a text (e.g. ``[BOS]`` or ``[CLS]``).
        suffix: special ids it puts after a text (e.g. ``[SEP]``).
        cache_bytes_used: what the cached words take now (:func:`entry_bytes`, summed).
    """

    tokenizer: Any
    max_word_subtokens: int = 64
    cut_words: int = 0
    empty_words: int = 0
    cache_size: int = CACHE_WORDS
    cache_bytes: int = CACHE_BYTES
    cache_bytes_used: int = field(default=0, init=False)
    _cache: OrderedDict[str, tuple[list[int], int, int]] = field(default_factory=OrderedDict,
                                                                 repr=False)

    def __post_init__(self) -> None:
        self.prefix, self.suffix = special_affixes(self.tokenizer)
        self._space_ids = set()
        for tid in self.tokenizer(" ", add_special_tokens=False)["input_ids"]:
            self._space_ids.add(tid)
        self._fallback = _fallback_id(self.tokenizer)

    def __call__(self, words: Sequence[str]) -> list[list[int]]:
        """Subtoken ids of each word (never empty).

        Args:
            words: the words of one sentence.

        Returns:
            One list of ids per word.
        """
        out = []
        for ids, _ in self._entries(words):
            if len(ids) > self.max_word_subtokens:
                self.cut_words += 1
                ids = ids[: self.max_word_subtokens]
            out.append(ids)
        return out

    def leads(self, words: Sequence[str]) -> list[int]:
        """Per word, how many leading space-only tokens to skip when reading it."""
        return [min(lead, self.max_word_subtokens - 1) for _, lead in self._entries(words)]

    def _entries(self, words: Sequence[str]) -> list[tuple[list[int], int]]:
        """``(ids, lead)`` per word, from the cache or tokenized now (the missing ones in one
        call); the cache then keeps the most recently used words, at most ``cache_size`` of
        them in at most ``cache_bytes``."""
        found: dict[str, tuple[list[int], int]] = {}
        for w in dict.fromkeys(words):
            if w in self._cache:
                self._cache.move_to_end(w)
                ids, lead, _ = self._cache[w]
                found[w] = ids, lead
        todo = [w for w in dict.fromkeys(words) if w not in found]
        if todo:
            # a lone surrogate (text that is not valid Unicode) cannot reach the Rust
            # tokenizer: it is tokenized as U+FFFD, the word itself stays as it was
            encoded = self.tokenizer([" " + _valid(w) for w in todo], add_special_tokens=False)
            for word, ids in zip(todo, encoded["input_ids"]):
                found[word] = self._clean(list(ids))
                size = entry_bytes(word, found[word][0])
                if size <= self.cache_bytes:
                    self._cache[word] = (*found[word], size)
                    self.cache_bytes_used += size
        while self._cache and (len(self._cache) > max(0, self.cache_size)
                               or self.cache_bytes_used > self.cache_bytes):
            self.cache_bytes_used -= self._cache.popitem(last=False)[1][2]
        return [found[w] for w in words]

    def _clean(self, ids: list[int]) -> tuple[list[int], int]:
        if not ids:  # e.g. a zero-width character the tokenizer drops
            self.empty_words += 1
            return [self._fallback], 0
        lead = 0
        while lead < len(ids) - 1 and (ids[lead] in self._space_ids or self._is_blank(ids[lead])):
            lead += 1
        return ids, lead

    def _is_blank(self, tid: int) -> bool:
        piece = self.tokenizer.convert_ids_to_tokens(tid)
        return isinstance(piece, str) and piece.replace("▁", " ").replace("Ġ", " ").strip() == ""


def _valid(word: str) -> str:
    """``word`` with lone surrogates replaced by U+FFFD (for the tokenizer only)."""
    try:
        word.encode("utf-8")
        return word
    except UnicodeEncodeError:
        return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in word)


def special_affixes(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The special ids a tokenizer adds before and after a text, found by comparing encodings.

    Returns:
        ``(prefix, suffix)``, e.g. ``([cls], [sep])`` for BERT, ``([bos], [])`` for Gemma and
        ``([], [])`` for a tokenizer that adds nothing.
    """
    plain = tokenizer("a", add_special_tokens=False)["input_ids"]
    full = tokenizer("a", add_special_tokens=True)["input_ids"]
    n = len(plain)
    for i in range(len(full) - n + 1):
        if full[i : i + n] == plain:
            return list(full[:i]), list(full[i + n :])
    return [], []


def _fallback_id(tokenizer: Any) -> int:
    for tid in (tokenizer.unk_token_id, tokenizer.pad_token_id, tokenizer.eos_token_id):
        if tid is not None:
            return int(tid)
    return 0


def ensure_pad_token(tokenizer: Any) -> int:
    """Give a tokenizer without a pad token one (EOS, else UNK, else id 0) and return its id.

    The pad id only fills positions that the attention mask hides, so any id is correct; we
    still prefer a real special token so that embeddings are never indexed out of range.
    """
    if tokenizer.pad_token_id is None:
        for name in ("eos_token", "unk_token", "bos_token"):
            tok = getattr(tokenizer, name)
            if tok is not None:
                tokenizer.pad_token = tok
                break
    return int(tokenizer.pad_token_id) if tokenizer.pad_token_id is not None else 0


def label_ids(tags: Sequence[str], label2id: dict[str, int], source: str = "") -> list[int]:
    """Map tags to ids; an unknown tag raises ValueError naming it and the known labels."""
    try:
        return [label2id[t] for t in tags]
    except KeyError as err:
        raise ValueError(f"{source}unknown label {err.args[0]!r}; the model knows "
                         f"{', '.join(label2id)}") from None
