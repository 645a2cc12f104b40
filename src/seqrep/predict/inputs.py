"""Prediction input files: one text per ``\\n`` line, or a ``.jsonl`` file of one JSON object
per line with ``"text"`` (raw text) or ``"words"`` (a list of words), and optionally
``"doc_id"`` (a string or null, as in a JSONL dataset): consecutive lines with the same
``doc_id`` are one document, labeled together by a labeler with document context. A
``.parquet`` file holds the same fields as columns, one row per text; its "lines" are its
rows, counted from 1. Its columns are checked by type and all its row groups are read once
before the first row is given, so a column of another type, bytes that are not UTF-8 or a
corrupt page is one line naming the file and the column or row group before anything is
labeled. Suffixes are read in any case (``texts.PARQUET``). ``seqrep predict --input`` reads
its file this way with or without ``--output``, and with either engine.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from seqrep.errors import DataError, first_line

_COLUMNS = ("text", "words", "doc_id")
_EXPECTED = {"text": "a string per row (the text)", "words": "a list of strings per row "
             "(the words)", "doc_id": "a string per row (the document) or null"}
_CHECKED: set[tuple[Any, ...]] = set()  # parquet files whose row groups read whole


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
    if is_parquet(path):
        yield from _parquet_records(path, words, skip)
        return
    jsonl = Path(path).suffix.lower() == ".jsonl"
    for n, line in read_lines(path, skip):
        text, pre, doc = _item(path, n, line, jsonl)
        yield n, text, pre or words, doc


def is_parquet(path: Path) -> bool:
    """Whether a prediction input is a parquet file (its suffix, in any case)."""
    return Path(path).suffix.lower() == ".parquet"


def _string_kind(kind: Any, items: bool = False) -> bool:
    """An arrow type of strings (or of lists of strings, with ``items``), or nulls."""
    import pyarrow.types as t

    if items:
        if not (t.is_list(kind) or t.is_large_list(kind) or t.is_fixed_size_list(kind)
                or t.is_list_view(kind) or t.is_large_list_view(kind)):
            return t.is_null(kind)
        kind = kind.value_type
    if t.is_dictionary(kind):  # a categorical column: read as its values
        kind = kind.value_type
    return t.is_string(kind) or t.is_large_string(kind) or t.is_string_view(kind) or \
        t.is_null(kind)


def _parquet_file(path: Path) -> Any:
    """A parquet file opened with a text or words column, its columns checked by type, or one
    line saying why not (a FIFO or a device is refused without being opened blocking)."""
    from seqrep.core.extras import require

    require("datasets", "a .parquet input", ("pyarrow",))
    import pyarrow as pa
    import pyarrow.parquet as pq

    from seqrep.files.reader import map_file

    data = pa.py_buffer(map_file(Path(path), DataError, what="a parquet file"))
    try:
        f = pq.ParquetFile(pa.BufferReader(data))
        schema = f.schema_arrow
    except (OSError, ValueError) as err:  # pyarrow's ArrowInvalid is a ValueError
        raise DataError(path, f"not a readable parquet file ({str(err)[:120]})") from None
    if not set(schema.names) & {"text", "words"}:
        raise DataError(path, f"no \"text\" or \"words\" column (columns: "
                              f"{', '.join(sorted(schema.names))[:200]}); expected one of them")
    for name in _COLUMNS:
        if name in schema.names and not _string_kind(schema.field(name).type, name == "words"):
            raise DataError(path, f"column \"{name}\" holds {schema.field(name).type}; "
                                  f"expected {_EXPECTED[name]}")
    return f


def _checked_groups(path: Path, f: Any) -> None:
    """Read every row group once (bounded memory: one at a time) and check its strings are
    UTF-8, so a corrupt page is refused before the first row is given (and, by
    :func:`count_records`, before a model loads); once per file and version in a process."""
    import os

    import pyarrow as pa

    st = os.stat(path)
    key = (str(Path(path).resolve()), st.st_ino, st.st_size, st.st_mtime_ns)
    if key in _CHECKED:
        return
    columns = [c for c in _COLUMNS if c in f.schema_arrow.names]
    groups = f.num_row_groups
    for g in range(groups):
        try:
            table = f.read_row_group(g, columns=columns)
        except (OSError, ValueError, pa.ArrowException) as err:
            raise DataError(path, f"row group {g + 1} of {groups} cannot be read "
                                  f"({first_line(err)[:160]}); expected a readable parquet "
                                  "file") from None
        for name in columns:
            try:
                table.column(name).validate(full=True)
            except (ValueError, pa.ArrowException) as err:
                why = "bytes that are not UTF-8" if "utf" in str(err).lower() \
                    else f"invalid values ({first_line(err)[:120]})"
                raise DataError(path, f"column \"{name}\" in row group {g + 1} holds {why}; "
                                      "expected UTF-8 text") from None
    _CHECKED.add(key)


def _parquet_rows(path: Path) -> Iterator[dict[str, Any]]:
    """The rows of a parquet file as dicts, read a row group at a time after every row group
    was checked (:func:`_checked_groups`)."""
    import pyarrow as pa

    f = _parquet_file(path)
    columns = [c for c in _COLUMNS if c in f.schema_arrow.names]
    _checked_groups(path, f)
    try:
        for batch in f.iter_batches(batch_size=1024, columns=columns):
            yield from batch.to_pylist()
    except (OSError, ValueError, pa.ArrowException) as err:  # changed since it was checked
        raise DataError(path, f"not a readable parquet file ({first_line(err)[:160]})") from None


def _row_item(path: Path, n: int, row: dict[str, Any]) -> tuple[str, bool, str | None]:
    """``(text, pretokenized, doc_id)`` of one parquet row (its columns checked by type)."""
    text, words = row.get("text"), row.get("words")
    if isinstance(text, str):
        return text, False, row.get("doc_id")
    if isinstance(words, list) and all(isinstance(w, str) and w and not any(
            c.isspace() for c in w) for w in words):
        return " ".join(words), True, row.get("doc_id")
    raise DataError(path, 'expected "text" (a string) or "words" (a list of words without '
                          'spaces)', n)


def _parquet_records(path: Path, words: bool, skip: int
                     ) -> Iterator[tuple[int, str, bool, str | None]]:
    """:func:`read_records` of a parquet file: each row checked as a JSONL line is."""
    for n, row in enumerate(_parquet_rows(path), 1):
        if n <= skip:
            continue
        text, pre, doc = _row_item(path, n, row)
        yield n, text, pre or words, doc


def _tag_like(column: str) -> bool:
    """A CoNLL tag column's value: ``O``, or a prefix and a label (``B-NP``, ``I-PER``)."""
    return column == "O" or (len(column) > 2 and column[0] in "BIESLU" and column[1] == "-")


def looks_like_conll(path: Path, lines: int = 200) -> bool:
    """Whether a plain prediction input is a CoNLL column file rather than texts: in its first
    ``lines`` lines, three or more non-blank lines, each of two or more space- or
    tab-separated columns as many as the others, the last a tag (``O``, ``B-NP``) on nine in
    ten of them and ``O`` on one at least, and a blank line between sentences (or a
    ``-DOCSTART-`` line). Texts whose lines all end in a tag do not happen; such a file
    labeled line by line labels its columns (``NNP``, ``B-NP``) as words."""
    if is_parquet(path) or Path(path).suffix.lower() == ".jsonl":
        return False
    rows: list[list[str]] = []
    blank = False
    try:
        for n, line in read_lines(path):
            if n > lines:
                break
            if not line.strip():
                blank = blank or bool(rows)
                continue
            rows.append(line.split())
    except DataError:
        return False  # not UTF-8 or unreadable: reading it says so
    if len(rows) < 3 or len({len(r) for r in rows}) != 1 or len(rows[0]) < 2:
        return False
    tags = [r[-1] for r in rows]
    docstart = rows[0][0] == "-DOCSTART-"
    return (blank or docstart) and "O" in tags and \
        sum(map(_tag_like, tags)) >= 0.9 * len(tags)


def count_records(path: Path) -> int:
    """How many texts a prediction input holds: its lines, or a parquet file's rows."""
    if is_parquet(path):  # every row group read and checked, the count from the footer
        f = _parquet_file(path)
        _checked_groups(path, f)
        return f.metadata.num_rows
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
