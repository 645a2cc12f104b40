"""The rows of Hugging Face data as sentences: :func:`corpus_of` reads a ``datasets.Dataset``
or a pyarrow Table like a labeled file.

The columns are checked by their arrow types before a value is read (words: a list of strings
per row; tags: a list of ClassLabel ids or of strings; documents: strings or integers), and
text that is not UTF-8 is one line naming the row and the column. A Dataset is read as stored,
whatever output format it was given (``with_format("torch")`` ...). Of a ClassLabel's names
only those some row uses are read, and each of them must be a tag: the same rows written as a
CoNLL file read the same.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from seqrep.data.hffiles import datasets_module
from seqrep.data.iob2 import to_iob2
from seqrep.data.options import check_flag, check_scheme
from seqrep.data.quote import show
from seqrep.data.types import Corpus, Sentence
from seqrep.errors import DataError, first_line

TOKEN_COLUMNS = ("tokens", "words")
TAG_COLUMNS = ("ner_tags", "tags", "slot_labels", "labels", "pos_tags", "upos", "chunk_tags")
DOC_COLUMNS = ("doc_id", "document_id")


def _column(columns: list[str], named: str | None, wanted: tuple[str, ...], what: str,
            option: str, source: str) -> str | None:
    """The column named by ``option``, else the first of ``wanted`` there."""
    there = ", ".join(columns)
    if named is not None:
        if named not in columns:
            raise DataError(source, f"no column {named!r} ({option}); the columns are {there}")
        return named
    found = next((c for c in wanted if c in columns), None)
    if found is None and what != "document":
        raise DataError(source, f"no {what} column: expected one named {' or '.join(wanted)} "
                                f"(or name it with {option}); the columns are {there}")
    return found


def _kind(kind: Any) -> str:
    """``string``, ``integer``, ``null`` or ``list`` (of anything) for an arrow type (a
    dictionary type by its values), else ``other``."""
    import pyarrow.types as t

    if t.is_dictionary(kind):  # a categorical column: read as its values
        kind = kind.value_type
    if t.is_string(kind) or t.is_large_string(kind) or t.is_string_view(kind):
        return "string"
    if t.is_integer(kind):
        return "integer"
    if t.is_null(kind):
        return "null"
    if t.is_list(kind) or t.is_large_list(kind) or t.is_fixed_size_list(kind) or \
            t.is_list_view(kind) or t.is_large_list_view(kind):
        return "list"
    return "other"


def _items(kind: Any) -> str:
    """The kind of a list column's items (``null`` for a list of nothing)."""
    return _kind(kind.value_type) if _kind(kind) == "list" else "other"


def _names(feature: Any, kind: Any, column: str, source: str) -> list[str] | None:
    """A tags column's ClassLabel names, or None for a column of strings; any other type
    (integers without names included) is one line."""
    module = sys.modules.get("datasets")
    inner = getattr(feature, "feature", None)
    items = _items(kind)
    if items in ("integer", "null") and isinstance(inner, module.ClassLabel):
        return list(inner.names)
    if items in ("string", "null") and not isinstance(inner, module.ClassLabel):
        return None
    raise DataError(source, f"column {column} holds {kind}; expected a list of ClassLabel ids "
                            "or of tag strings per row")


def _check_names(names: list[str], used: list[int], column: str, source: str,
                 scheme: str | None) -> None:
    """The ClassLabel names rows use are tags of one scheme (checked as one sequence)."""
    for i in used:
        if not (isinstance(names[i], str) and names[i]):
            raise DataError(source, f"column {column}: ClassLabel name {show(names[i])} (id "
                                    f"{i}) is used but is no tag; expected a tag such as O or "
                                    "B-PER")
    to_iob2([[names[i] for i in used]], scheme, False, f"{source}: column {column}: the "
            "ClassLabel names rows use (as one sequence)", lambda i, j: None)


def _values(table: Any, column: str, source: str) -> list[Any]:
    """A column's values; bytes that are not UTF-8 are one line naming the first such row."""
    col = table.column(column)
    try:
        return col.to_pylist()
    except UnicodeDecodeError:
        row = next((i for i in range(len(col)) if not _decodes(col[i])), None)
        where = f"{source} row {row + 1}" if row is not None else source
        raise DataError(where, f"column {column} holds bytes that are not UTF-8; expected "
                               "UTF-8 text") from None


def _decodes(value: Any) -> bool:
    try:
        value.as_py()
        return True
    except UnicodeDecodeError:
        return False


def _at_row(err: DataError, source: str) -> DataError:
    """A to_iob2 error whose 'line' is a row, said as a row."""
    if err.line is None:
        return err
    message = str(err).split(": ", 1)[1] if ": " in str(err) else str(err)
    return DataError(f"{source} row {err.line}", message)


def _row_tags(tokens: Any, tags: Any, names: list[str] | None, row: str) -> list[str]:
    """One row's tags as strings, its words checked (non-empty strings, one tag each)."""
    if not isinstance(tokens, list) or not isinstance(tags, list):
        raise DataError(row, f"words are {show(tokens)} and tags {show(tags)}; expected a list "
                             "of each")
    if len(tokens) != len(tags):
        raise DataError(row, f"{len(tokens)} words but {len(tags)} tags; expected one tag per "
                             "word")
    bad = next((k for k, w in enumerate(tokens) if not (isinstance(w, str) and w.strip())), None)
    if bad is not None:
        raise DataError(row, f"word {bad} is {show(tokens[bad])}; expected a non-empty string")
    if names is None:
        bad = next((k for k, t in enumerate(tags) if not (isinstance(t, str) and t.strip())),
                   None)
        if bad is not None:
            raise DataError(row, f"tag {bad} is {show(tags[bad])}; expected a non-empty string")
        return tags
    bad = next((k for k, t in enumerate(tags) if not (isinstance(t, int)
                                                      and 0 <= t < len(names))), None)
    if bad is not None:
        raise DataError(row, f"tag {bad} is {show(tags[bad])}; expected a ClassLabel id from 0 "
                             f"to {len(names) - 1}")
    return [names[t] for t in tags]


def _arrow(table: Any, source: str) -> tuple[Any, Any]:
    """``(pyarrow Table, Features)`` of a Dataset (its rows as stored, whatever its output
    format; selected rows only) or of a Table (the features its schema's metadata names)."""
    import datasets

    if isinstance(table, datasets.Dataset):
        return table.with_format("arrow")[:], table.features
    try:
        return table, datasets.Features.from_arrow_schema(table.schema)
    except Exception as err:  # noqa: BLE001 - whatever datasets makes of tampered metadata
        raise DataError(source, f"the schema's Hugging Face metadata is not readable "
                                f"({type(err).__name__}: {first_line(err)}); expected the "
                                "features datasets writes") from None


def corpus_of(table: Any, source: str, scheme: str | None = None, strict: bool = False,
              tokens_column: str | None = None, tags_column: str | None = None,
              doc_column: str | None = None) -> Corpus:
    """A ``datasets.Dataset`` or pyarrow Table as a corpus, read like a file.

    Args:
        table: the rows.
        source: what to call it in messages (a path, ``hf:NAME/split`` ...).
        scheme, strict: as for :func:`seqrep.data.conll.read_conll`.
        tokens_column, tags_column, doc_column: the columns; detected when ``None``
            (:data:`TOKEN_COLUMNS`, :data:`TAG_COLUMNS`, :data:`DOC_COLUMNS`; no document
            column is fine).

    Raises:
        DataError: a missing column (naming the columns there) or one of another type, used
            ClassLabel names that are not tags of one scheme, or a bad row (naming it, counting
            from 1).
    """
    datasets_module()
    check_scheme(scheme)
    check_flag("strict", strict)
    table, features = _arrow(table, source)
    columns = list(table.column_names)
    words_at = _column(columns, tokens_column, TOKEN_COLUMNS, "words", "--tokens-column", source)
    tags_at = _column(columns, tags_column, TAG_COLUMNS, "tags", "--tags-column", source)
    doc_at = _column(columns, doc_column, DOC_COLUMNS, "document", "--doc-column", source)
    kinds = {c: table.schema.field(c).type for c in (words_at, tags_at, doc_at) if c}
    if _items(kinds[words_at]) not in ("string", "null"):
        raise DataError(source, f"column {words_at} holds {kinds[words_at]}; expected a list of "
                                "strings (the words) per row")
    if doc_at and _kind(kinds[doc_at]) not in ("string", "integer", "null"):
        raise DataError(source, f"column {doc_at} holds {kinds[doc_at]}; expected a string or "
                                "an integer (the document) per row")
    names = _names(features[tags_at], kinds[tags_at], tags_at, source)
    words, raw = _values(table, words_at, source), _values(table, tags_at, source)
    sequences = [_row_tags(w, t, names, f"{source} row {i + 1}")
                 for i, (w, t) in enumerate(zip(words, raw, strict=True))]
    if names is not None:
        _check_names(names, sorted({t for row in raw for t in row}), tags_at, source, scheme)
    docs = _values(table, doc_at, source) if doc_at else [None] * len(words)
    line_of: Callable[[int, int], int] = lambda i, _: i + 1  # noqa: E731 - a row, said as one
    try:
        tags, repaired, _ = to_iob2(sequences, scheme, strict, source, line_of)
    except DataError as err:
        raise _at_row(err, source) from None
    sentences = [Sentence(w, t, doc_id=None if d is None else str(d), meta={"row": i})
                 for i, (w, t, d) in enumerate(zip(words, tags, docs, strict=True))]
    if not any(len(s) for s in sentences):
        raise DataError(source, f"no row has words ({len(sentences)} rows); expected at least "
                                "one word")
    return Corpus(sentences, name=source, repaired=repaired)
