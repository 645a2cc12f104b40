"""The parallel-files format of SNIPS and ATIS: ``seq.in`` (words) and ``seq.out`` (tags), one
sentence per line, as a folder or as a dataset of ``train/ valid/ test/`` folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from seqrep.data import load_corpus, read_corpus
from seqrep.data.parallel import read_parallel
from seqrep.data.readers import detect_format, reader_options
from seqrep.errors import ConfigError, DataError


def write(folder: Path, words: str, tags: str, label: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "seq.in").write_text(words, encoding="utf-8")
    (folder / "seq.out").write_text(tags, encoding="utf-8")
    if label is not None:
        (folder / "label").write_text(label, encoding="utf-8")
    return folder


def spans(sentence) -> list[tuple[str, str]]:  # noqa: ANN001
    return [(" ".join(sentence.words[s.start:s.end]), s.label) for s in sentence.spans]


def test_a_folder_of_seq_in_and_seq_out(tmp_path: Path) -> None:
    folder = write(tmp_path / "snips",
                   "add sabrina salerno to the grime instrumentals playlist\nplay  some\tjazz\n",
                   "O B-artist I-artist O O B-playlist I-playlist O\nO O B-genre\n",
                   "AddToPlaylist\nPlayMusic\n")
    corpus = read_parallel(folder)
    assert corpus.name == str(folder)
    assert len(corpus) == 2
    first, second = corpus
    assert first.words[:3] == ("add", "sabrina", "salerno")
    assert spans(first) == [("sabrina salerno", "artist"), ("grime instrumentals", "playlist")]
    assert second.words == ("play", "some", "jazz")  # any run of whitespace separates words
    assert second.tags == ("O", "O", "B-genre")
    assert [s.meta for s in corpus] == [{"line": 1, "intent": "AddToPlaylist"},
                                        {"line": 2, "intent": "PlayMusic"}]
    assert corpus.stats()["spans_per_label"] == {"artist": 1, "genre": 1, "playlist": 1}
    # the seq.in (or seq.out) file names the same folder
    assert read_parallel(folder / "seq.in").sentences == corpus.sentences
    assert read_corpus(folder / "seq.out").sentences == corpus.sentences


def test_scheme_is_detected_over_the_file_or_given(tmp_path: Path) -> None:
    folder = write(tmp_path, "new york city\nparis\n", "B-city I-city E-city\nS-city\n")
    assert [spans(s) for s in read_parallel(folder)] == [[("new york city", "city")],
                                                         [("paris", "city")]]
    write(tmp_path, "a b\nc\n", "I-x I-x\nB-x\n")
    assert read_parallel(tmp_path, scheme="IOB1")[0].tags == ("B-x", "I-x")
    corpus = read_parallel(tmp_path, scheme="BIO")
    assert corpus.repaired == 1
    with pytest.raises(DataError, match=r"seq\.out:1: invalid IOB2 sequence: 'I-x' starts the "
                                        r"sentence \(scheme IOB2\)$"):
        read_parallel(tmp_path, scheme="IOB2", strict=True)
    with pytest.raises(ConfigError, match="unknown tag scheme 'BILUO'"):
        read_parallel(tmp_path, scheme="BILUO")


def test_blank_lines(tmp_path: Path) -> None:
    # a line blank in both files is no sentence; blank lines at the ends are not counted
    folder = write(tmp_path, "a b\n\nc\n\n\n", "O B-x\n\nO")
    corpus = read_parallel(folder)
    assert [(s.words, s.meta["line"]) for s in corpus] == [(("a", "b"), 1), (("c",), 3)]


@pytest.mark.parametrize("words, tags, pattern", [
    ("a b\nc\nd\n", "O O\nO\n",
     r"seq\.in: 3 lines, but .*seq\.out has 2; expected one line of tags per line of words"),
    ("a b\nc\n", "O O\nO O\n",
     r"seq\.out:2: 2 tags but line 2 of seq\.in has 1 word; expected one tag per word"),
    ("a b\n\n", "O O\nO\n", r"seq\.in: 1 line, but .*seq\.out has 2"),
    ("a b\n \n", "O O\nO\n", r"seq\.in: 1 line, but .*seq\.out has 2"),
    ("a b\nc\n", "O O\n\n\n", r"seq\.in: 2 lines, but .*seq\.out has 1"),
    ("a b\nc d\n", "O O\n\nO O", r"seq\.in: 2 lines, but .*seq\.out has 3"),
    ("a\n", "B-\n", r"seq\.out:1: tag 'B-' has an empty label"),
    ("a b\n", "B-x PER\n", r"seq\.out:1: tag 'PER' has no B-/I- prefix but other tags have one"),
    ("\n\n", "O\n", r"seq\.in: the file is empty"),
    ("a\n", "", r"seq\.out: the file is empty"),
    ("caf\xe9\n", "O\n", r"seq\.in:1: not valid UTF-8"),
])
def test_errors_name_the_files_lines_and_counts(tmp_path: Path, words: str, tags: str,
                                                pattern: str) -> None:
    (tmp_path / "seq.in").write_bytes(words.encode("latin-1"))
    (tmp_path / "seq.out").write_text(tags, encoding="utf-8")
    with pytest.raises(DataError, match=pattern):
        read_parallel(tmp_path)


def test_intent_label_file_must_match(tmp_path: Path) -> None:
    folder = write(tmp_path, "a\nb\n", "O\nO\n", "greet\n")
    with pytest.raises(DataError, match=r"label: 1 line, but .*seq\.in has 2; expected one "
                                        r"intent per sentence"):
        read_parallel(folder)


def test_missing_half_and_unknown_folders_say_what_is_expected(tmp_path: Path) -> None:
    (tmp_path / "seq.in").write_text("a\n")
    with pytest.raises(DataError, match=r"seq\.out: no such file; expected seq\.in and seq\.out "
                                        r"side by side"):
        read_parallel(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    layouts = r"expected seq\.in \+ seq\.out, or train/ valid/ test/ folders each holding them"
    with pytest.raises(DataError, match=rf"empty: a folder matching no known layout; {layouts}$"):
        read_parallel(empty)
    nlupp = r", or NLU\+\+ <domain>/fold<k>\.json folders"
    with pytest.raises(DataError, match=rf"empty: a folder matching no known layout; {layouts}"
                                        rf"{nlupp}.*, or a file \(CoNLL, CoNLL-U, JSONL"):
        read_corpus(empty)
    with pytest.raises(DataError, match=rf"empty: a folder matching no known layout; {layouts}"
                                        rf"{nlupp}.*, a conll2003 .*, a rest14 .*, or a file"):
        load_corpus(empty, "test")


def _snips(root: Path, dev: str = "valid") -> Path:
    write(root / "train", "play jazz\nbook a table\nadd song\n", "O B-genre\nO O O\nO O\n")
    write(root / dev, "play rock\n", "O B-genre\n")
    write(root / "test", "play pop now\nbook it\n", "O B-genre O\nO O\n")
    return root


@pytest.mark.parametrize("dev", ["valid", "dev", "validation"])
def test_a_dataset_of_split_folders(tmp_path: Path, dev: str) -> None:
    root = _snips(tmp_path / "snips", dev)
    assert detect_format(root) == "parallel"
    train = load_corpus(root)
    assert (train.name, len(train)) == ("snips/train", 3)
    assert [s.words for s in load_corpus(root, "validation")] == [("play", "rock")]
    assert load_corpus(root, "dev").name == "snips/validation"
    assert load_corpus(root, "test").stats()["tokens"] == 5
    assert load_corpus(root, "test", scheme="IOB2", strict=True).stats()["spans"] == 1
    with pytest.raises(ConfigError, match="the parallel reader has no option 'tag_column'; its "
                                          "options are scheme, strict"):
        load_corpus(root, "test", tag_column=1)
    # one split folder is a single split, like a file
    assert len(load_corpus(root / "train")) == 3
    with pytest.raises(ConfigError, match=r"split='test' does not apply to .*train: a file, a "
                                          r"seq\.in \+ seq\.out folder"):
        load_corpus(root / "train", "test")
    with pytest.raises(DataError, match=r"snips: holds the splits .*; load one with "
                                        r"load_corpus\(path, split\)"):
        read_parallel(root)


def test_missing_or_doubled_split_folders(tmp_path: Path) -> None:
    root = tmp_path / "atis"
    write(root / "train", "a\n", "O\n")
    with pytest.raises(DataError, match=r"atis: no test split; expected a test/ folder holding "
                                        r"seq\.in and seq\.out \(found train/\)"):
        load_corpus(root, "test")
    with pytest.raises(DataError, match=r"atis: no validation split; expected a valid/, dev/ or "
                                        r"validation/ folder"):
        load_corpus(root, "validation")
    write(root / "dev", "b\n", "O\n")
    write(root / "valid", "c\n", "O\n")
    with pytest.raises(DataError, match=r"atis: both dev/ and valid/ hold the validation split; "
                                        r"expected one"):
        load_corpus(root, "dev")
    (root / "test").mkdir()
    (root / "test" / "seq.in").write_text("a\n")
    with pytest.raises(DataError, match=r"test/seq\.out: no such file"):
        load_corpus(root, "test")


def test_registered_and_detected(tmp_path: Path) -> None:
    folder = write(tmp_path / "one", "a\n", "O\n")
    assert detect_format(folder) == detect_format(folder / "seq.in") == "parallel"
    assert reader_options("parallel") == ["scheme", "strict"]
    assert len(read_corpus(folder, format="parallel")) == 1
