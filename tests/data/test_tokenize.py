from __future__ import annotations

import random
import unicodedata

import pytest
from work_count import assert_linear

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
        "tab", "here", "new", "line", "emoji", "👍🏽", "❤️", "👨‍👩‍👧", "ok"]
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


@pytest.mark.parametrize("text, expected", [
    ("see https://x.org/a?b=1.", ["see", "https://x.org/a?b=1", "."]),
    ("(www.example.com/path)", ["(", "www.example.com/path", ")"]),
    ("https://en.wikipedia.org/wiki/Python_(language)), ok",
     ["https://en.wikipedia.org/wiki/Python_(language)", ")", ",", "ok"]),
    ('at "http://a.b/c-d#e_f", then', ["at", '"', "http://a.b/c-d#e_f", '"', ",", "then"]),
    ("HTTPS://X.ORG/A/!", ["HTTPS://X.ORG/A/", "!"]),
    ("https://x.org/a...and", ["https://x.org/a...and"]),
    ("https://x.org/a... and", ["https://x.org/a", ".", ".", ".", "and"]),
    ("«https://x.org/ü?q=ä»", ["«", "https://x.org/ü?q=ä", "»"]),
    ("https://x.org/a;b:c, https://y.org/.", ["https://x.org/a;b:c", ",", "https://y.org/",
                                               "."]),
    ("go to www. now", ["go", "to", "www", ".", "now"]),
    ("http:// x", ["http", ":", "/", "/", "x"]),
])
def test_urls_are_one_word_without_trailing_punctuation(text: str, expected: list[str]) -> None:
    assert words(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("mail john.doe+nlp@mail.example.co.uk.", ["mail", "john.doe+nlp@mail.example.co.uk", "."]),
    ("<a_b@x.org>, c-d@e-f.de;", ["<", "a_b@x.org", ">", ",", "c-d@e-f.de", ";"]),
    ("me@localhost is not", ["me", "@", "localhost", "is", "not"]),  # no dot: no address
])
def test_email_addresses_are_one_word(text: str, expected: list[str]) -> None:
    assert words(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("@user_1 loves #NLProc2026!", ["@user_1", "loves", "#NLProc2026", "!"]),
    ("(@Obama's #MeToo's)", ["(", "@Obama", "'s", "#MeToo", "'s", ")"]),
    ("we're #1 a@b", ["we", "'re", "#", "1", "a", "@", "b"]),  # #1 is a number; a@b no mention
    ("cc @alice@mastodon.social.", ["cc", "@alice@mastodon.social", "."]),
    ("#rock-n-roll #東京 #नमस्ते", ["#rock", "-", "n-roll", "#東京", "#नमस्ते"]),
    ("#cafe\u0301s @jose\u0301", ["#cafe\u0301s", "@jose\u0301"]),
])
def test_mentions_and_hashtags_are_one_word(text: str, expected: list[str]) -> None:
    assert words(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("👩\u200d👩\u200d👧 family", ["👩\u200d👩\u200d👧", "family"]),  # ZWJ sequence
    ("🇩🇪🇫🇷 🇯🇵", ["🇩🇪", "🇫🇷", "🇯🇵"]),  # flags: pairs of regional indicators
    ("ok👍🏽! 👋🏿👋", ["ok", "👍🏽", "!", "👋🏿", "👋"]),  # skin-tone modifiers
    ("❤️ ☺️x ❤️\u200d🔥", ["❤️", "☺️", "x", "❤️\u200d🔥"]),  # variation selector, ZWJ
    ("1️⃣ #️⃣", ["1️⃣", "#️⃣"]),  # keycaps
    ("🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f!",
     ["🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f", "!"]),  # tag sequence
])
def test_emoji_are_whole_grapheme_clusters(text: str, expected: list[str]) -> None:
    assert words(text) == expected


def test_joiners_and_selectors_are_never_words_of_their_own() -> None:
    # after a word they join it (Persian and Indic scripts write ZWNJ and ZWJ inside words)
    assert words("می\u200cخواهم") == ["می\u200cخواهم"]
    assert words("क्\u200dष x\u200d") == ["क्\u200dष", "x\u200d"]
    # with nothing to join (after whitespace, at the start) they are skipped like whitespace
    text = "\u200d a \ufe0f b \u200d\ufe0f\u200c 😀 \ufe0f"
    assert words(text) == ["a", "b", "😀"]
    assert words("\ufe0fabc") == ["abc"]


@pytest.mark.parametrize("text, expected", [
    ("on 2026-12-01, then", ["on", "2026-12-01", ",", "then"]),
    ("2026-12-01T09:00 2026-12-01T09:00:30Z 2026-12-01T09:00:30.5+01:00",
     ["2026-12-01T09:00", "2026-12-01T09:00:30Z", "2026-12-01T09:00:30.5+01:00"]),
    ("2026-12-01-2027-01-31", ["2026-12-01", "-", "2027-01-31"]),
    ("2026-13-01 12-01-2026", ["2026", "-", "13", "-", "01", "12", "-", "01", "-", "2026"]),
    ("3.14 1,000 9:05 COVID-19", ["3.14", "1,000", "9:05", "COVID-19"]),
])
def test_iso_dates_are_one_word(text: str, expected: list[str]) -> None:
    assert words(text) == expected


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
        # every non-space character is in exactly one word, and no word holds a space; a
        # joiner with nothing to join (U+200D after a space) is skipped like whitespace
        assert covered <= {i for i, ch in enumerate(text) if not ch.isspace()}
        assert all(text[i] == "\u200d" for i, ch in enumerate(text)
                   if not ch.isspace() and i not in covered)


# Characters a random text is built from: every kind the rules treat specially, plus any code
# point at all (lone surrogates, unassigned, private use, controls included).
_TRICKY = ("ab Z9_.,:;'’-@#/?=&%+()[]{}<>\"«»!\t\n\r\x0b\x0c\x1c\x85\xa0\u2028\u2029\u3000"
           "\u200b\u200c\u200d\ufe0e\ufe0f\u0301\u0308\u20e3\u0600ःनस्ते東Жé👍🏽👩🔥❤🇩🇪🏴"
           "\U000e0067\U000e007f\U000e0100")
_CHUNKS = ["https://", "http://", "www.", "x.org", "@", "#", ".com", "2026-12-01", "T09:00",
           "n't", "'s", "U.S.", "Dr.", " ", "\u200d", "\ufe0f", "👩\u200d👩\u200d👧", "1,000"]


def _random_text(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(0, 30)):
        pick = rng.random()
        if pick < 0.5:
            parts.append(rng.choice(_TRICKY))
        elif pick < 0.75:
            parts.append(rng.choice(_CHUNKS))
        else:
            parts.append(chr(rng.randrange(0x110000)))
    return "".join(parts)


def test_words_and_sentences_hold_on_random_unicode_text() -> None:
    joiners = {"\u200d", "\ufe0f"}
    rng = random.Random(20261201)
    for _ in range(3000):
        text = _random_text(rng)
        offsets = split_words(text)
        assert split_words(text) == offsets
        assert tokenize(text) == ([text[s:e] for s, e in offsets], offsets)
        assert all(0 <= s < e <= len(text) for s, e in offsets), text
        assert all(b[0] >= a[1] for a, b in zip(offsets, offsets[1:])), text
        for s, e in offsets:
            word = text[s:e]
            assert not any(ch.isspace() for ch in word), (text, word)
            assert not set(word) <= joiners, (text, word)
        covered = {i for s, e in offsets for i in range(s, e)}
        # what no word holds is whitespace or a joiner with nothing to join
        assert all(ch.isspace() or ch in "\u200c\u200d" or "\ufe00" <= ch <= "\ufe0f"
                   or "\U000e0100" <= ch <= "\U000e01ef"
                   for i, ch in enumerate(text) if i not in covered), text
        spans = split_sentences(text)
        assert all(0 <= s < e <= len(text) for s, e in spans), text
        assert all(b[0] >= a[1] for a, b in zip(spans, spans[1:])), text
        assert all(not text[s].isspace() and not text[e - 1].isspace() for s, e in spans)


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
    ("Mr. Smith arrived.", ["Mr. Smith arrived."]),
    ("Это тест. Вот.", ["Это тест.", "Вот."]),
    ("", []),
    (" \n \t ", []),
])
def test_split_sentences_rule(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("Dr. Smith met Mr. and Mrs. Jones. Ms. Lee left.",
     ["Dr. Smith met Mr. and Mrs. Jones.", "Ms. Lee left."]),
    ("Prof. Ng vs. Dr. No. Tea, e.g. Green, i.e. Sencha, etc. Then more.",
     ["Prof. Ng vs. Dr. No.", "Tea, e.g. Green, i.e. Sencha, etc. Then more."]),
    ("J. K. Rowling wrote it. Then J.R.R. Tolkien did.",
     ["J. K. Rowling wrote it.", "Then J.R.R. Tolkien did."]),
    ("Acme Inc. The firm grew. Acme Ltd. Acme Corp. Acme Co. Done.",
     ["Acme Inc. The firm grew.", "Acme Ltd. Acme Corp. Acme Co. Done."]),
    ("He moved to the U.S. The end.", ["He moved to the U.S. The end."]),
    ("See No. 5 now. No. I won't.", ["See No. 5 now.", "No.", "I won't."]),
    ("Sammy Davis Jr. Sang. St. Paul and Sr. Ana.",
     ["Sammy Davis Jr. Sang.", "St. Paul and Sr. Ana."]),
    ("From Jan. To Feb. Mar. Apr. Jun. Jul. Aug. Sep. Sept. Oct. Nov. Dec. End. Next.",
     ["From Jan. To Feb. Mar. Apr. Jun. Jul. Aug. Sep. Sept. Oct. Nov. Dec. End.", "Next."]),
    ("DR. WHO CAME. MR. X LEFT.", ["DR. WHO CAME.", "MR. X LEFT."]),
    ("The Dr. said hi. Mr.. Then", ["The Dr. said hi.", "Mr..", "Then"]),
    ("A drum. Tom left. Then (Dr. X) came.", ["A drum.", "Tom left.", "Then (Dr. X) came."]),
    ("Read https://x.org/a. Then stop.", ["Read https://x.org/a.", "Then stop."]),
])
def test_sentences_do_not_end_at_abbreviations_or_initials(text: str,
                                                           expected: list[str]) -> None:
    assert sentences(text) == expected


def test_long_runs_take_linear_work() -> None:
    # a run of 40,000 periods without whitespace once took the sentence splitter 50 s; the
    # work is counted, not timed (tests/work_count.py): doubling a run at most doubles it
    for piece in ("x.", ".", "?!", "ab.cd", "Dr. ", "a\u0301", "👩\u200d👩\u200d👧",
                  "https://x.org/a?!"):
        assert_linear(split_words, piece)
        assert_linear(split_sentences, piece)
    # inside one regex call the work is not counted: the sentence-end pattern is linear
    # because a match starts only where a run of terminal punctuation starts (never from
    # each of its characters, which made a run of periods quadratic)
    from seqrep.data.tokenize import _SENT_END_RE

    assert _SENT_END_RE.match("x... Y", 1) is not None
    assert _SENT_END_RE.match("x... Y", 2) is None and _SENT_END_RE.match("x... Y", 3) is None


def test_sentence_offsets_are_stripped_and_non_empty() -> None:
    text = "  A b.  C d!\n\n e? \tF"
    spans = split_sentences(text)
    assert [text[s:e] for s, e in spans] == ["A b.", "C d!", "e?", "F"]
    for s, e in spans:
        assert e > s and not text[s].isspace() and not text[e - 1].isspace()
