"""Parallel files, the format of SNIPS and ATIS: ``seq.in`` holds the words and ``seq.out``
the tags, one sentence per line, words and tags separated by whitespace, line by line aligned.

A folder holding ``seq.in`` and ``seq.out`` is one split; an optional ``label`` file beside them
(one intent per line, as in the JointBERT copies of SNIPS and ATIS) goes into
``meta["intent"]``. A folder of ``train/``, ``valid/`` (or ``dev/``, ``validation/``) and
``test/`` folders, each holding the two files, is a dataset whose splits load with
``load_corpus(folder, split)``. Tags are in any scheme (detected over the whole ``seq.out``, or
given) and converted to IOB2. A line blank in both files is no sentence, and blank lines at the
end of a file are not counted.
"""

from __future__ import annotations

from pathlib import Path

from seqrep.data.iob2 import to_iob2
from seqrep.data.options import check_flag, check_scheme
from seqrep.data.quote import brief
from seqrep.data.textfile import read_text, split_lines
from seqrep.data.types import Corpus, Sentence
from seqrep.errors import DataError

WORDS, TAGS, INTENTS = "seq.in", "seq.out", "label"
SPLIT_FOLDERS = {"train": ("train",), "validation": ("valid", "dev", "validation"),
                 "test": ("test",)}
LAYOUTS = "seq.in + seq.out, or train/ valid/ test/ folders each holding them"


def is_split_folder(path: str | Path) -> bool:
    """True for a folder holding ``seq.in`` or ``seq.out`` (one split)."""
    path = Path(path)
    return path.is_dir() and any((path / name).is_file() for name in (WORDS, TAGS))


def split_folders(path: str | Path) -> dict[str, list[Path]]:
    """``{split: [folders]}`` for the split folders under a dataset folder (empty if none)."""
    path = Path(path)
    if not path.is_dir():
        return {}
    found = {split: [path / n for n in names if is_split_folder(path / n)]
             for split, names in SPLIT_FOLDERS.items()}
    return {split: folders for split, folders in found.items() if folders}


def split_folder(path: str | Path, split: str) -> Path:
    """The folder holding one split (``train``, ``validation`` or ``test``) of a dataset.

    Raises:
        DataError: the split has no folder, or two folders claim it.
    """
    path = Path(path)
    found = split_folders(path)
    folders = found.get(split, [])
    if not folders:
        names = SPLIT_FOLDERS[split]
        expected = (f"a {names[0]}/ folder" if len(names) == 1 else
                    f"a {', '.join(n + '/' for n in names[:-1])} or {names[-1]}/ folder")
        present = ", ".join(f.name + "/" for fs in found.values() for f in fs) or "none"
        raise DataError(path, f"no {split} split; expected {expected} holding {WORDS} and "
                              f"{TAGS} (found {present})")
    if len(folders) > 1:
        raise DataError(path, f"both {' and '.join(sorted(f.name + '/' for f in folders))} hold "
                              f"the {split} split; expected one")
    return folders[0]


def _lines(path: Path) -> list[str]:
    """The lines of a file, without the blank lines at its end."""
    lines = split_lines(read_text(path))
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _folder(path: Path) -> Path:
    """The folder a path names: itself, or the one holding a ``seq.in``/``seq.out`` file."""
    if not path.exists():
        raise DataError(path, "no such file or directory")
    if path.is_file():
        if path.name not in (WORDS, TAGS):
            raise DataError(path, f"expected a folder holding {WORDS} and {TAGS}, or one of "
                                  "those files")
        return path.parent
    if split_folders(path) and not is_split_folder(path):
        found = ", ".join(f.name + "/" for fs in split_folders(path).values() for f in fs)
        raise DataError(path, f"holds the splits {found}; load one with load_corpus(path, "
                              "split), or read one of those folders")
    if not is_split_folder(path):
        raise DataError(path, f"a folder matching no known layout; expected {LAYOUTS}")
    for name in (WORDS, TAGS):
        if not (path / name).is_file():
            raise DataError(path / name, f"no such file; expected {WORDS} and {TAGS} side by "
                                         "side")
    return path


def read_parallel(path: str | Path, scheme: str | None = None, strict: bool = False) -> Corpus:
    """Read one split of parallel files: ``seq.in`` (words) and ``seq.out`` (tags).

    Args:
        path: the folder holding ``seq.in`` and ``seq.out``, or one of the two files.
        scheme: tag scheme of ``seq.out`` (IOB1, IOB2/BIO, BIOES/BILOU, IO or TOKEN); ``None``
            detects it over the whole file. Tags are converted to IOB2.
        strict: raise on an invalid tag sequence instead of repairing it.

    Returns:
        the sentences, with ``meta["line"]`` (the line in both files) and, when a ``label``
        file is beside them, ``meta["intent"]``.

    Raises:
        DataError: a missing file, files of different line counts (naming both and the
            counts), a line with more or fewer tags than words (naming the line and both
            counts), a tag that does not fit the scheme, an empty or non-UTF-8 file, or a folder
            of another layout (the message lists the expected ones).
        ConfigError: an unknown scheme or an option of the wrong type.
    """
    check_flag("strict", strict)
    check_scheme(scheme)
    folder = _folder(Path(path))
    words_path, tags_path, intents_path = folder / WORDS, folder / TAGS, folder / INTENTS
    word_lines, tag_lines = _lines(words_path), _lines(tags_path)
    if len(word_lines) != len(tag_lines):
        raise DataError(words_path, f"{_plural(len(word_lines), 'line')}, but {tags_path} has "
                                    f"{len(tag_lines)}; expected one line of tags per line of "
                                    "words")
    intents = _lines(intents_path) if intents_path.is_file() else None
    if intents is not None and len(intents) != len(word_lines):
        raise DataError(intents_path, f"{_plural(len(intents), 'line')}, but {words_path} has "
                                      f"{len(word_lines)}; expected one intent per sentence")
    blocks: list[tuple[int, list[str], list[str]]] = []
    for lineno, (wline, tline) in enumerate(zip(word_lines, tag_lines, strict=True), start=1):
        words, tags = wline.split(), tline.split()
        if len(words) != len(tags):
            raise DataError(tags_path, f"{_plural(len(tags), 'tag')} but line {lineno} of "
                                       f"{WORDS} has {_plural(len(words), 'word')}; expected one "
                                       f"tag per word ({brief(wline.strip())})", lineno)
        if words:
            blocks.append((lineno, words, tags))
    if not blocks:
        raise DataError(words_path, "no sentences found; expected one sentence per line")
    iob2, repaired, _ = to_iob2([tags for _, _, tags in blocks], scheme, strict, tags_path,
                                lambda i, _: blocks[i][0])
    sentences = []
    for (lineno, words, _), tags in zip(blocks, iob2, strict=True):
        meta = {"line": lineno}
        if intents is not None:
            meta["intent"] = intents[lineno - 1].strip()
        sentences.append(Sentence(words, tags, meta=meta))
    return Corpus(sentences, name=str(folder), repaired=repaired)
