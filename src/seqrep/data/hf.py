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

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from seqrep.data.hffiles import DICT, INFO, STATE, read_saved_dataset, saved_splits, table_of
from seqrep.data.hffiles import datasets_module as _datasets
from seqrep.data.hfrows import DOC_COLUMNS, TAG_COLUMNS, TOKEN_COLUMNS, corpus_of
from seqrep.data.types import Corpus
from seqrep.errors import ConfigError, DataError, first_line

__all__ = ["DOC_COLUMNS", "TAG_COLUMNS", "TOKEN_COLUMNS", "corpus_of", "load_hf", "read_arrow",
           "read_parquet", "read_saved"]

PREFIX = "hf:"
SPLIT_NAMES = {"train": ("train",), "validation": ("validation", "dev", "valid", "val"),
               "test": ("test",)}
SUFFIXES = (".parquet", ".arrow")
OPTIONS = ("tokens_column", "tags_column", "doc_column", "scheme", "strict")
_SPLIT_FILE = re.compile(r"(train|validation|valid|dev|val|test)(?=$|[-_.])")
# a Hub repository id (huggingface_hub's rule): ORG/NAME or NAME, each part of word
# characters, '-' and '.', neither starting nor ending with '-' or '.', without '--' or '..'
_HUB_PART = r"[\w](?:[\w.-]*[\w])?"
_HUB_ID = re.compile(rf"{_HUB_PART}(/{_HUB_PART})?")
_STREAMING = ("IterableDataset", "IterableDatasetDict")


def is_dataset(value: Any) -> bool:
    """True for a ``datasets.Dataset`` or ``DatasetDict``, or a streaming one (which
    :func:`load_hf` refuses in one line), without importing ``datasets``: an object of it
    exists only if it was imported."""
    module = sys.modules.get("datasets")
    kinds = tuple(k for k in (getattr(module, name, None)
                              for name in ("Dataset", "DatasetDict", *_STREAMING))
                  if isinstance(k, type))
    return bool(kinds) and isinstance(value, kinds)


def is_hf_name(value: Any) -> bool:
    """True for an ``hf:ORG/NAME[:CONFIG]`` dataset name."""
    return isinstance(value, str) and value.startswith(PREFIX)


def _there(path: Path) -> bool:
    """An entry exists, whatever it is (a FIFO or a link too: the reader refuses those)."""
    return os.path.lexists(path)


def is_saved_dataset(path: Path) -> bool:
    """A folder ``Dataset.save_to_disk`` wrote (one split)."""
    return path.is_dir() and _there(path / STATE) and _there(path / INFO)


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
    return path.is_dir() and (_there(path / DICT) or bool(split_files(path)))


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
        kind = type(source).__name__
        if isinstance(source, tuple(getattr(module, k) for k in _STREAMING)):
            raise DataError(kind, "a streaming dataset is read here only in full; "
                                  "materialize it first: load it without streaming=True, or "
                                  "Dataset.from_generator(lambda: (yield from ds), "
                                  "features=ds.features)")
        if isinstance(source, module.Dataset):
            if split != "train":
                raise ConfigError(f"split={split!r} does not apply to a Dataset (one split); "
                                  "pass a DatasetDict to choose a split")
            return corpus_of(source, "dataset", **options)
        chosen = _pick(list(source), split, "DatasetDict")
        return corpus_of(source[chosen], f"DatasetDict[{chosen}]", **options)
    path = Path(source)
    if _there(path / DICT):
        return _load_saved_dict(path, split, options)
    files = split_files(path)
    chosen = _pick(list(files), split, str(path))
    tables = [_read_table(f) for f in files[chosen]]
    corpus = corpus_of(_concat(tables, files[chosen][0]), f"{path}/{chosen}", **options)
    corpus.name = f"{path.name}/{split}"
    return corpus


def _load_name(name: str, split: str, options: dict[str, Any]) -> Corpus:
    repo, _, config = name[len(PREFIX):].partition(":")
    if not _HUB_ID.fullmatch(repo) or "--" in repo or ".." in repo or ":" in config \
            or any(c in config for c in "/\\") or ".." in config:
        raise ConfigError(f"dataset {name!r}: expected hf:ORG/NAME or hf:ORG/NAME:CONFIG (a "
                          "Hub repository id, not a path)")
    if _there(Path(repo)):  # load_dataset would read that folder, not the Hub's dataset
        raise ConfigError(f"dataset {name!r}: {repo} is also a local folder here, which "
                          "datasets.load_dataset would read instead; pass the folder itself "
                          "(without hf:) or run from another folder")
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
    chosen = _pick(saved_splits(path), split, str(path))
    corpus = read_saved(path / chosen, **options)
    corpus.name = f"{path.name}/{split}"
    return corpus


def _read_table(path: Path) -> Any:
    """A parquet or arrow file the user named (a link to anywhere, but no FIFO or device)."""
    _datasets()
    return table_of(path, "parquet" if path.suffix.lower() == ".parquet" else "arrow")


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
    """Read a folder ``Dataset.save_to_disk`` wrote (one split), checked as
    :mod:`seqrep.data.hffiles` says before a file of it is opened."""
    _datasets()
    path = Path(path)
    if _there(path / DICT):
        raise DataError(path, "a DatasetDict folder; expected one Dataset (one of its split "
                              "folders)")
    loaded = read_saved_dataset(path)
    return corpus_of(loaded, str(path), scheme=scheme, strict=strict,
                     tokens_column=tokens_column, tags_column=tags_column,
                     doc_column=doc_column)
