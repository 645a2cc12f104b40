"""Prediction input files: one text per ``\\n`` line, or a ``.jsonl`` file of one JSON object
per line with ``"text"`` (raw text) or ``"words"`` (a list of words), and optionally
``"doc_id"`` (a string or null, as in a JSONL dataset): consecutive lines with the same
``doc_id`` are one document, labeled together by a labeler with document context. A
``.parquet`` file holds the same fields as columns, one row per text; its "lines" are its
rows, counted from 1. ``seqrep predict --input`` reads its file this way with or without
``--output``, and with either engine.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from seqrep.errors import DataError


def read_lines(path: Path, skip: int = 0) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each ``\\n`` line after the first ``skip``, decoded as UTF-8."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as err:
        raise DataError(path, f"cannot read ({err.strerror})") from None
    with f:
        for n, raw in enumerate(f, 1):
            if n <= skip:
                continue
            raw = raw[:-1] if raw.endswith(b"\n") else raw
            raw = raw[:-1] if raw.endswith(b"\r") else raw
            try:
                text = raw.decode("utf-8")
                yield n, text.lstrip("\ufeff") if n == 1 else text  # byte-order marks
            except UnicodeDecodeError as err:
                raise DataError(path, f"not valid UTF-8 (byte {err.start})", n) from None


def _item(path: Path, n: int, line: str, jsonl: bool) -> tuple[str, bool, str | None]:
    """``(text, pretokenized, doc_id)`` of one input line."""
    if not jsonl:
        return line, False, None
    from seqrep.data.jsonparse import parse_json

    record = parse_json(line, path, n) if line.strip() else {"text": ""}
    doc = record.get("doc_id") if isinstance(record, dict) else None
    if doc is not None and not isinstance(doc, str):
        raise DataError(path, f'"doc_id" is {type(doc).__name__} {json.dumps(doc)[:40]}; '
                              'expected a string (the document the line belongs to) or null', n)
    if isinstance(record, dict) and isinstance(record.get("text"), str):
        return record["text"], False, doc
    words = record.get("words") if isinstance(record, dict) else None
    if isinstance(words, list) and all(isinstance(w, str) and w and not any(
            c.isspace() for c in w) for w in words):
        return " ".join(words), True, doc
    raise DataError(path, 'expected an object with "text" (a string) or "words" (a list of '
                          'words without spaces)', n)


def read_records(path: Path, words: bool = False, skip: int = 0
                 ) -> Iterator[tuple[int, str, bool, str | None]]:
    """``(line number, text, pretokenized, doc_id)`` of each input line after the first
    ``skip``: a ``.jsonl`` file's records (``"text"`` or ``"words"``, and an optional
    ``"doc_id"``: consecutive lines with the same one are one document), else the line itself
    (no ``doc_id``); ``words`` makes every text pre-tokenized (whitespace-separated words)."""
    if Path(path).suffix == ".parquet":
        yield from _parquet_records(path, words, skip)
        return
    jsonl = Path(path).suffix == ".jsonl"
    for n, line in read_lines(path, skip):
        text, pre, doc = _item(path, n, line, jsonl)
        yield n, text, pre or words, doc


def _parquet_file(path: Path) -> Any:
    """A parquet file opened with a text or words column, or one line saying why not."""
    from seqrep.extras import require

    require("datasets", "a .parquet input", ("pyarrow",))
    import pyarrow.parquet as pq

    try:
        f = pq.ParquetFile(path)
        names = set(f.schema_arrow.names)
    except (OSError, ValueError) as err:  # pyarrow's ArrowInvalid is a ValueError
        raise DataError(path, f"not a readable parquet file ({str(err)[:120]})") from None
    if not names & {"text", "words"}:
        raise DataError(path, f"no \"text\" or \"words\" column (columns: "
                              f"{', '.join(sorted(names))[:200]}); expected one of them")
    return f


def _parquet_rows(path: Path) -> Iterator[dict[str, Any]]:
    """The rows of a parquet file as dicts, read a row group at a time."""
    f = _parquet_file(path)
    names = set(f.schema_arrow.names)
    columns = [c for c in ("text", "words", "doc_id") if c in names]
    for batch in f.iter_batches(batch_size=1024, columns=columns):
        yield from batch.to_pylist()


def _parquet_records(path: Path, words: bool, skip: int
                     ) -> Iterator[tuple[int, str, bool, str | None]]:
    """:func:`read_records` of a parquet file: each row checked as a JSONL line is."""
    for n, row in enumerate(_parquet_rows(path), 1):
        if n <= skip:
            continue
        row = {k: v for k, v in row.items() if v is not None or k == "doc_id"}
        text, pre, doc = _item(path, n, json.dumps(row, ensure_ascii=False), True)
        yield n, text, pre or words, doc


def count_records(path: Path) -> int:
    """How many texts a prediction input holds: its lines, or a parquet file's rows."""
    if Path(path).suffix == ".parquet":
        return _parquet_file(path).metadata.num_rows  # from the footer: no row decoded
    return sum(1 for _ in read_lines(path))


def read_items(path: Path, words: bool = False, skip: int = 0
               ) -> Iterator[tuple[int, str, bool]]:
    """:func:`read_records` without the document ids."""
    for n, text, pre, _ in read_records(path, words, skip):
        yield n, text, pre


def chunks(lines: Iterator[tuple[Any, ...]], size: int, documents: bool = False
           ) -> Iterator[list[tuple[Any, ...]]]:
    """Lists of ``size`` records of :func:`read_records`; with ``documents``, a list goes on
    past ``size`` until its last document (a run of lines with one ``doc_id``) is whole, so a
    document is labeled in one call whatever the chunk size."""
    buf: list[tuple[Any, ...]] = []
    for item in lines:
        if len(buf) >= size and not (documents and item[3] is not None
                                     and item[3] == buf[-1][3]):
            yield buf
            buf = []
        buf.append(item)
    if buf:
        yield buf


def document_start(path: Path, done: int, words: bool = False) -> int:
    """The lines before the document that line ``done + 1`` belongs to: ``done`` unless that
    line continues the document of line ``done`` (resuming there would label the rest of a
    document without its beginning; after the last line, nothing is left to label)."""
    start, last = done, None
    for n, _, _, doc in read_records(path, words):
        if doc is None or doc != last:
            start = n - 1
        if n > done:
            return min(start, done)
        last = doc
    return done
