"""CoNLL-U files (Universal Dependencies): ten tab-separated columns, one word per line.

The label column is chosen by name or index (``upos`` by default). Multiword-token lines
(``1-2``) are skipped in favour of their syntactic words, and their surface forms are kept in
``meta["multiword"]``; empty nodes (``1.1``) are skipped. ``# key = value`` comments go into the
sentence's ``meta``; ``# text = ...`` also sets ``Sentence.text`` and ``# newdoc id = ...`` sets
``doc_id`` for the sentences that follow. A label ``_`` (unspecified) is read as ``O``.

Word ids must run 1, 2, ... within a sentence and a multiword range ``N-M`` (``N < M``: a
reversed ``3-1`` is an error naming its line) must be followed by its words, so the words of a
Universal Dependencies file are exactly its syntactic words.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seqrep.data.iob2 import to_iob2
from seqrep.data.options import check_flag, check_scheme
from seqrep.data.quote import brief, cut
from seqrep.data.textfile import read_text, split_lines
from seqrep.data.types import Corpus, Sentence
from seqrep.errors import ConfigError, DataError

COLUMNS = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")


def column_index(label_column: str | int) -> int:
    """Resolve a CoNLL-U column name (``upos``, ``xpos`` ...) or index to an index.

    Raises:
        ConfigError: the column is unknown; the message lists the allowed names.
    """
    if isinstance(label_column, str) and label_column.strip().lstrip("-").isdecimal():
        label_column = int(label_column)
    if isinstance(label_column, int) and not isinstance(label_column, bool):
        if -len(COLUMNS) <= label_column < len(COLUMNS):
            return label_column % len(COLUMNS)
    elif isinstance(label_column, str) and label_column.lower() in COLUMNS:
        return COLUMNS.index(label_column.lower())
    raise ConfigError(f"label_column {label_column!r} does not exist; expected one of "
                      f"{', '.join(COLUMNS)} or an index 0..9")


def _comment(line: str) -> tuple[str, Any]:
    body = line[1:].strip()
    key, sep, value = body.partition("=")
    return (key.strip(), value.strip()) if sep else (body, True)


class _Reader:
    """Reads one file line by line, building sentences."""

    def __init__(self, path: Path, label: int) -> None:
        self.path, self.label = path, label
        self.blocks: list[tuple[list[str], list[str], list[int], dict[str, Any], str | None]] = []
        self.doc_id: str | None = None
        self._reset()

    def _reset(self) -> None:
        self.words: list[str] = []
        self.tags: list[str] = []
        self.lines: list[int] = []
        self.meta: dict[str, Any] = {}
        self.multiword: list[tuple[int, int, str]] = []
        # an open range: its first and last word id, form and line
        self.pending: tuple[int, int, str, int] | None = None

    def _check_pending(self) -> None:
        if self.pending is not None:
            first, last, form, lineno = self.pending
            raise DataError(self.path, f"multiword token {first}-{last} ({brief(form)}) is not "
                                       f"followed by its words {first}..{last}", lineno)

    def close(self) -> None:
        self._check_pending()
        if not self.words:  # comments before a blank line stay with the next sentence
            return
        if self.multiword:
            self.meta["multiword"] = self.multiword
        self.meta["line"] = self.lines[0]
        self.blocks.append((self.words, self.tags, self.lines, self.meta, self.doc_id))
        self._reset()

    def comment(self, line: str) -> None:
        key, value = _comment(line)
        if key == "newdoc id":
            self.doc_id = value if isinstance(value, str) else None  # "# newdoc id" alone
        self.meta[key] = value

    def word(self, line: str, lineno: int) -> None:
        cols = line.split("\t") if "\t" in line else line.split()
        if len(cols) != len(COLUMNS):
            raise DataError(self.path, f"expected {len(COLUMNS)} tab-separated columns "
                                       f"({' '.join(COLUMNS)}), got {len(cols)}", lineno)
        wid = cols[0]
        expected = len(self.words) + 1
        place = "starts the sentence" if expected == 1 else f"after word {expected - 1}"
        if "." in wid:  # an empty node of the enhanced graph: not a surface word
            return
        if "-" in wid:
            first, _, last = wid.partition("-")
            if not (first.isdecimal() and last.isdecimal() and int(first) < int(last)):
                raise DataError(self.path, f"bad multiword id '{cut(wid)}'; expected N-M with "
                                           "N < M", lineno)
            self._check_pending()
            if int(first) != expected:
                raise DataError(self.path, f"multiword token {wid} {place}; expected it to "
                                           f"start at word {expected}", lineno)
            self.pending = (int(first), int(last), cols[1], lineno)  # its words come next
            return
        if not wid.isdecimal():
            raise DataError(self.path, f"bad word id '{cut(wid)}'; expected an integer, N-M or "
                                       "N.M", lineno)
        if int(wid) != expected:
            raise DataError(self.path, f"word id {int(wid)} {place}; expected "
                                       f"{expected} (a new sentence starts after a blank line)",
                            lineno)
        if self.pending and int(wid) == self.pending[1]:
            first, _, form, _ = self.pending
            self.multiword.append((first - 1, len(self.words) + 1, form))
            self.pending = None
        tag = cols[self.label]
        blank = next((c for c in (1, self.label) if not cols[c].strip()), None)
        if blank is not None:  # CoNLL-U writes an unset field as _
            raise DataError(self.path, f"empty {COLUMNS[blank]} column; expected a value or _",
                            lineno)
        self.words.append(cols[1])
        self.tags.append("O" if tag == "_" else tag)
        self.lines.append(lineno)


def read_conllu(path: str | Path, label_column: str | int = "upos", scheme: str | None = None,
                strict: bool = False) -> Corpus:
    """Read a CoNLL-U file.

    Args:
        path: the file.
        label_column: the column holding the labels, by name (``id form lemma upos xpos feats
            head deprel deps misc``) or index.
        scheme: tag scheme of that column, ``None`` to detect it (plain labels such as UPOS are
            the TOKEN scheme and become width-1 spans).
        strict: raise on an invalid tag sequence instead of repairing it.

    Returns:
        the sentences; ``meta`` holds the comments, ``"line"`` and ``"multiword"``
        (``(start, end, surface form)`` over word indices).

    Raises:
        DataError: a malformed line, an empty or non-UTF-8 file (naming file and line).
        ConfigError: an unknown label column.
    """
    path = Path(path)
    check_flag("strict", strict)
    check_scheme(scheme)
    reader = _Reader(path, column_index(label_column))
    for lineno, line in enumerate(split_lines(read_text(path)), start=1):
        line = line.rstrip("\r\n")
        if not line.strip():
            reader.close()
        elif line.startswith("#"):
            if reader.words:  # a comment after words starts the next sentence
                reader.close()
            reader.comment(line)
        else:
            reader.word(line, lineno)
    reader.close()
    blocks = reader.blocks
    if not blocks:
        raise DataError(path, "no sentences found; expected CoNLL-U word lines")
    tags, repaired, _ = to_iob2([b[1] for b in blocks], scheme, strict, path,
                                lambda i, j: blocks[i][2][j])
    sentences = [Sentence(words, t, doc_id=doc, meta=meta,
                          text=meta["text"] if isinstance(meta.get("text"), str) else None)
                 for (words, _, _, meta, doc), t in zip(blocks, tags, strict=True)]
    return Corpus(sentences, name=str(path), repaired=repaired)
