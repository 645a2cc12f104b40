from __future__ import annotations

from pathlib import Path

import pytest

from seqrep.data.conllu import column_index, read_conllu
from seqrep.errors import ConfigError, DataError


def test_fixture_words_labels_and_meta(fixtures: Path) -> None:
    corpus = read_conllu(fixtures / "tiny.conllu")
    assert len(corpus) == 3
    first, second, third = corpus
    # the multiword token "Del" gives way to its syntactic words "De" "el"
    assert first.words == ("De", "el", "mar", "vino", "él", ".")
    assert first.tags == ("B-ADP", "B-DET", "B-NOUN", "B-VERB", "B-PRON", "B-PUNCT")
    assert first.meta["multiword"] == [(0, 2, "Del")]
    assert first.meta["sent_id"] == "s1"
    assert first.text == "Del mar vino él."
    assert first.meta["line"] == 5
    assert first.doc_id == "doc-a" and second.doc_id == "doc-a" and third.doc_id == "doc-b"
    # the empty node 2.1 is skipped
    assert second.words == ("Sue", "likes", "tea")
    assert corpus.stats()["spans"] == 11


@pytest.mark.parametrize("column, tags", [
    ("xpos", ("B-NNP", "B-VBZ", "B-NN")),
    ("deprel", ("B-nsubj", "B-root", "B-obj")),
    (7, ("B-nsubj", "B-root", "B-obj")),
    ("lemma", ("B-Sue", "B-like", "B-tea")),
    ("deps", ("O", "O", "O")),  # "_" is no label
])
def test_label_column_by_name_or_index(fixtures: Path, column: str | int,
                                       tags: tuple[str, ...]) -> None:
    assert read_conllu(fixtures / "tiny.conllu", label_column=column)[1].tags == tags


def test_column_index() -> None:
    assert column_index("UPOS") == 3
    assert column_index("9") == 9
    assert column_index(-1) == 9
    with pytest.raises(ConfigError, match="expected one of id, form, lemma, upos, xpos"):
        column_index("ner")
    with pytest.raises(ConfigError):
        column_index(10)
    for bad in ("²", True, 1.5, None):  # "²".isdigit() is true, but int("²") fails
        with pytest.raises(ConfigError, match="label_column .* does not exist"):
            column_index(bad)


def test_bio_labels_in_misc_column(tmp_path: Path) -> None:
    path = tmp_path / "ner.conllu"
    path.write_text("1\tAnna\t_\tPROPN\t_\t_\t0\troot\t_\tB-PER\n"
                    "2\tSmith\t_\tPROPN\t_\t_\t1\tflat\t_\tI-PER\n"
                    "3\tran\t_\tVERB\t_\t_\t1\tdep\t_\tO\n", encoding="utf-8")
    corpus = read_conllu(path, label_column="misc")
    assert [(s.start, s.end, s.label) for s in corpus[0].spans] == [(0, 2, "PER")]


@pytest.mark.parametrize("text, pattern", [
    ("1\tDog\tdog\tNOUN\n", r"x\.conllu:1: expected 10 tab-separated columns"),
    ("# c\nx\tDog\t_\tNOUN\t_\t_\t0\troot\t_\t_\n", r"x\.conllu:2: bad word id 'x'"),
    ("1-x\tDel\t_\t_\t_\t_\t_\t_\t_\t_\n", r"x\.conllu:1: bad multiword id '1-x'"),
    ("# only = comments\n", r"x\.conllu: no sentences found"),
    ("1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n1\tdo\t_\tAUX\t_\t_\t0\troot\t_\t_\n\n",
     r"x\.conllu:1: multiword token 1-2 \(\"don't\"\) is not followed by its words 1\.\.2"),
    ("3-2\tx\t_\t_\t_\t_\t_\t_\t_\t_\n", r"x\.conllu:1: bad multiword id '3-2'; expected N-M "
                                        r"with N < M"),
    ("1\tDog\t_\tNOUN\t_\t_\t0\troot\t_\t_\n1\tcat\t_\tNOUN\t_\t_\t0\troot\t_\t_\n",
     r"x\.conllu:2: word id 1 after word 1; expected 2"),
    ("2\tDog\t_\tNOUN\t_\t_\t0\troot\t_\t_\n", r"x\.conllu:1: word id 2 starts the sentence; "
                                             r"expected 1"),
    ("²\tDog\t_\tNOUN\t_\t_\t0\troot\t_\t_\n", r"x\.conllu:1: bad word id '²'"),
    ("", r"x\.conllu: the file is empty"),
])
def test_malformed(tmp_path: Path, text: str, pattern: str) -> None:
    path = tmp_path / "x.conllu"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match=pattern):
        read_conllu(path)
