"""A fuzz of prediction input (hypothesis): any text (every Unicode category, lone surrogates,
emoji with joiners and modifiers, combining marks, right-to-left scripts and controls, control
characters, every line separator, URLs, abbreviations, long runs of punctuation) through the
sentence and word splitters, through ``predict_text`` on a tiny random labeler, and through the
line splitting of ``seqrep predict``. Nothing raises; every sentence, word and span slices the
text it came from; there is one record per text and one text per input line.

Budget: ``seqrep-ci`` (200 examples for the splitters, 100 through the model, derandomized);
``HYPOTHESIS_PROFILE=fuzz`` or ``SEQREP_FUZZ_EXAMPLES=N`` runs 5000 (N) fresh examples each.
Each test prints how many examples it ran (``pytest -s``).
"""

from __future__ import annotations

import json
import os
from collections import Counter

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from work_count import assert_linear

from seqrep.cli.predict import _lines
from seqrep.data.tags import strict_spans
from seqrep.data.tokenize import split_sentences, split_words
from seqrep.model.labeler import SequenceLabeler
from seqrep.predict.tagger import predict_text, to_conll

_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
           HealthCheck.large_base_example]
_FUZZ = (os.environ.get("HYPOTHESIS_PROFILE") in ("fuzz", "seqrep-fuzz")
         or bool(os.environ.get("SEQREP_FUZZ_EXAMPLES")))
_N = int(os.environ.get("SEQREP_FUZZ_EXAMPLES") or 5000)


def _budget(ci_examples: int) -> settings:
    if _FUZZ:
        return settings(max_examples=_N, deadline=None, print_blob=True, database=None,
                        suppress_health_check=_HEALTH)
    return settings(max_examples=ci_examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=_HEALTH)


SPLITTERS = _budget(200)
MODEL = _budget(100)

LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
JOINERS = "\u200c\u200d\ufe0e\ufe0f\U000e0101"
SPECIAL = (list(LINE_BREAKS) + list(JOINERS) + [
    "\r\n", " ", "  ", "\t", "\xa0", "\u3000", "\x00", "\x07", "\x1b[31m", "\ud800", "\udfff",
    "\u0301", "\u0308\u0301", "\u093f", "\u094d", "\u0610", "\u20dd",  # combining marks
    "\u200e", "\u200f", "\u202a", "\u202e", "\u2066", "\u2069",  # direction marks, overrides
    "שלום", "مرحبا", "می‌خواهم", "नमस्ते", "東京", "ﷺ", "\u0600", "\U000110bd",
    "🙂", "👍🏽", "👩‍👩‍👧", "🇩🇪", "❤️", "1️⃣", "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "🏻", "🇩", "\U0001f9d1\u200d",
    ".", "!", "?", "...", "…", "?!", ".\"", ".)", "'", "’", "\"", "“", "«", "(", ")", "]",
    "-", "--", "_", "@", "#", "&", "/", ":", ",", "=",
    "n't", "'s", "O'Neill", "state-of-the-art", "U.S.", "e.g.", "Dr.", "No.", "J.", "Inc.",
    "http://", "https://x.org/a?b=1.", "www.", "(see x.org/a)", "a@b.cd", "@user@srv.social",
    "#NLProc", "#1", "2026-12-01T09:00:30.5+01:00", "3.14", "1,000", "9:05",
    "Obama", "Paris", "The", "A", "7", "cafe\u0301",
])
any_char = st.characters(exclude_categories=[])  # every category, lone surrogates included
pieces = st.one_of(st.sampled_from(SPECIAL), st.text(any_char, min_size=1, max_size=4))
punctuation_runs = st.tuples(st.sampled_from([".", "!", "?", ".!?", "-", ",", "'", "\"", "…",
                                              ". ", "! A", ".\n", "\u200d", "\u0301"]),
                             st.integers(50, 3000)).map(lambda t: t[0] * t[1])
texts = st.one_of(
    st.text(any_char, max_size=60),
    st.lists(pieces, max_size=30).map("".join),
    st.lists(st.one_of(pieces, punctuation_runs), min_size=1, max_size=4).map("".join),
)


def _no_surrogates(text: str) -> bool:
    return not any("\ud800" <= c <= "\udfff" for c in text)


# What the model sees: the same, without lone surrogates (see
# test_predict_text_with_a_lone_surrogate) and with shorter runs, so 100 examples stay quick.
model_texts = st.one_of(
    st.text(any_char, max_size=60),
    st.lists(pieces, max_size=30).map("".join),
    st.lists(st.one_of(pieces, punctuation_runs.map(lambda r: r[:300])), min_size=1,
             max_size=3).map("".join),
).map(lambda t: "".join(c for c in t if _no_surrogates(c)))


def _is_joiner(ch: str) -> bool:
    return ch in "\u200c\u200d" or "\ufe00" <= ch <= "\ufe0f" or "\U000e0100" <= ch <= "\U000e01ef"


def check_words(text: str, offsets: list[tuple[int, int]]) -> None:
    """Words in order, not overlapping, never holding whitespace, never only joiners; what
    lies between them is whitespace or joiners with nothing to join."""
    pos = 0
    for s, e in offsets:
        assert isinstance(s, int) and isinstance(e, int)
        assert pos <= s < e <= len(text), (pos, s, e, len(text))
        word = text[s:e]
        assert not any(c.isspace() for c in word), repr(word)
        assert not all(_is_joiner(c) for c in word), repr(word)
        gap = text[pos:s]
        assert all(c.isspace() or _is_joiner(c) for c in gap), repr(gap)
        pos = e
    assert all(c.isspace() or _is_joiner(c) for c in text[pos:]), repr(text[pos:])


def check_sentences(text: str, sentences: list[tuple[int, int]]) -> None:
    """Sentences in order, not empty, stripped, within one line; only whitespace between."""
    pos = 0
    for a, b in sentences:
        assert pos <= a < b <= len(text), (pos, a, b, len(text))
        sentence = text[a:b]
        assert not sentence[0].isspace() and not sentence[-1].isspace(), repr(sentence)
        assert not any(c in LINE_BREAKS for c in sentence), repr(sentence)
        assert text[pos:a].isspace() or pos == a, repr(text[pos:a])
        pos = b
    assert not text[pos:].strip(), repr(text[pos:])


def test_splitters_keep_offsets_on_any_text() -> None:
    counts: Counter = Counter()

    @SPLITTERS
    @given(text=texts)
    def fuzz(text: str) -> None:
        counts["examples"] += 1
        words = split_words(text)
        check_words(text, words)
        sentences = split_sentences(text)
        check_sentences(text, sentences)
        for a, b in sentences:
            check_words(text[a:b], split_words(text[a:b]))
        counts["words"] += len(words)
        counts["sentences"] += len(sentences)

    fuzz()
    print(f"fuzz splitters: {counts['examples']} examples, {counts['sentences']} sentences, "
          f"{counts['words']} words")
    assert counts["sentences"] > counts["examples"] // 2


@pytest.mark.parametrize("run", [".", "!?", "-", "'", "…", ". ", "! A", "A. ", "\u0301",
                                 "\u200d", "@", "http://x"])
def test_long_runs_take_linear_work(run: str) -> None:
    """A line of one repeated piece is cut into sentences and words with work proportional to
    its length (counted, not timed: see tests/work_count.py): doubling the line doubles the
    work, where a rule that rescans the run from each of its characters quadruples it. Cuts
    stay well-formed on a long line."""
    assert_linear(split_sentences, run)
    assert_linear(split_words, run)
    text = run * (200_000 // len(run))
    check_sentences(text, split_sentences(text))
    check_words(text[:50_000], split_words(text[:50_000]))


@pytest.fixture(scope="module")
def labeler(tiny) -> SequenceLabeler:
    """A tiny random labeler whose head is scaled up, so that its tags vary from word to word
    and spans of every length occur."""
    torch.manual_seed(0)
    lab = SequenceLabeler.from_model(tiny("llama"), labels=["O", "B-PER", "I-PER"],
                                     finetune="frozen").eval()
    with torch.no_grad():
        for p in lab.head.parameters():
            p.mul_(30.0)
    return lab


def test_predict_text_slices_any_text(labeler: SequenceLabeler) -> None:
    counts: Counter = Counter()

    @MODEL
    @given(batch=st.lists(model_texts, max_size=4), pretokenized=st.booleans(),
           decoding=st.sampled_from([None, "greedy", "constrained"]))
    def fuzz(batch: list[str], pretokenized: bool, decoding: str | None) -> None:
        counts["examples"] += 1
        records = predict_text(labeler, batch, decoding, batch_size=8,
                               pretokenized=pretokenized)
        assert len(records) == len(batch)
        for text, record in zip(batch, records):
            assert record["text"] == text
            check_record(text, record, pretokenized)
            counts["texts"] += 1
            counts["sentences"] += len(record["sentences"])
            counts["spans"] += len(record["spans"])

    fuzz()
    print(f"fuzz predict_text: {counts['examples']} examples, {counts['texts']} texts, "
          f"{counts['sentences']} sentences, {counts['spans']} spans")
    assert counts["spans"] > 0 and counts["sentences"] > counts["texts"] // 2


def test_predict_text_with_a_lone_surrogate(labeler: SequenceLabeler) -> None:
    """Text from JSON (``"\\ud800"`` in a request body) may hold a lone surrogate; the
    splitters keep it in a word, so prediction must label it or refuse it in one line."""
    from seqrep.errors import SeqrepError

    batch = ["Obama \ud800 visited Paris", "\udfff"]
    try:
        records = predict_text(labeler, batch)
    except SeqrepError as err:
        assert len(str(err).splitlines()) == 1
        return
    for text, record in zip(batch, records, strict=True):
        check_record(text, record, False)


def check_record(text: str, record: dict, pretokenized: bool) -> None:
    spans = iter(record["spans"])
    pos = 0
    for sentence in record["sentences"]:
        a, b, words, tags = sentence["start"], sentence["end"], sentence["words"], sentence["tags"]
        assert pos <= a < b <= len(text)
        pos = b
        assert words and len(tags) == len(words)
        assert set(tags) <= {"O", "B-PER", "I-PER"}
        if pretokenized:
            assert words == text[a:b].split()
        else:  # the words are those of the splitter, so their offsets slice the text
            offsets = split_words(text[a:b])
            assert words == [text[a + s:a + e] for s, e in offsets]
        # the sentence's spans, in order, by the rule evaluation scores them
        for s, e, label in strict_spans(tags):
            span = next(spans)
            assert span["words"] == [s, e] and span["label"] == label
            assert a <= span["start"] < span["end"] <= b
            assert text[span["start"]:span["end"]] == span["text"]
            assert span["text"].startswith(words[s]) and span["text"].endswith(words[e - 1])
            assert 0.0 <= span["score"] <= 1.0
    assert next(spans, None) is None  # no span outside a sentence
    json.dumps(record, ensure_ascii=False)
    conll = to_conll(record)
    assert conll.count("\n") == sum(len(s["words"]) + 1 for s in record["sentences"])


def test_predict_input_lines_match_output_lines() -> None:
    """``seqrep predict`` reads one text per ``\\n`` line (``\\r\\n`` is one break, other
    separators stay inside the line): as many records as input lines, whatever they hold."""
    counts: Counter = Counter()

    @SPLITTERS
    @given(lines=st.lists(st.text(any_char.filter(lambda c: c != "\n"), max_size=20)
                          .map(lambda t: t.rstrip("\r")), max_size=6),
           crlf=st.booleans(), final=st.booleans())
    def fuzz(lines: list[str], crlf: bool, final: bool) -> None:
        counts["examples"] += 1
        text = ("\r\n" if crlf else "\n").join(lines) + ("\n" if final and lines else "")
        # a last empty line without a final break reads as the break ending the line before
        expected = lines[:-1] if lines and not lines[-1] and not final else lines
        assert _lines(text) == expected

    fuzz()
    print(f"fuzz predict input lines: {counts['examples']} examples")
