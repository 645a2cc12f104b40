"""CoNLL column files: one word per line, columns separated by spaces or tabs.

Blank (or whitespace-only) lines end a sentence; ``-DOCSTART-`` lines end a document (they are
not sentences, and the sentences after one get ``doc_id`` ``"doc1"``, ``"doc2"`` ...). The first
column is the word and one column (the last by default) holds the tags. A file whose first line
holds a tab is tab-separated (so words may contain spaces); otherwise any run of whitespace
separates columns.

Public layouts that read as published, without conversion: CoNLL-2003 (``word POS chunk NER``:
the NER tags are last; ``tag_column=1`` gives POS, ``-2`` the chunks), CoNLL-2000 chunking
(``word POS chunk``: chunks by default, ``tag_column=1`` for POS) and WNUT-17 tweets
(``word<TAB>tag``, sentences broken by lines holding only tabs or spaces).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from seqrep.data.iob2 import to_iob2
from seqrep.data.options import check_flag, check_index, check_scheme
from seqrep.data.quote import brief
from seqrep.data.textfile import read_text, split_lines
from seqrep.data.types import Corpus, Sentence
from seqrep.errors import DataError

DOCSTART = "-DOCSTART-"


@dataclass
class _Block:
    """The lines of one sentence as they are read."""

    words: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    ncols: int = 0
    doc_id: str | None = None


def _split(line: str, tab: bool) -> list[str]:
    if tab:
        return [c.strip() for c in line.rstrip().split("\t")]
    return line.split()


def _check_column(index: int, ncols: int, what: str, path: Path, lineno: int,
                  lines: list[str]) -> None:
    if not -ncols <= index < ncols:
        raise DataError(path, f"{what} {index} does not exist: the line has {ncols} columns "
                              f"(indices 0..{ncols - 1} or -{ncols}..-1)"
                              f"{_conllu_hint(path, lines)}", lineno)


def _conllu_hint(path: Path, lines: list[str]) -> str:
    """What to add to a column error when the file is CoNLL-U read as CoNLL (its ``#``
    comment lines have other column counts than its words): which format to ask for. Empty
    otherwise."""
    word = next((ln for ln in lines if ln.strip() and not ln.startswith("#")), "")
    cols = word.split("\t")
    if path.suffix == ".conllu" or (len(cols) == 10 and cols[0].split("-")[0].isdigit()):
        return ("; the file looks like CoNLL-U: read it with --format conllu "
                "(Python: format='conllu')")
    return ""


def read_conll(path: str | Path, tag_column: int = -1, scheme: str | None = None,
               strict: bool = False, word_column: int = 0) -> Corpus:
    """Read a CoNLL column file.

    Args:
        path: the file.
        tag_column: index of the tag column; negative indices count from the end.
        scheme: tag scheme (IOB1, IOB2/BIO, BIOES/BILOU, IO or TOKEN for plain labels such as
            POS); ``None`` detects it over the whole file. Tags are converted to IOB2.
        strict: raise on an invalid tag sequence instead of repairing it.
        word_column: index of the word column.

    Returns:
        the sentences, with ``meta["line"]`` the line of each sentence's first word.

    Raises:
        DataError: a line with the wrong number of columns, a column that does not exist, a tag
            that does not fit the scheme, an empty or non-UTF-8 file (naming file and line).
        ConfigError: an option of the wrong type or an unknown scheme.
    """
    path = Path(path)
    tag_column, word_column = check_index("tag_column", tag_column), check_index("word_column",
                                                                                 word_column)
    check_flag("strict", strict)
    check_scheme(scheme)
    lines = split_lines(read_text(path))
    tab = "\t" in next((ln for ln in lines if ln.strip()), "")
    blocks: list[_Block] = []
    block = _Block()
    ndocs = 0
    doc_id: str | None = None

    def close() -> None:
        nonlocal block
        if block.words:
            blocks.append(block)
        block = _Block(doc_id=doc_id)

    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            close()
            continue
        cols = _split(line, tab)
        if cols[0].lstrip("\ufeff") == DOCSTART:  # a mark left by joined files
            ndocs += 1
            doc_id = f"doc{ndocs}"
            close()
            continue
        if not block.words:
            _check_column(tag_column, len(cols), "tag column", path, lineno, lines)
            _check_column(word_column, len(cols), "word column", path, lineno, lines)
            if tag_column % len(cols) == word_column % len(cols):
                raise DataError(path, f"the tag column ({tag_column}) is the word column "
                                      f"({word_column}) in a line of {len(cols)}; expected at "
                                      f"least "
                                      f"{len(cols) + 1} columns", lineno)
            block.ncols = len(cols)
        elif len(cols) != block.ncols:
            raise DataError(path, f"expected {block.ncols} columns like line {block.lines[0]}, "
                                  f"got {len(cols)}: {brief(line.strip())}"
                                  f"{_conllu_hint(path, lines)}", lineno)
        word, tag = cols[word_column], cols[tag_column]
        if not word or not tag:
            raise DataError(path, f"empty {'word' if not word else 'tag'} column", lineno)
        block.words.append(word)
        block.tags.append(tag)
        block.lines.append(lineno)
    close()
    if not blocks:
        raise DataError(path, "no sentences found; expected lines of 'word ... tag' columns")

    tags, repaired, _ = to_iob2([b.tags for b in blocks], scheme, strict, path,
                                lambda i, j: blocks[i].lines[j])
    sentences = [Sentence(b.words, t, doc_id=b.doc_id, meta={"line": b.lines[0]})
                 for b, t in zip(blocks, tags, strict=True)]
    return Corpus(sentences, name=str(path), repaired=repaired)
