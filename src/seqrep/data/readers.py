"""Format name -> reader, and the format of a path when none is given.

Reader options are keyword arguments of the reader; an option the chosen reader does not take
is an error that lists the ones it does. One name means one thing in every reader:

- ``scheme``, ``strict``: the tag scheme (detected when unset) and whether an invalid tag
  sequence is an error (conll, conllu, jsonl, parallel);
- ``tag_column``, ``word_column``: column indices (conll); ``label_column``: a CoNLL-U column
  by name or index (conllu);
- ``polarity``: ABSA terms labeled by polarity (semeval-xml, absa-tokenized);
- ``alignment``: character spans off word boundaries (semeval-xml, nlupp, jsonl);
- ``domains``, ``folds``: the NLU++ selection (nlupp);
- ``tokens_column``, ``tags_column``, ``doc_column``: column names (parquet, arrow, hf-saved:
  :mod:`seqrep.data.hf`).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from seqrep.data.absa import read_absa_tokenized, read_semeval_xml
from seqrep.data.conll import read_conll
from seqrep.data.conllu import read_conllu
from seqrep.data.hf import is_saved_dataset, read_arrow, read_parquet, read_saved
from seqrep.data.jsonl import read_jsonl
from seqrep.data.nlupp import has_folds, read_nlupp
from seqrep.data.parallel import LAYOUTS as PARALLEL_LAYOUTS
from seqrep.data.parallel import TAGS, WORDS, is_split_folder, read_parallel, split_folders
from seqrep.data.textfile import forget, read_start
from seqrep.data.types import Corpus
from seqrep.errors import ConfigError, DataError

READERS: dict[str, Callable[..., Corpus]] = {
    "conll": read_conll,
    "conllu": read_conllu,
    "semeval-xml": read_semeval_xml,
    "absa-tokenized": read_absa_tokenized,
    "nlupp": read_nlupp,
    "jsonl": read_jsonl,
    "parallel": read_parallel,
    "parquet": read_parquet,
    "arrow": read_arrow,
    "hf-saved": read_saved,
}

# The folders readers take, and the files, for messages about a folder of another layout.
FOLDER_LAYOUTS = (f"{PARALLEL_LAYOUTS}, or NLU++ <domain>/fold<k>.json folders (or "
                  "data/<domain>/...)")
FILE_FORMATS = ("a file (CoNLL, CoNLL-U, JSONL, SemEval XML, ABSA '####' text, parquet or "
                "arrow)")

# First match wins: suffix -> format.
_SUFFIXES = {".conllu": "conllu", ".xml": "semeval-xml", ".jsonl": "jsonl", ".json": "nlupp",
             ".parquet": "parquet", ".arrow": "arrow"}
_CONLLU_ID = re.compile(rb"[0-9]+([-.][0-9]+)?")


def _format_of_content(data: bytes) -> str:
    """The format the start of a file reads as (see :func:`detect_format`)."""
    while data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    lines = re.split(rb"\r\n|\r|\n", data)  # as textfile.split_lines: a lone CR ends a line
    first = next((ln.strip() for ln in lines if ln.strip()), b"")
    if b"####" in first:
        return "absa-tokenized"
    if first.startswith(b'{"') or first.startswith(b"{") and first.endswith(b"}"):
        return "jsonl"
    word = next((ln for ln in lines if ln.strip() and not ln.startswith(b"#")), b"")
    cols = word.split(b"\t")
    if len(cols) == 10 and _CONLLU_ID.fullmatch(cols[0]):
        return "conllu"
    return "conll"


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
    """Guess a path's format from its layout, suffix, then content.

    A folder holding ``seq.in`` + ``seq.out`` (or ``train/ valid/ test/`` folders of them), or
    a file named ``seq.in``/``seq.out`` -> parallel; a folder of NLU++ folds -> nlupp;
    a folder ``Dataset.save_to_disk`` wrote -> hf-saved; ``.conllu`` -> conllu, ``.xml`` ->
    semeval-xml, ``.jsonl`` -> jsonl, ``.json`` -> nlupp, ``.parquet`` -> parquet, ``.arrow`` ->
    arrow.
    Otherwise (any other suffix, or none, as a pipe ``/dev/fd/63`` has) the first non-blank
    line decides: ``####`` in it -> absa-tokenized, a JSON object ``{...}`` -> jsonl; then a
    first word line (not ``#``) of 10 tab-separated columns starting with a word id ``1``,
    ``1-2`` or ``1.1`` -> conllu; else conll.

    A pipe or FIFO is read whole to look at it, and its bytes are kept for the reader
    (:func:`seqrep.data.textfile.read_start`), so detecting its format loses none of it.

    Raises:
        DataError: the path does not exist, or is a folder of no known layout (the message
            lists the layouts).
    """
    path = Path(path)
    if not path.exists():
        raise DataError(path, "no such file or directory")
    if path.is_dir():
        if is_split_folder(path) or split_folders(path):
            return "parallel"
        if has_folds(path):
            return "nlupp"
        if is_saved_dataset(path):
            return "hf-saved"
        raise DataError(path, f"a folder matching no known layout; expected {FOLDER_LAYOUTS}, "
                              f"or {FILE_FORMATS}")
    if path.name in (WORDS, TAGS):
        return "parallel"
    if path.suffix.lower() in _SUFFIXES:
        return _SUFFIXES[path.suffix.lower()]
    return _format_of_content(read_start(path))


def reader_options(format: str) -> list[str]:
    """The keyword options a format's reader takes."""
    return list(inspect.signature(get_reader(format)).parameters)[1:]


def read_corpus(path: str | Path, format: str | None = None, **options: Any) -> Corpus:
    """Read a file (or a parallel-files or NLU++ folder) with the reader for ``format``.

    A pipe or FIFO (``<(cat file)``) is read once, in full: detection and the reader share its
    bytes.

    Args:
        path: the file or folder.
        format: one of :data:`READERS`; ``None`` detects it (:func:`detect_format`).
        **options: reader options; ``None`` values are dropped so that callers can pass
            unset command-line options through.

    Returns:
        the corpus.

    Raises:
        ConfigError: an unknown format, or an option the reader does not take.
        DataError: the file is missing or bad (see the reader).
    """
    try:
        fmt = format or detect_format(path)
        reader = get_reader(fmt)
        options = {k: v for k, v in options.items() if v is not None}
        allowed = reader_options(fmt)
        unknown = [k for k in options if k not in allowed]
        if unknown:
            raise ConfigError(f"the {fmt} reader has no option {unknown[0]!r}; its options are "
                              f"{', '.join(allowed)}")
        return reader(path, **options)
    finally:
        forget(path)  # a pipe detection read ahead and no reader took
