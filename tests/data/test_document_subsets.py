"""Whole-document subsets (issue 24): with subset_unit=document, --max-*-sentences take whole
documents, so a 2,000-sentence budget does not cut the articles document context reads; the
choice depends on subset_seed only (never on --context), and a corpus without documents
takes the very sentences the sentence unit takes."""

from __future__ import annotations

from pathlib import Path

import pytest

from seqrep.config import TrainConfig
from seqrep.data.splits import load_data
from seqrep.errors import ConfigError

SIZES = [3, 5, 2, 4]  # sentences per document, in file order: 14 sentences


def corpus(path: Path, sizes: list[int] | None, name: str = "d") -> Path:
    """A CoNLL file of one-word sentences ``{name}{doc}s{i}``, cut into documents of ``sizes``
    by -DOCSTART- lines (``None``: 6 sentences and no documents)."""
    lines = []
    for d, n in enumerate(sizes or [6]):
        if sizes:
            lines += ["-DOCSTART- O", ""]
        lines += [f"{name}{d}s{i} O\n" for i in range(n)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def words(sents) -> list[str]:
    return [s.words[0] for s in sents]


def doc_of(word: str) -> str:
    return word.split("s")[0]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    return {"dataset": str(corpus(tmp_path / "train.txt", SIZES)),
            "eval_split": str(corpus(tmp_path / "val.txt", SIZES, "v")),
            "test_split": str(corpus(tmp_path / "test.txt", SIZES, "t"))}


def load(files: dict[str, str], **kw):
    return load_data(TrainConfig(**files, **kw))


def test_the_files_read_as_four_documents(files) -> None:
    data = load(files)
    assert [s.doc_id for s in data.train] == ["doc1"] * 3 + ["doc2"] * 5 + ["doc3"] * 2 + \
        ["doc4"] * 4


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_training_subsets_are_whole_documents_until_the_count(files, seed: int) -> None:
    data = load(files, max_train_sentences=6, max_eval_sentences=6, subset_seed=seed,
                subset_unit="document")
    for got in (words(data.train), words(data.eval)):
        docs = {doc_of(w) for w in got}
        sizes = {d: SIZES[int(d[1:])] for d in docs}
        # every chosen document is whole, and in file order
        assert len(got) == sum(sizes.values()) and got == sorted(got)
        # at least 6 sentences, and the count stopped once it reached 6: without the last
        # document drawn (so without the largest, at least) it was still short of 6
        assert len(got) >= 6 and len(got) - max(sizes.values()) < 6


def test_hand_computed_cases(files) -> None:
    # 13 of 14 sentences: any three documents hold at most 5 + 4 + 3 = 12, so all four
    data = load(files, max_train_sentences=13, subset_unit="document")
    assert len(data.train) == 14
    # one sentence: exactly one whole document
    data = load(files, max_train_sentences=1, subset_unit="document", subset_seed=3)
    assert len({doc_of(w) for w in words(data.train)}) == 1
    assert len(data.train) == SIZES[int(doc_of(words(data.train)[0])[1:])]
    # the test subset takes the first documents (the sentence unit takes the first N
    # sentences): 3 -> the first document; 4 -> the first two (3 + 5); 9 -> three (10)
    for limit, expected in [(3, 3), (4, 8), (9, 10), (14, 14), (99, 14)]:
        data = load(files, max_test_sentences=limit, subset_unit="document")
        assert len(data.test) == expected, limit
        assert words(data.test) == [f"t{d}s{i}" for d, n in enumerate(SIZES)
                                    for i in range(n)][:expected]
    # the sentence unit is as before: the first N sentences, cutting a document
    assert len(load(files, max_test_sentences=4).test) == 4


def test_the_choice_depends_on_the_seed_only(files) -> None:
    a = load(files, max_train_sentences=6, subset_unit="document", subset_seed=5)
    b = load(files, max_train_sentences=6, subset_unit="document", subset_seed=5, seed=9,
             epochs=1)
    assert words(a.train) == words(b.train)
    chosen = {tuple(words(load(files, max_train_sentences=6, subset_unit="document",
                               subset_seed=s).train)) for s in range(12)}
    assert len(chosen) > 1  # the seed draws different documents


def test_without_documents_the_units_agree(tmp_path: Path) -> None:
    plain = {"dataset": str(corpus(tmp_path / "train.txt", None)),
             "eval_split": str(corpus(tmp_path / "val.txt", None, "v")), "test_split": None}
    for seed in range(4):
        kw = dict(max_train_sentences=4, max_eval_sentences=2, subset_seed=seed)
        by_sentence = load_data(TrainConfig(**plain, **kw))
        by_document = load_data(TrainConfig(**plain, **kw, subset_unit="document"))
        assert words(by_document.train) == words(by_sentence.train)
        assert words(by_document.eval) == words(by_sentence.eval)
        assert len(by_document.train) == 4


def test_a_validation_carved_from_one_file_keeps_documents_whole(tmp_path: Path) -> None:
    path = corpus(tmp_path / "train.txt", [4] * 10)  # 40 sentences, 10 % is 4: one document
    data = load_data(TrainConfig(dataset=str(path), test_split=None, subset_unit="document"))
    assert len({doc_of(w) for w in words(data.eval)}) == 1 and len(data.eval) == 4
    assert not {doc_of(w) for w in words(data.eval)} & {doc_of(w) for w in words(data.train)}
    assert len(data.train) == 36


def test_an_unknown_unit_is_refused() -> None:
    with pytest.raises(ConfigError, match="subset_unit='paragraph'; expected one of"):
        TrainConfig(subset_unit="paragraph")


@pytest.mark.integration  # a tiny training: about 20 s on the shared 2-core machine
def test_a_run_records_the_unit_and_trains_on_whole_documents(tiny, files, tmp_path) -> None:
    import json

    from support import train_configs

    from seqrep.train import train

    lab, cfg = train_configs(tiny("llama", 2), (files["dataset"], files["test_split"]),
                             epochs=1, max_train_sentences=4, subset_unit="document",
                             eval_split=files["eval_split"], max_eval_sentences=2,
                             subset_seed=1)
    metrics = train(lab.replace(exit_layer=None), cfg, tmp_path / "run", quiet=True)
    saved = json.loads((tmp_path / "run" / "run.json").read_text())
    assert saved["train"]["subset_unit"] == "document"
    expected = load(files, max_train_sentences=4, subset_unit="document", subset_seed=1)
    assert metrics["train_sentences"] == len(expected.train) > 4 - 1
