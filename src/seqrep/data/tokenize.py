r"""A deterministic word and sentence splitter that keeps character offsets.

Readers of character-offset data (SemEval ABSA XML, NLU++, JSONL spans) cut words with
:func:`split_words`, and prediction on raw text uses the same rule, so a model sees the same
words at training and at inference time. Offsets are ``(start, end)`` with ``end`` exclusive and
always satisfy ``text[start:end] == word``, whatever the text holds (emoji, tabs, newlines,
non-Latin scripts, lone surrogates).

The word rule, in the order its alternatives are tried at each position (the first that matches
wins; :func:`split_words` states each one exactly):

1. URLs (``https://…``, ``http://…``, ``www.…``) without the punctuation that ends a sentence or
   closes a bracket around them; e-mail addresses; ``@mentions``; ``#hashtags``;
2. ISO 8601 dates, with a time if one follows (``2026-12-01``, ``2026-12-01T09:00``);
3. abbreviations of single letters with dots (``U.S.``), numbers (``3.14``, ``1,000``,
   ``9:05``), English clitics split off as in CoNLL (``do`` ``n't``, ``Obama`` ``'s``) and words
   (``state-of-the-art``, ``O'Neill``);
4. any other grapheme cluster (Unicode UAX #29, ``\X`` of the ``regex`` package): punctuation,
   symbols, and whole emoji (``👩‍👩‍👧``, ``🇩🇪``, ``👍🏽``, ``❤️``);

then combining marks and joiners are kept with the word before them, and a joiner or variation
selector with nothing to join is skipped like whitespace.

The sentence rule (:func:`split_sentences`) cuts at line breaks and after ``.``, ``!`` or ``?``
followed by whitespace and a capital, digit or opening quote, except after the abbreviations of
:data:`ABBREVIATIONS` and initials.
"""

from __future__ import annotations

import re
import unicodedata

import regex

# Alternatives are tried in this order at each position (re picks the first that matches).
_CLITIC = r"(?i:s|re|ve|ll|d|m)"
# A clitic follows a word character (or a combining mark ending a word, as in a decomposed
# "café's"); a quote after a space or punctuation opens a quotation: 's' is ' s '.
_AFTER_WORD = r"(?<=[\w\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f])"
# A domain: labels of word characters and inner hyphens, at least two, joined by dots.
_LABEL = r"\w(?:[\w-]*\w)?"
_DOMAIN = rf"{_LABEL}(?:\.{_LABEL})+"
_WORD_RE = re.compile(
    # a URL runs to the next space, quote or angle bracket; _url_end() then gives back trailing
    # punctuation and unbalanced closing brackets
    r"(?P<url>(?i:https?://|www\.)\w[^\s<>\"]*)"
    # an e-mail address (the local part is at most 64 characters, as in RFC 5321)
    rf"|(?P<email>\w[\w.%+-]{{0,63}}@{_DOMAIN})"
    # @mention (also @user@server), not after a word character: a@b is a, @, b
    rf"|(?P<mention>(?<![\w@])@\w+(?:@{_DOMAIN})?)"
    # #hashtag with at least one letter (#1 is # and 1), not after a word character or &
    r"|(?P<hashtag>(?<![\w#&])#[\d_]*[^\W\d_]\w*)"
    # ISO 8601 date, optionally with a time and a UTC offset
    r"|(?P<date>(?<!\d)\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])"
    r"(?:T(?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:[.,]\d+)?)?"
    r"(?:Z|[+-](?:[01]\d|2[0-3]):?[0-5]\d)?)?(?!\d))"
    r"|(?P<abbrev>(?:[^\W\d_]\.){2,})"  # abbreviations of single letters with dots: U.S., p.m.
    r"|(?P<number>\d+(?:[.,:]\d+)*)"  # numbers: 42, 3.14, 1,000, 9:05
    r"|(?P<stem>\w+?(?=[nN]['’][tT]\b))"  # the stem before n't: do|n't, ca|n't
    r"|(?P<nt>[nN]['’][tT]\b)"  # n't
    rf"|(?P<clitic>{_AFTER_WORD}['’]{_CLITIC}\b)"  # English clitics, as in CoNLL: Obama|'s, I|'m
    rf"|(?P<word>\w+(?:-\w+)*(?:['’](?!{_CLITIC}\b)\w+(?:-\w+)*)*)"  # state-of-the-art, O'Neill
    r"|(?P<other>[^\w\s])"  # anything else: extended to its grapheme cluster by split_words
)
_GRAPHEME_RE = regex.compile(r"\X")
# Characters a URL may end with besides letters, digits and balanced closing brackets.
_URL_END_CHARS = frozenset("/-_#%&*=+~$@")
_CLOSERS = {")": "(", "]": "[", "}": "{"}

_LINE_BREAK_RE = re.compile(r"\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
# End of a sentence: terminal punctuation, then closing quotes/brackets, then whitespace. A
# match starts only where a run of terminal punctuation starts, so a long run without
# whitespace after it is scanned once, not once from each of its characters.
_SENT_END_RE = re.compile(r"(?<![.!?])[.!?]+[\"'”’)\]}»]*\s+")
_OPENING_QUOTES = "\"'“‘«„"

#: Words ending in a period after which :func:`split_sentences` never ends a sentence (compared
#: case-insensitively). Dotted single letters (``U.S.``, ``e.g.``, ``i.e.``, ``p.m.``) and
#: initials (one capital and a period: ``J.``) are recognised by their shape, and ``No.`` only
#: before a digit (``No. 5``; ``No. I won't.`` is two sentences).
ABBREVIATIONS = frozenset({
    "dr.", "mr.", "mrs.", "ms.", "prof.", "st.", "jr.", "sr.", "vs.", "etc.",
    "inc.", "ltd.", "corp.", "co.",
    "jan.", "feb.", "mar.", "apr.", "jun.", "jul.", "aug.", "sep.", "sept.", "oct.", "nov.",
    "dec.",
})
_BEFORE_A_NUMBER = frozenset({"no."})
_DOTTED_LETTERS_RE = re.compile(r"(?:[^\W\d_]\.){2,}")


def _is_joiner(ch: str) -> bool:
    """ZWNJ, ZWJ or a variation selector: invisible, meaningful only next to what they join."""
    return (ch in "\u200c\u200d" or "\ufe00" <= ch <= "\ufe0f"
            or "\U000e0100" <= ch <= "\U000e01ef")


def _is_mark(token: str) -> bool:
    """True if every character of ``token`` is a combining mark (category M*) or a joiner."""
    return all(unicodedata.category(ch).startswith("M") or _is_joiner(ch) for ch in token)


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _url_end(text: str, start: int, end: int) -> int:
    """The end of the URL matched at ``text[start:end]``, less what follows it in prose.

    Trailing punctuation, symbols, marks and emoji are given back (``x.org/a?b=1.`` ends before
    the period), and so is a closing bracket without its opening one inside the URL
    (``(see x.org/a)``), but not a balanced one (``wiki/Python_(language)``). The match starts
    with a scheme or ``www.`` and a word character, which always stay.
    """
    while end > start:
        ch = text[end - 1]
        if ch in _CLOSERS:
            if text.count(_CLOSERS[ch], start, end) >= text.count(ch, start, end):
                break
        elif _is_word_char(ch) or ch in _URL_END_CHARS:
            break
        end -= 1
    return end


def _cluster_end(text: str, start: int) -> int:
    """The end of the grapheme cluster that starts at ``start``, cut before any whitespace or
    word character (a virama starting a cluster takes the next consonant, GB9c; a prepended
    concatenation mark takes the digit or the space after it, GB9b): words are the other
    rules' business, and marks left without a base are joined to the word before them."""
    end = _GRAPHEME_RE.match(text, start).end()
    for k in range(start + 1, end):
        if text[k].isspace() or _is_word_char(text[k]):
            return k
    return end


def split_words(text: str) -> list[tuple[int, int]]:
    """Split text into words, returning their character offsets.

    The rule, applied left to right, tries these alternatives in order at each position:

    1. URLs: ``http://``, ``https://`` or ``www.`` (any case) and a word character, up to the
       next whitespace, ``"``, ``<`` or ``>``; trailing characters other than letters, digits,
       ``/ - _ # % & * = + ~ $ @`` are given back, and so is a closing bracket that has no
       opening one in the URL: ``see https://x.org/a?b=1.`` is ``see``, the URL, ``.``;
       ``wiki/Python_(language)`` keeps its balanced ``)``. A URL starts a word (after
       whitespace or punctuation), so ``xhttp://…`` is not one;
    2. e-mail addresses, ``local@domain.tld`` (the domain has at least one dot);
    3. ``@mentions`` (``@user``, ``@user@server.social``) and ``#hashtags`` with at least one
       letter (``#NLProc``; ``#1`` is ``#`` ``1``), not right after a word character
       (``a@b`` is ``a`` ``@`` ``b``);
    4. ISO 8601 dates, ``2026-12-01``, optionally with a time and UTC offset
       (``2026-12-01T09:00``, ``2026-12-01T09:00:30.5+01:00``); an invalid month or day is not
       a date (``2026-13-01`` is five words);
    5. abbreviations of single letters with dots, ``(?:[^\\W\\d_]\\.){2,}`` (``U.S.``, ``p.m.``);
    6. numbers, ``\\d+(?:[.,:]\\d+)*`` (``3.14``, ``1,000``, ``9:05``);
    7. English clitics split off as CoNLL and the Penn Treebank do: ``do`` ``n't``,
       ``Obama`` ``'s``, ``I`` ``'m`` (the stem before ``n't``, then ``n't``, then ``'s 're 've
       'll 'd 'm`` right after a word character or combining mark, so a quote that opens a
       quotation is not a clitic: ``'s'`` is ``'`` ``s`` ``'``);
    8. words with inner hyphens or other apostrophes (``state-of-the-art``, ``O'Neill``,
       ``rock’n’roll``);
    9. any other extended grapheme cluster (Unicode UAX #29): a punctuation mark or symbol with
       the marks that follow it, and a whole emoji: a ZWJ sequence (``👩‍👩‍👧``), a flag (two
       regional indicators, ``🇩🇪``), an emoji with a skin-tone modifier (``👍🏽``) or variation
       selector (``❤️``), a keycap (``1️⃣``), a tag sequence.

    Whitespace separates words and is never part of one. Python's ``\\w`` does not match
    combining marks (Unicode category ``M*``) or the joiners ZWNJ and ZWJ, so a token made only
    of marks and joiners (and variation selectors) is merged into the token that ends right
    where it starts; if that token is a word (a number, mention, hashtag, …), a word token that
    starts right where the mark ends is merged too. So decomposed accents (``cafe`` + U+0301),
    Devanagari vowel signs and viramas (``नमस्ते``) and the ZWNJ of Persian (``می‌خواهم``) stay
    inside one word, as in Unicode's word-boundary rules (UAX #29). A combining mark after
    whitespace (or at the start) stays a word of its own; a run of joiners and variation
    selectors there (U+200C, U+200D, U+FE00-U+FE0F, U+E0100-U+E01EF) joins nothing and is
    skipped like whitespace, so no word is ever only a ZWJ or a variation selector.

    Args:
        text: any string.

    Returns:
        ``(start, end)`` offsets of the words in order, ``end`` exclusive, so that
        ``text[start:end]`` is the word.
    """
    words: list[list[int]] = []
    glue_next = False  # the last word is a word ending in a combining mark
    pos = 0
    while (m := _WORD_RE.search(text, pos)) is not None:
        start, end = m.span()
        if m.lastgroup == "url":
            end = _url_end(text, start, end)
        elif m.lastgroup == "other":
            end = _cluster_end(text, start)
        pos = end
        touches = bool(words) and words[-1][1] == start
        if touches and _is_mark(text[start:end]):
            words[-1][1] = end
            first = text[words[-1][0]]
            glue_next = _is_word_char(first) or first in "@#"
            continue
        if touches and glue_next and _is_word_char(text[start]):
            words[-1][1] = end
        elif not all(_is_joiner(ch) for ch in text[start:end]):  # a joiner joining nothing
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


def _ends_abbreviation(text: str, line_start: int, dot: int, nxt: int) -> bool:
    """True if the ``.`` at ``dot``, followed by whitespace up to ``nxt``, ends an abbreviation."""
    if text[dot] != "." or not text[dot + 1].isspace():  # "?", "...", 'Dr."', "Dr.)"
        return False
    k = dot
    while k > line_start and (text[k - 1].isalpha() or text[k - 1] == "."):
        k -= 1
    if k > line_start and _is_word_char(text[k - 1]):  # "ab1c." is no abbreviation
        return False
    word = text[k:dot + 1]
    lower = word.lower()
    return (lower in ABBREVIATIONS
            or bool(_DOTTED_LETTERS_RE.fullmatch(word))
            or len(word) == 2 and word[0].isupper()
            or lower in _BEFORE_A_NUMBER and text[nxt].isdigit())


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Split text into sentences, returning their character offsets.

    The rule: a sentence ends at every line break, and after ``.``, ``!`` or ``?`` (and any
    closing quotes or brackets that follow) when whitespace comes next and then an uppercase
    letter, a digit or an opening quote, except after a single ``.`` directly followed by
    whitespace that ends an abbreviation: a word of :data:`ABBREVIATIONS` (``Dr.``, ``Mr.``,
    ``Inc.``, ``etc.``, ``Jan.``, any case), dotted single letters (``U.S.``, ``e.g.``,
    ``p.m.``), an initial (one capital: ``J. K. Rowling``), or ``No.`` before a digit
    (``No. 5``). Each sentence is stripped of surrounding whitespace, and empty sentences are
    dropped. A lowercase start never begins a sentence.

    An abbreviation can also end a sentence (``He works at Acme Inc. The firm grew.``, ``…in
    the U.S. Then``); the rule never cuts there, and such text stays one sentence. That is the
    cheaper mistake for sequence labeling: a missed cut only gives a longer input, while a
    wrong one after ``Dr.`` or an initial separates a name from its title or cuts an entity
    (``J. | K. | Rowling``) in two.

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
                                   or text[nxt] in _OPENING_QUOTES) \
                    and not _ends_abbreviation(text, line_start, m.start(), nxt):
                add(start, nxt)
                start = nxt
        add(start, line_end)
    return sentences
