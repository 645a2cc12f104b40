"""Format name -> reader, and the format of a path when none is given.

Reader options are keyword arguments of the reader (``tag_column``, ``scheme``, ``strict``,
``label_column``, ``polarity``, ``domains``, ``folds``, ``alignment``); an option the chosen
reader does not take is an error that lists the ones it does.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from seqrep.data.absa import read_absa_tokenized, read_semeval_xml
from seqrep.data.conll import read_conll
from seqrep.data.conllu import read_conllu
from seqrep.data.jsonl import read_jsonl
from seqrep.data.nlupp import read_nlupp
from seqrep.data.types import Corpus
from seqrep.errors import ConfigError, DataError

READERS: dict[str, Callable[..., Corpus]] = {
    "conll": read_conll,
    "conllu": read_conllu,
    "semeval-xml": read_semeval_xml,
    "absa-tokenized": read_absa_tokenized,
    "nlupp": read_nlupp,
    "jsonl": read_jsonl,
}

# First match wins: suffix -> format.
_SUFFIXES = {".conllu": "conllu", ".xml": "semeval-xml", ".jsonl": "jsonl", ".json": "nlupp"}


def get_reader(format: str) -> Callable[..., Corpus]:
    """The reader for a format name.

    Raises:
        ConfigError: the format is unknown; the message lists the allowed ones.
    """
    try:
        return READERS[format]
    except KeyError:
        raise ConfigError(f"unknown format {format!r}; expected one of "
                          f"{', '.join(READERS)}") from None


def detect_format(path: str | Path) -> str:
    """Guess a file's format from its suffix, then its first line.

    ``.conllu`` -> conllu, ``.xml`` -> semeval-xml, ``.jsonl`` -> jsonl, ``.json`` or a
    directory -> nlupp, ``####`` in the first non-blank line -> absa-tokenized, else conll.

    Raises:
        DataError: the path does not exist.
    """
    path = Path(path)
    if not path.exists():
        raise DataError(path, "no such file or directory")
    if path.is_dir():
        return "nlupp"
    if path.suffix.lower() in _SUFFIXES:
        return _SUFFIXES[path.suffix.lower()]
    with path.open("rb") as f:
        first = next((ln for ln in f if ln.strip()), b"")
    return "absa-tokenized" if b"####" in first else "conll"


def reader_options(format: str) -> list[str]:
    """The keyword options a format's reader takes."""
    return list(inspect.signature(get_reader(format)).parameters)[1:]


def read_corpus(path: str | Path, format: str | None = None, **options: Any) -> Corpus:
    """Read a file (or an NLU++ directory) with the reader for ``format``.

    Args:
        path: the file or directory.
        format: one of :data:`READERS`; ``None`` detects it (:func:`detect_format`).
        **options: reader options; ``None`` values are dropped so that callers can pass
            unset command-line options through.

    Returns:
        the corpus.

    Raises:
        ConfigError: an unknown format, or an option the reader does not take.
        DataError: the file is missing or bad (see the reader).
    """
    fmt = format or detect_format(path)
    reader = get_reader(fmt)
    options = {k: v for k, v in options.items() if v is not None}
    allowed = reader_options(fmt)
    unknown = [k for k in options if k not in allowed]
    if unknown:
        raise ConfigError(f"the {fmt} reader has no option {unknown[0]!r}; its options are "
                          f"{', '.join(allowed)}")
    return reader(path, **options)
