"""Labeled data kept with Hugging Face ``datasets``: a ``Dataset`` or ``DatasetDict`` in memory,
``hf:ORG/NAME[:CONFIG]`` (through ``datasets.load_dataset``), a folder written by
``save_to_disk``, and parquet or arrow files (one file is one split; a folder of
``<split>*.parquet`` files, as the Hub lays them out under ``data/``, holds the splits).

Most labeled data people have is in this shape (a ``tokens`` column and a ``ClassLabel``
``ner_tags`` column), so it is read here rather than exported to files first. The words and
tags columns are detected or named; a ClassLabel's names are the tags; the tags then go through
the same scheme detection, IOB2 conversion and checks as a file's
(:func:`seqrep.data.iob2.to_iob2`), so a dataset and the same data written as CoNLL give the
same sentences. An error names the dataset, the split and the row (counting from 1).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from seqrep.data.iob2 import to_iob2
from seqrep.data.options import check_flag, check_scheme
from seqrep.data.quote import show
from seqrep.data.types import Corpus, Sentence
from seqrep.errors import ConfigError, DataError, first_line

PREFIX = "hf:"
TOKEN_COLUMNS = ("tokens", "words")
TAG_COLUMNS = ("ner_tags", "tags", "slot_labels", "labels", "pos_tags", "upos", "chunk_tags")
DOC_COLUMNS = ("doc_id", "document_id")
SPLIT_NAMES = {"train": ("train",), "validation": ("validation", "dev", "valid", "val"),
               "test": ("test",)}
SUFFIXES = (".parquet", ".arrow")
OPTIONS = ("tokens_column", "tags_column", "doc_column", "scheme", "strict")
_SPLIT_FILE = re.compile(r"(train|validation|valid|dev|val|test)(?=$|[-_.])")
_DICT_JSON_BYTES = 1 << 20


def _datasets() -> Any:
    """The ``datasets`` module, or one line naming the extra that installs it."""
    from seqrep.extras import require

    require("datasets", "reading Hugging Face datasets")
    import datasets

    return datasets


def is_dataset(value: Any) -> bool:
    """True for a ``datasets.Dataset`` or ``DatasetDict`` (without importing ``datasets``:
    an object of it exists only if it was imported)."""
    module = sys.modules.get("datasets")
    kinds = tuple(k for k in (getattr(module, name, None) for name in ("Dataset", "DatasetDict"))
                  if isinstance(k, type))
    return bool(kinds) and isinstance(value, kinds)


def is_hf_name(value: Any) -> bool:
    """True for an ``hf:ORG/NAME[:CONFIG]`` dataset name."""
    return isinstance(value, str) and value.startswith(PREFIX)


def is_saved_dataset(path: Path) -> bool:
    """A folder ``Dataset.save_to_disk`` wrote (one split)."""
    return path.is_dir() and (path / "state.json").is_file() and \
        (path / "dataset_info.json").is_file()


def split_files(path: Path) -> dict[str, list[Path]]:
    """The parquet or arrow files of a folder (or of its ``data/``) by the split their names
    start with (``train-00000-of-00001.parquet`` -> ``train``)."""
    found: dict[str, list[Path]] = {}
    for folder in (path, path / "data"):
        if not folder.is_dir():
            continue
        for file in sorted(folder.iterdir()):
            match = _SPLIT_FILE.match(file.name)
            if file.is_file() and file.suffix.lower() in SUFFIXES and match:
                found.setdefault(match.group(1), []).append(file)
    return found


def holds_splits(path: Path) -> bool:
    """A folder of splits read here: ``DatasetDict.save_to_disk`` output, or split files."""
    return path.is_dir() and ((path / "dataset_dict.json").is_file() or bool(split_files(path)))


def _pick(splits: list[str], split: str, source: str) -> str:
    """The name a dataset gives ``split`` (``dev`` for validation ...)."""
    chosen = next((s for s in SPLIT_NAMES[split] if s in splits), None)
    if chosen is None:
        names = " or ".join(SPLIT_NAMES[split])
        raise DataError(source, f"no {split} split (expected one named {names}); the splits "
                                f"are {', '.join(splits) or 'none'}")
    return chosen


def _options(options: Mapping[str, Any]) -> dict[str, Any]:
    unknown = [k for k in options if k not in OPTIONS]
    if unknown:
        raise ConfigError(f"option {unknown[0]!r} does not apply to Hugging Face datasets; "
                          f"expected one of {', '.join(OPTIONS)}")
    return dict(options)


def load_hf(source: Any, split: str = "train", **options: Any) -> Corpus:
    """One split of a dataset object, an ``hf:`` name or a folder of splits.

    Args:
        source: a ``Dataset`` (one split: only ``train`` applies), a ``DatasetDict``,
            ``hf:ORG/NAME[:CONFIG]``, or a folder (:func:`holds_splits`).
        split: ``train``, ``validation`` or ``test`` (already normalised).
        **options: ``tokens_column``, ``tags_column``, ``doc_column``, ``scheme``, ``strict``.

    Raises:
        ConfigError: an unknown option, or ``datasets`` is not installed.
        DataError: a missing split or column, or bad rows (see :func:`corpus_of`).
    """
    options = _options(options)
    if is_hf_name(source):
        return _load_name(source, split, options)
    if is_dataset(source):
        module = sys.modules["datasets"]
        if isinstance(source, module.Dataset):
            if split != "train":
                raise ConfigError(f"split={split!r} does not apply to a Dataset (one split); "
                                  "pass a DatasetDict to choose a split")
            return corpus_of(source, "dataset", **options)
        chosen = _pick(list(source), split, "DatasetDict")
        return corpus_of(source[chosen], f"DatasetDict[{chosen}]", **options)
    path = Path(source)
    if (path / "dataset_dict.json").is_file():
        return _load_saved_dict(path, split, options)
    files = split_files(path)
    chosen = _pick(list(files), split, str(path))
    tables = [_read_table(f) for f in files[chosen]]
    corpus = corpus_of(_concat(tables, files[chosen][0]), f"{path}/{chosen}", **options)
    corpus.name = f"{path.name}/{split}"
    return corpus


def _load_name(name: str, split: str, options: dict[str, Any]) -> Corpus:
    repo, _, config = name[len(PREFIX):].partition(":")
    if not re.fullmatch(r"[\w.-]+(/[\w.-]+)?", repo) or ":" in config:
        raise ConfigError(f"dataset {name!r}: expected hf:ORG/NAME or hf:ORG/NAME:CONFIG")
    datasets = _datasets()
    try:
        loaded = datasets.load_dataset(repo, config or None)
    except Exception as err:  # offline, a missing or private repository, a bad config
        raise DataError(name, f"could not load it with datasets.load_dataset: "
                              f"{type(err).__name__}: {first_line(err)}; expected a dataset "
                              "on the Hugging Face Hub (or in the datasets cache when "
                              "offline)") from None
    if isinstance(loaded, datasets.Dataset):
        loaded = datasets.DatasetDict({"train": loaded})
    chosen = _pick(list(loaded), split, name)
    corpus = corpus_of(loaded[chosen], f"{name}/{chosen}", **options)
    corpus.name = f"{name}/{split}"
    return corpus


def _load_saved_dict(path: Path, split: str, options: dict[str, Any]) -> Corpus:
    from seqrep.fileio import read_json

    record = read_json(path / "dataset_dict.json", "a DatasetDict record", DataError,
                       _DICT_JSON_BYTES)
    splits = record.get("splits") if isinstance(record, dict) else None
    if not (isinstance(splits, list) and all(isinstance(s, str) and re.fullmatch(r"[\w.-]+", s)
                                             for s in splits)):
        raise DataError(path / "dataset_dict.json", f"\"splits\" is {show(splits)}; expected "
                                                    "a list of split names")
    chosen = _pick(splits, split, str(path))
    corpus = read_saved(path / chosen, **options)
    corpus.name = f"{path.name}/{split}"
    return corpus


def _read_table(path: Path) -> Any:
    """A parquet or arrow file as a pyarrow Table (an arrow file in the IPC file format or, as
    ``save_to_disk`` writes it, the stream format)."""
    _datasets()
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        if path.suffix.lower() == ".parquet":
            return pq.read_table(path)
        with pa.memory_map(str(path)) as source:
            try:
                return pa.ipc.open_file(source).read_all()
            except pa.ArrowInvalid:
                source.seek(0)
                return pa.ipc.open_stream(source).read_all()
    except (OSError, ValueError, pa.ArrowException) as err:
        kind = path.suffix.lower().lstrip(".")
        raise DataError(path, f"not a readable {kind} file ({first_line(err)})") from None


def _concat(tables: list[Any], first: Path) -> Any:
    import pyarrow as pa

    try:
        return tables[0] if len(tables) == 1 else pa.concat_tables(tables)
    except pa.ArrowException as err:
        raise DataError(first, f"the split's files have different columns "
                                   f"({first_line(err)}); expected one schema") from None


def _read_file(path: str | Path, options: dict[str, Any]) -> Corpus:
    path = Path(path)
    return corpus_of(_read_table(path), str(path), **options)


def read_parquet(path: str | Path, scheme: str | None = None, strict: bool = False,
                 tokens_column: str | None = None, tags_column: str | None = None,
                 doc_column: str | None = None) -> Corpus:
    """Read a parquet file (one split), as ``Dataset.to_parquet`` or the Hub writes it."""
    return _read_file(path, dict(scheme=scheme, strict=strict, tokens_column=tokens_column,
                                 tags_column=tags_column, doc_column=doc_column))


def read_arrow(path: str | Path, scheme: str | None = None, strict: bool = False,
               tokens_column: str | None = None, tags_column: str | None = None,
               doc_column: str | None = None) -> Corpus:
    """Read an arrow file (one split), as ``save_to_disk`` writes it."""
    return _read_file(path, dict(scheme=scheme, strict=strict, tokens_column=tokens_column,
                                 tags_column=tags_column, doc_column=doc_column))


def read_saved(path: str | Path, scheme: str | None = None, strict: bool = False,
               tokens_column: str | None = None, tags_column: str | None = None,
               doc_column: str | None = None) -> Corpus:
    """Read a folder ``Dataset.save_to_disk`` wrote (one split)."""
    datasets = _datasets()
    path = Path(path)
    try:
        loaded = datasets.load_from_disk(str(path))
    except Exception as err:  # a damaged folder: whatever datasets raises, one line
        raise DataError(path, f"not a readable save_to_disk folder ({type(err).__name__}: "
                              f"{first_line(err)})") from None
    if not isinstance(loaded, datasets.Dataset):
        raise DataError(path, "a DatasetDict folder inside a split; expected one Dataset")
    return corpus_of(loaded, str(path), scheme=scheme, strict=strict,
                     tokens_column=tokens_column, tags_column=tags_column,
                     doc_column=doc_column)


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


def _names(feature: Any, column: str, source: str, scheme: str | None) -> list[str] | None:
    """A tags column's ClassLabel names (checked as tags of one scheme), or None for a
    column of strings; any other type is an error."""
    module = sys.modules.get("datasets") or _datasets()
    inner = getattr(feature, "feature", None)
    if isinstance(inner, module.ClassLabel):
        names = list(inner.names)
        to_iob2([names], scheme, False, f"{source}: column {column}: the ClassLabel names "
                "(as one sequence)", lambda i, j: None)
        return names
    if getattr(inner, "dtype", None) in ("string", "large_string"):
        return None
    raise DataError(source, f"column {column} holds {feature}; expected a list of ClassLabel "
                            "ids or of tag strings per row")


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
        DataError: a missing column (naming the columns there), ClassLabel names that are not
            tags of one scheme, or a bad row (naming it, counting from 1).
    """
    datasets = _datasets()
    check_scheme(scheme)
    check_flag("strict", strict)
    if isinstance(table, datasets.Dataset):
        columns, features = list(table.column_names), table.features

        def values(column: str) -> list[Any]:
            return list(table[column])
    else:
        columns = list(table.column_names)
        features = datasets.Features.from_arrow_schema(table.schema)

        def values(column: str) -> list[Any]:
            return table.column(column).to_pylist()
    words_at = _column(columns, tokens_column, TOKEN_COLUMNS, "words", "--tokens-column", source)
    tags_at = _column(columns, tags_column, TAG_COLUMNS, "tags", "--tags-column", source)
    doc_at = _column(columns, doc_column, DOC_COLUMNS, "document", "--doc-column", source)
    names = _names(features[tags_at], tags_at, source, scheme)
    words, raw = values(words_at), values(tags_at)
    sequences = [_row_tags(w, t, names, f"{source} row {i + 1}")
                 for i, (w, t) in enumerate(zip(words, raw, strict=True))]
    docs = values(doc_at) if doc_at else [None] * len(words)
    for i, doc in enumerate(docs):
        if doc is not None and (isinstance(doc, bool) or not isinstance(doc, (str, int))):
            raise DataError(f"{source} row {i + 1}", f"document {show(doc)} in column {doc_at}; "
                                                     "expected a string or an integer")
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
