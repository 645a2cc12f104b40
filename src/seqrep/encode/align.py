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

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

#: Words whose subtokens a WordTokenizer remembers (least recently used go first): about
#: 320 bytes each, so at most about 16 MB however many distinct words a server sees.
CACHE_WORDS = 50_000


@dataclass
class WordTokenizer:
    """Tokenizes words one at a time and remembers the results.

    Args:
        tokenizer: a Hugging Face tokenizer.
        max_word_subtokens: a single word longer than this is cut to its first subtokens (its
            label is read there anyway); each cut is counted in ``cut_words``.
        cache_size: words whose subtokens are remembered, least recently used dropped first.

    Attributes:
        prefix: special ids the tokenizer puts before a text (e.g. ``[BOS]`` or ``[CLS]``).
        suffix: special ids it puts after a text (e.g. ``[SEP]``).
    """

    tokenizer: Any
    max_word_subtokens: int = 64
    cut_words: int = 0
    empty_words: int = 0
    cache_size: int = CACHE_WORDS
    _cache: OrderedDict[str, tuple[list[int], int]] = field(default_factory=OrderedDict,
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
        call); the cache then keeps the ``cache_size`` most recently used words."""
        found = {}
        for w in dict.fromkeys(words):
            if w in self._cache:
                self._cache.move_to_end(w)
                found[w] = self._cache[w]
        todo = [w for w in dict.fromkeys(words) if w not in found]
        if todo:
            # a lone surrogate (text that is not valid Unicode) cannot reach the Rust
            # tokenizer: it is tokenized as U+FFFD, the word itself stays as it was
            encoded = self.tokenizer([" " + _valid(w) for w in todo], add_special_tokens=False)
            for word, ids in zip(todo, encoded["input_ids"]):
                found[word] = self._cache[word] = self._clean(list(ids))
        while len(self._cache) > max(0, self.cache_size):
            self._cache.popitem(last=False)
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
