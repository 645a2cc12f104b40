"""A deterministic word and sentence splitter that keeps character offsets.

Readers of character-offset data (SemEval ABSA XML, NLU++, JSONL spans) cut words with
:func:`split_words`, and prediction on raw text uses the same rule, so a model sees the same
words at training and at inference time. Offsets are ``(start, end)`` with ``end`` exclusive and
always satisfy ``text[start:end] == word``, whatever the text holds (emoji, tabs, newlines,
non-Latin scripts).
"""

from __future__ import annotations

import re
import unicodedata

# Alternatives are tried in this order at each position (re picks the first that matches).
_CLITIC = r"(?i:s|re|ve|ll|d|m)"
# A clitic follows a word character (or a combining mark ending a word, as in a decomposed
# "café's"); a quote after a space or punctuation opens a quotation: 's' is ' s '.
_AFTER_WORD = r"(?<=[\w\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f])"
_WORD_RE = re.compile(
    r"(?:[^\W\d_]\.){2,}"  # abbreviations of single letters with dots: U.S., p.m., e.g.
    r"|\d+(?:[.,:]\d+)*"  # numbers: 42, 3.14, 1,000, 9:05
    r"|\w+?(?=[nN]['’][tT]\b)"  # the stem before n't: do|n't, ca|n't
    r"|[nN]['’][tT]\b"  # n't
    rf"|{_AFTER_WORD}['’]{_CLITIC}\b"  # English clitics, split off as in CoNLL/PTB: Obama|'s, I|'m
    rf"|\w+(?:-\w+)*(?:['’](?!{_CLITIC}\b)\w+(?:-\w+)*)*"  # words: state-of-the-art, O'Neill
    r"|[^\w\s]"  # any other single non-space character: punctuation, symbols, emoji
)

_LINE_BREAK_RE = re.compile(r"\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
# End of a sentence: terminal punctuation, then closing quotes/brackets, then whitespace.
_SENT_END_RE = re.compile(r"[.!?]+[\"'”’)\]}»]*\s+")
_OPENING_QUOTES = "\"'“‘«„"


def _is_mark(token: str) -> bool:
    """True if every character of ``token`` is a Unicode combining mark (category M*)."""
    return all(unicodedata.category(ch).startswith("M") for ch in token)


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def split_words(text: str) -> list[tuple[int, int]]:
    """Split text into words, returning their character offsets.

    The rule, applied left to right, tries these regular-expression alternatives in order:

    1. abbreviations of single letters with dots, ``(?:[^\\W\\d_]\\.){2,}`` (``U.S.``, ``p.m.``);
    2. numbers, ``\\d+(?:[.,:]\\d+)*`` (``3.14``, ``1,000``, ``9:05``);
    3. English clitics split off as CoNLL and the Penn Treebank do: ``do`` ``n't``,
       ``Obama`` ``'s``, ``I`` ``'m`` (the stem before ``n't``, then ``n't``, then ``'s 're 've
       'll 'd 'm`` right after a word character or combining mark, so a quote that opens a
       quotation is not a clitic: ``'s'`` is ``'`` ``s`` ``'``);
    4. words with inner hyphens or other apostrophes (``state-of-the-art``, ``O'Neill``,
       ``rock’n’roll``);
    5. any other single non-space character, ``[^\\w\\s]`` (punctuation, symbols, emoji).

    Whitespace separates words and is never part of one. Python's ``\\w`` does not match
    combining marks (Unicode category ``M*``), so a token made only of marks is merged into the
    token that ends right where it starts; if that token is a word (or number), a word token
    that starts right where the mark ends is merged too. So decomposed accents (``cafe`` +
    U+0301) and Devanagari vowel signs and viramas (``नमस्ते``) stay inside one word, as in
    Unicode's word-boundary rules (UAX #29). A mark after whitespace (or at the start) stays a
    word of its own; emoji modifiers (category Sk) and joiners (Cf) are words of their own.

    Args:
        text: any string.

    Returns:
        ``(start, end)`` offsets of the words in order, ``end`` exclusive, so that
        ``text[start:end]`` is the word.
    """
    words: list[list[int]] = []
    glue_next = False  # the last word is a word ending in a combining mark
    for m in _WORD_RE.finditer(text):
        start, end = m.span()
        touches = bool(words) and words[-1][1] == start
        if touches and _is_mark(m.group()):
            words[-1][1] = end
            glue_next = _is_word_char(text[words[-1][0]])
            continue
        if touches and glue_next and _is_word_char(text[start]):
            words[-1][1] = end
            glue_next = False
            continue
        words.append([start, end])
        glue_next = False
    return [(s, e) for s, e in words]


def tokenize(text: str) -> tuple[list[str], list[tuple[int, int]]]:
    """Split text into words; returns ``(words, offsets)`` (see :func:`split_words`)."""
    offsets = split_words(text)
    return [text[s:e] for s, e in offsets], offsets


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Split text into sentences, returning their character offsets.

    The rule: a sentence ends at every line break, and after ``.``, ``!`` or ``?`` (and any
    closing quotes or brackets that follow) when whitespace comes next and then an uppercase
    letter, a digit or an opening quote. Each sentence is stripped of surrounding whitespace, and
    empty sentences are dropped. The rule is simple on purpose: ``Mr. Smith`` is cut after
    ``Mr.``, and a lowercase start never begins a sentence.

    Args:
        text: any string.

    Returns:
        ``(start, end)`` offsets of the sentences in order, ``end`` exclusive; none is empty or
        starts or ends with whitespace.
    """
    pieces: list[tuple[int, int]] = []
    line_start = 0
    for br in _LINE_BREAK_RE.finditer(text):
        pieces.append((line_start, br.start()))
        line_start = br.end()
    pieces.append((line_start, len(text)))

    sentences: list[tuple[int, int]] = []

    def add(start: int, end: int) -> None:
        start, end = _strip(text, start, end)
        if start < end:
            sentences.append((start, end))

    for line_start, line_end in pieces:
        start = line_start
        for m in _SENT_END_RE.finditer(text, line_start, line_end):
            nxt = m.end()
            if nxt < line_end and (text[nxt].isupper() or text[nxt].isdigit()
                                   or text[nxt] in _OPENING_QUOTES):
                add(start, nxt)
                start = nxt
        add(start, line_end)
    return sentences
