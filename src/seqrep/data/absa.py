"""Aspect-based sentiment analysis data, in two formats.

- SemEval-2014 Task 4 XML: ``<sentence id>`` elements with a ``<text>`` and
  ``<aspectTerm term from to polarity>`` character offsets. Words come from
  :func:`seqrep.data.tokenize.split_words`; terms are placed on them with
  :mod:`seqrep.data.charspans`.
- The tokenised format ``sentence####word=TAG word=TAG ...`` with tags ``O``, ``T-POS``,
  ``T-NEG``, ``T-NEU`` (IO style: adjacent tags of one polarity form one term).

Labels are ``ASP`` (aspect only) or, with ``polarity=True``, ``POS``, ``NEG``, ``NEU`` and
``CONFLICT``. Problems are reported in ``Corpus.notes`` (and in the sentence's
``meta["notes"]``) as ``"<kind>: <file> sentence <id>: <detail>"``, kinds ``cut mid-word``,
``no word``, ``overlapping`` and ``duplicate``; a term outside any ``<sentence>`` is noted as
``"outside a sentence: <file> line <n>: ..."``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from xml.parsers import expat

from seqrep.data.charspans import CharSpan, check_alignment, place_on_words
from seqrep.data.quote import brief
from seqrep.data.tags import tags_to_spans
from seqrep.data.textfile import read_text, split_lines
from seqrep.data.types import Corpus, Sentence, Span
from seqrep.errors import DataError

POLARITIES = {"positive": "POS", "negative": "NEG", "neutral": "NEU", "conflict": "CONFLICT"}
TOKENIZED_TAGS = {"O": None, "T-POS": "POS", "T-NEG": "NEG", "T-NEU": "NEU"}
ASPECT = "ASP"


@dataclass
class _XmlSentence:
    sid: str
    line: int
    text: str | None = None
    terms: list[tuple[CharSpan, int]] = field(default_factory=list)  # (term, line)


def _parse_xml(path: Path, polarity: bool, outside: list[str]) -> list[_XmlSentence]:
    """Collect sentences and their terms, with line numbers, using expat; a note for each
    term outside a sentence goes to ``outside``."""
    sentences: list[_XmlSentence] = []
    text_parts: list[str] | None = None
    inside = 0  # open <sentence> elements: a term outside one belongs to no text
    parser = expat.ParserCreate()

    def fail(message: str) -> DataError:
        return DataError(path, message, parser.CurrentLineNumber)

    def start(name: str, attrs: dict[str, str]) -> None:
        nonlocal text_parts, inside
        if name == "sentence":
            inside += 1
            sentences.append(_XmlSentence(attrs.get("id", str(len(sentences) + 1)),
                                          parser.CurrentLineNumber))
        elif name == "text" and inside:
            text_parts = []
        elif name == "aspectTerm" and inside:
            sentences[-1].terms.append((_term(attrs, polarity, fail), parser.CurrentLineNumber))
        elif name == "aspectTerm":
            outside.append(f"outside a sentence: {path.name} line {parser.CurrentLineNumber}: "
                           f"aspect term {brief(attrs.get('term', ''))} is in no <sentence>; "
                           "not read")

    def end(name: str) -> None:
        nonlocal text_parts, inside
        if name == "sentence":
            inside -= 1
        if name == "text" and text_parts is not None:
            sentences[-1].text = "".join(text_parts)
            text_parts = None

    def chars(data: str) -> None:
        if text_parts is not None:
            text_parts.append(data)

    parser.StartElementHandler, parser.EndElementHandler = start, end
    parser.CharacterDataHandler = chars
    try:
        parser.Parse(read_text(path), True)
    except expat.ExpatError as err:
        raise DataError(path, f"malformed XML ({expat.errors.messages[err.code]}); expected "
                              "SemEval-2014 <sentences> XML", err.lineno) from None
    return sentences


def _term(attrs: dict[str, str], polarity: bool, fail: Callable[[str], DataError]) -> CharSpan:
    term = attrs.get("term", "")
    try:
        start, end = int(attrs["from"]), int(attrs["to"])
    except (KeyError, ValueError):
        raise fail(f"aspect term {brief(term)} needs integer 'from' and 'to' attributes") from None
    label = ASPECT
    if polarity:
        value = attrs.get("polarity")
        if value not in POLARITIES:
            raise fail(f"aspect term {brief(term)} has polarity {brief(value)}; expected one of "
                       f"{', '.join(POLARITIES)} (a file without polarities reads with "
                       "polarity=False)")
        label = POLARITIES[value]
    return CharSpan(start, end, label, term)


def read_semeval_xml(path: str | Path, polarity: bool = False,
                     alignment: str = "expand") -> Corpus:
    """Read SemEval-2014 ABSA XML (aspect terms with character offsets).

    Args:
        path: the XML file.
        polarity: label terms by polarity (``POS NEG NEU CONFLICT``) instead of ``ASP``.
        alignment: how terms off word boundaries map to words: ``"expand"`` (to whole words),
            ``"contract"`` or ``"strict"`` (an error); see :mod:`seqrep.data.charspans`.

    Returns:
        the sentences with ``text``, ``offsets`` and ``meta["id"]``, ``meta["line"]``.

    Raises:
        DataError: malformed XML, a term outside its text, a missing polarity under
            ``polarity=True``, or under ``"strict"`` a term off word boundaries.
    """
    path = Path(path)
    check_alignment(alignment)
    sentences, notes = [], []
    for xs in _parse_xml(path, polarity, notes):
        if xs.text is None:
            raise DataError(path, f"sentence {xs.sid} has no <text>", xs.line)
        term_lines: dict[CharSpan, int] = {}  # a repeated term is reported at its first line
        for cs, line in xs.terms:
            if not 0 <= cs.start < cs.end <= len(xs.text):
                raise DataError(path, f"aspect term {brief(cs.ref)} has offsets "
                                      f"{cs.start}-{cs.end} outside its text "
                                      f"(0-{len(xs.text)})", line)
            term_lines.setdefault(cs, line)
        offsets, placed, found = place_on_words(
            xs.text, [cs for cs, _ in xs.terms], alignment, f"{path.name} sentence {xs.sid}",
            "aspect term", path, term_lines.get)
        notes += found
        words = [xs.text[s:e] for s, e in offsets]
        meta = {"id": xs.sid, "line": xs.line, **({"notes": found} if found else {})}
        sentences.append(Sentence.from_spans(words, [Span(*s) for s in placed.spans],
                                             text=xs.text, offsets=offsets, meta=meta))
    if not sentences:
        raise DataError(path, "no <sentence> elements found; expected SemEval-2014 XML")
    return Corpus(sentences, name=str(path), notes=notes)


def _offsets(text: str, words: list[str]) -> list[tuple[int, int]] | None:
    """Find the words in order in the text, or ``None`` if one is not there."""
    offsets, pos = [], 0
    for word in words:
        start = text.find(word, pos)
        if start < 0:
            return None
        pos = start + len(word)
        offsets.append((start, pos))
    return offsets


def read_absa_tokenized(path: str | Path, polarity: bool = False) -> Corpus:
    """Read the tokenised ABSA format ``sentence####word=TAG word=TAG ...``.

    Each item splits on its last ``=`` (words may contain ``=``). Tags are ``O``, ``T-POS``,
    ``T-NEG``, ``T-NEU``; adjacent tags of one polarity form one term (IO style), and adjacent
    terms of different polarity stay apart even when labeled ``ASP``.

    Args:
        path: the file.
        polarity: label terms ``POS``/``NEG``/``NEU`` instead of ``ASP``.

    Returns:
        the sentences; ``text`` is the part before ``####`` and ``offsets`` are set when every
        word is found in it in order.

    Raises:
        DataError: a line without ``####``, an item without ``=``, an unknown tag.
    """
    path = Path(path)
    sentences = []
    for lineno, line in enumerate(split_lines(read_text(path)), start=1):
        if not line.strip():
            continue
        text, sep, tagged = line.rstrip("\r").partition("####")
        if not sep:
            raise DataError(path, "expected 'sentence####word=TAG word=TAG ...'", lineno)
        words, tags = [], []
        for item in tagged.split():
            word, eq, tag = item.rpartition("=")
            if not eq or not word:
                raise DataError(path, f"item {brief(item)} is not word=TAG", lineno)
            if tag not in TOKENIZED_TAGS:
                raise DataError(path, f"unknown tag {brief(tag)} in {brief(item)}; expected one of "
                                      f"{', '.join(TOKENIZED_TAGS)}", lineno)
            words.append(word)
            pol = TOKENIZED_TAGS[tag]
            tags.append("O" if pol is None else f"I-{pol}")
        if not words:
            raise DataError(path, "no words after '####'", lineno)
        spans = [Span(s, e, lab if polarity else ASPECT)
                 for s, e, lab in tags_to_spans(tags, "IO")[0]]
        sentences.append(Sentence.from_spans(words, spans, text=text, offsets=_offsets(text, words),
                                             meta={"line": lineno}))
    return Corpus(sentences, name=str(path))
