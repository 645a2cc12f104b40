"""JSON Lines: one sentence per line, as words with tags or as text with character spans.

Two record shapes, which may be mixed in one file:

- ``{"tokens": [...], "tags": [...]}``: tags in any scheme (detected over all such records of
  the file, or given), converted to IOB2;
- ``{"text": "...", "spans": [{"start": 0, "end": 5, "label": "X"}, ...]}``: character offsets
  (``end`` exclusive); words come from :func:`seqrep.data.tokenize.split_words` and spans are
  placed with :mod:`seqrep.data.charspans`. A label is the label alone: ``B-PER`` (a tag) is
  an error, as is a control character in a label or tag.

Optional ``"id"`` and ``"doc_id"`` fields are kept (``meta["id"]``, ``Sentence.doc_id``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seqrep.data.charspans import CharSpan, check_alignment, place_on_words, span_label_problem
from seqrep.data.iob2 import to_iob2
from seqrep.data.jsonparse import parse_json
from seqrep.data.options import check_flag, check_scheme
from seqrep.data.quote import brief, show
from seqrep.data.textfile import read_text, split_lines
from seqrep.data.types import Corpus, Sentence, Span
from seqrep.errors import DataError


def _offset(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _char_spans(path: Path, line: int, record: dict[str, Any]) -> list[CharSpan]:
    text, spans = record["text"], record.get("spans")
    spans = [] if spans is None else spans
    if not isinstance(spans, list):
        raise DataError(path, "\"spans\" must be a list of {start, end, label}", line)
    out = []
    for k, span in enumerate(spans):
        if not (isinstance(span, dict) and all(f in span for f in ("start", "end", "label"))):
            raise DataError(path, f"span {k} is {show(span)}; expected {{\"start\": int, "
                                  "\"end\": int, \"label\": str}", line)
        start, end, label = span["start"], span["end"], span["label"]
        for name, value in (("start", start), ("end", end)):
            if not _offset(value):
                raise DataError(path, f"span {k} field \"{name}\" is {show(value)}; expected an "
                                      "integer character offset", line)
        if not isinstance(label, str):
            raise DataError(path, f"span {k} field \"label\" is {show(label)}; expected a "
                                  "non-empty string", line)
        if not label.strip():
            raise DataError(path, f"span {k} has an empty label; expected a non-empty string",
                            line)
        problem = span_label_problem(label)
        if problem is not None:
            raise DataError(path, f"span {k} label {brief(label)} {problem}", line)
        if not 0 <= start < end <= len(text):
            raise DataError(path, f"span {k} ({label}) has offsets {start}-{end} outside the "
                                  f"text (0-{len(text)}); expected 0 <= start < end <= "
                                  f"{len(text)}", line)
        out.append(CharSpan(start, end, label, text[start:end]))
    return out


def _check_record(path: Path, line: int, record: Any) -> None:
    """Raise DataError for a record of neither shape or with a field of the wrong type."""
    has_tokens = isinstance(record, dict) and "tokens" in record
    if not (has_tokens or isinstance(record, dict) and isinstance(record.get("text"), str)):
        raise DataError(path, "expected an object with \"tokens\" and \"tags\", or with "
                              "\"text\" and \"spans\"", line)
    for name, ok, expected in (
            ("text", lambda v: isinstance(v, str), "a string"),
            ("doc_id", lambda v: v is None or isinstance(v, str), "a string or null"),
            ("id", lambda v: v is None or isinstance(v, str) or _offset(v),
             "a string or an integer")):
        if name in record and not ok(record[name]):
            raise DataError(path, f"\"{name}\" is {show(record[name])}; expected {expected}",
                            line)
    tag_fields = [k for k in ("tokens", "tags") if k in record]
    if tag_fields and "spans" in record:
        raise DataError(path, f"the record has both \"{tag_fields[0]}\" and \"spans\"; expected "
                              "one shape: \"tokens\" and \"tags\", or \"text\" and \"spans\"",
                        line)
    if not has_tokens and "tags" in record:
        raise DataError(path, "the record has \"tags\" but no \"tokens\" (and \"text\" with "
                              "both shapes); expected \"tokens\" and \"tags\", or \"text\" and "
                              "\"spans\"", line)
    if not has_tokens:
        return
    tokens, tags = record["tokens"], record.get("tags")
    if not isinstance(tokens, list) or not isinstance(tags, list):
        raise DataError(path, "\"tokens\" and \"tags\" must both be lists", line)
    if len(tokens) != len(tags):
        raise DataError(path, f"{len(tokens)} tokens but {len(tags)} tags; expected one "
                              "tag per token", line)
    for noun, items in (("token", tokens), ("tag", tags)):
        bad = next((k for k, x in enumerate(items) if not (isinstance(x, str) and x.strip())),
                   None)
        if bad is not None:
            raise DataError(path, f"{noun} {bad} is {show(items[bad])}; expected a non-empty "
                                  "string", line)


def _one_spelling(path: Path, line: int, labels: list[str],
                  seen: dict[str, tuple[str, int]]) -> None:
    """A label spelled in two cases in one file (``PER`` in tags, ``per`` in spans) is an
    error: it would train as two classes."""
    for label in labels:
        first, where = seen.setdefault(label.casefold(), (label, line))
        if first != label:
            raise DataError(path, f"label {brief(label)} is spelled {brief(first)} on line "
                                  f"{where}; expected one spelling per label (labels are "
                                  "case-sensitive)", line)


def _records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    records = []
    for line, raw in enumerate(split_lines(read_text(path)), start=1):
        if not raw.strip():
            continue
        record = parse_json(raw, path, line)
        _check_record(path, line, record)
        records.append((line, record))
    return records


def read_jsonl(path: str | Path, scheme: str | None = None, strict: bool = False,
               alignment: str = "expand") -> Corpus:
    """Read a JSON Lines file of tagged tokens or of text with character spans.

    Args:
        path: the file.
        scheme: tag scheme of ``tags`` records, ``None`` to detect it over the file.
        strict: raise on an invalid tag sequence instead of repairing it.
        alignment: how character spans off word boundaries map to words: ``"expand"``,
            ``"contract"`` or ``"strict"`` (an error; see :mod:`seqrep.data.charspans`).

    Returns:
        the sentences in file order, with ``meta["line"]``.

    Raises:
        DataError: invalid JSON, a record of neither shape, a field of the wrong type (offsets
            that are not integers, empty labels, tokens or tags that are not non-empty
            strings), tokens and tags of different lengths, offsets outside the text, or no
            word in the whole file (naming file and line).
    """
    path = Path(path)
    check_alignment(alignment)
    check_flag("strict", strict)
    check_scheme(scheme)
    records = _records(path)
    tagged = [(line, r) for line, r in records if "tokens" in r]
    iob2, repaired, _ = to_iob2([r["tags"] for _, r in tagged], scheme, strict, path,
                                lambda i, _: tagged[i][0]) if tagged else ([], 0, "IOB2")
    tags_of = {line: t for (line, _), t in zip(tagged, iob2, strict=True)}
    sentences, notes = [], []
    spelling: dict[str, tuple[str, int]] = {}  # casefolded label -> (first spelling, line)
    for line, r in records:
        meta: dict[str, Any] = {"line": line, **({"id": r["id"]} if "id" in r else {})}
        doc_id = r.get("doc_id")
        if line in tags_of:
            _one_spelling(path, line, [t[2:] for t in tags_of[line] if t != "O"], spelling)
            sentences.append(Sentence(r["tokens"], tags_of[line], doc_id=doc_id,
                                      text=r.get("text"), meta=meta))
            continue
        text = r["text"]
        char_spans = _char_spans(path, line, r)
        _one_spelling(path, line, [cs.label for cs in char_spans], spelling)
        offsets, placed, found = place_on_words(text, char_spans, alignment,
                                                f"{path.name}:{line}", "span", path, line)
        notes += found
        if found:
            meta["notes"] = found
        sentences.append(Sentence.from_spans([text[s:e] for s, e in offsets],
                                             [Span(*s) for s in placed.spans], doc_id=doc_id,
                                             text=text, offsets=offsets, meta=meta))
    if not any(len(s) for s in sentences):
        raise DataError(path, f"no sentence has words ({len(sentences)} records, all empty); "
                              "expected at least one word")
    return Corpus(sentences, name=str(path), repaired=repaired, notes=notes)
