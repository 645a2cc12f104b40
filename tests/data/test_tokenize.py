from __future__ import annotations

import random
import unicodedata

import pytest

from seqrep.data.tokenize import split_sentences, split_words, tokenize


def words(text: str) -> list[str]:
    return [text[s:e] for s, e in split_words(text)]


def sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in split_sentences(text)]


@pytest.mark.parametrize("text, expected", [
    ("The U.S. army left at 9:05 p.m.", ["The", "U.S.", "army", "left", "at", "9:05", "p.m."]),
    ("It costs $1,000.50 (approx.)", ["It", "costs", "$", "1,000.50", "(", "approx", ".", ")"]),
    ("don't stop state-of-the-art rock’n’roll", ["do", "n't", "stop", "state-of-the-art",
                                                 "rock’n’roll"]),
    ("O'Neill's mother-in-law's y'all", ["O'Neill", "'s", "mother-in-law", "'s", "y'all"]),
    ("e.g. a.b.c. and A.", ["e.g.", "a.b.c.", "and", "A", "."]),
    ("25th 1st A4 4A foo_bar", ["25", "th", "1", "st", "A4", "4", "A", "foo_bar"]),
    ("3.14, 7:30pm", ["3.14", ",", "7:30", "pm"]),
    ("hot- ready -- now...", ["hot", "-", "ready", "-", "-", "now", ".", ".", "."]),
    ("'quoted' \"twice\"", ["'", "quoted", "'", '"', "twice", '"']),
    ("", []),
    ("  \t\n ", []),
])
def test_split_words_rule(text: str, expected: list[str]) -> None:
    assert words(text) == expected


def test_english_clitics_split_off_as_in_conll() -> None:
    # n't goes with the negation (do|n't, ca|n't, wo|n't); 's 're 've 'll 'd 'm start a word of
    # their own, in any case and with either apostrophe; a bare possessive ' is punctuation.
    text = "don't can't Obama's I'm it's O'Neill's James' WON'T they’re we'll I'd you've"
    offsets = split_words(text)
    assert [text[s:e] for s, e in offsets] == [
        "do", "n't", "ca", "n't", "Obama", "'s", "I", "'m", "it", "'s", "O'Neill", "'s", "James",
        "'", "WO", "N'T", "they", "’re", "we", "'ll", "I", "'d", "you", "'ve"]
    assert offsets[:12] == [(0, 2), (2, 5), (6, 8), (8, 11), (12, 17), (17, 19), (20, 21),
                            (21, 23), (24, 26), (26, 28), (29, 36), (36, 38)]
    assert offsets[12:14] == [(39, 44), (44, 45)]
    # an entity span on raw text now ends on a word boundary: "Obama", not "Obama's"
    assert words("Obama's visit") == ["Obama", "'s", "visit"]
    # letters after an inner apostrophe that are not a clitic stay in the word
    assert words("O'Sullivan d'Arc rock'n'roll don'ts") == ["O'Sullivan", "d'Arc", "rock'n'roll",
                                                           "don'ts"]


def test_a_quote_opening_a_quoted_letter_is_not_a_clitic() -> None:
    # a clitic follows a word character; after a space the quote opens a quotation
    text = "the letter 's' and 'd' key"
    offsets = split_words(text)
    assert [text[s:e] for s, e in offsets] == [
        "the", "letter", "'", "s", "'", "and", "'", "d", "'", "key"]
    assert offsets == [(0, 3), (4, 10), (11, 12), (12, 13), (13, 14), (15, 18), (19, 20),
                       (20, 21), (21, 22), (23, 26)]
    assert words("‘m’ and 're'") == ["‘", "m", "’", "and", "'", "re", "'"]
    # after a word (or a combining mark ending one) the clitic still splits off
    assert words("can't Obama's James' 1990's") == ["ca", "n't", "Obama", "'s", "James", "'",
                                                    "1990", "'s"]
    text = "cafe\u0301's menu"
    assert split_words(text) == [(0, 5), (5, 7), (8, 12)]


def test_offsets_are_exact_slices_for_whitespace_and_emoji() -> None:
    text = "tab\there\nnew  line\r\nemoji 👍🏽 ❤️ 👨‍👩‍👧 ok"
    offsets = split_words(text)
    assert [text[s:e] for s, e in offsets] == [
        "tab", "here", "new", "line", "emoji", "👍", "🏽", "❤️", "👨", "\u200d", "👩", "\u200d",
        "👧", "ok"]
    assert all(0 <= s < e <= len(text) for s, e in offsets)
    assert all(b[0] >= a[1] for a, b in zip(offsets, offsets[1:], strict=False))


def test_variation_selector_stays_with_its_emoji() -> None:
    # U+FE0F is a combining-class mark (Mn), so it joins the heart.
    assert words("I ❤️ it") == ["I", "❤️", "it"]


@pytest.mark.parametrize("text, expected", [
    ("नमस्ते दुनिया", ["नमस्ते", "दुनिया"]),  # viramas and vowel signs (Mn/Mc) inside words
    ("مرحبا بالعالم!", ["مرحبا", "بالعالم", "!"]),
    ("日本語のテキスト。", ["日本語のテキスト", "。"]),
    ("Москва, 東京", ["Москва", ",", "東京"]),
    ("ภาษาไทย ok", ["ภาษาไทย", "ok"]),
])
def test_non_latin_scripts(text: str, expected: list[str]) -> None:
    assert words(text) == expected


def test_decomposed_accents_stay_in_one_word() -> None:
    text = unicodedata.normalize("NFD", "naïve café résumé")
    assert words(text) == [unicodedata.normalize("NFD", w) for w in ["naïve", "café", "résumé"]]


def test_lone_marks() -> None:
    # A mark after whitespace has nothing to join: it is a word of its own.
    assert words("\u0301abc") == ["\u0301", "abc"]
    assert words("a \u0301") == ["a", "\u0301"]
    # A mark after punctuation joins it, but punctuation never absorbs the next word.
    assert words("!\u0301x") == ["!\u0301", "x"]


def test_tokenize_returns_words_and_offsets() -> None:
    assert tokenize("Hi there!") == (["Hi", "there", "!"], [(0, 2), (3, 8), (8, 9)])


def test_offsets_hold_on_random_text() -> None:
    alphabet = "ab Z9.,'’-_\t\n\r:$👍🏽\u200d\u0301\u0308éनस्ते東Ж!?\"()"
    rng = random.Random(0)
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        offsets = split_words(text)
        assert split_words(text) == offsets  # deterministic
        assert all(0 <= s < e <= len(text) for s, e in offsets)
        assert all(b[0] >= a[1] for a, b in zip(offsets, offsets[1:], strict=False))
        covered = {i for s, e in offsets for i in range(s, e)}
        # every non-space character is in exactly one word, and no word holds a space
        assert covered == {i for i, ch in enumerate(text) if not ch.isspace()}


@pytest.mark.parametrize("text, expected", [
    ("Hello there. How are you? Fine!", ["Hello there.", "How are you?", "Fine!"]),
    ('He said "Stop." Then left.', ['He said "Stop."', "Then left."]),
    ("It rose 5 p.c. in 2020. 3 more years.", ["It rose 5 p.c. in 2020.", "3 more years."]),
    ("Wait... what? no way. OK", ["Wait... what? no way.", "OK"]),
    ('Done. "Quoted" start.', ["Done.", '"Quoted" start.']),
    ("(Really?) Yes.", ["(Really?)", "Yes."]),
    ("one\ntwo\r\n\r\nthree", ["one", "two", "three"]),
    ("  padded  \n\n  ", ["padded"]),
    ("version 2.0 is out", ["version 2.0 is out"]),
    ("Mr. Smith arrived.", ["Mr.", "Smith arrived."]),
    ("Это тест. Вот.", ["Это тест.", "Вот."]),
    ("", []),
    (" \n \t ", []),
])
def test_split_sentences_rule(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


def test_sentence_offsets_are_stripped_and_non_empty() -> None:
    text = "  A b.  C d!\n\n e? \tF"
    spans = split_sentences(text)
    assert [text[s:e] for s, e in spans] == ["A b.", "C d!", "e?", "F"]
    for s, e in spans:
        assert e > s and not text[s].isspace() and not text[e - 1].isspace()
