from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from seqrep.data import load_corpus
from seqrep.data.datasets import normalize_split
from seqrep.data.tags import convert_tags, spans_to_tags, tags_to_spans
from seqrep.errors import ConfigError, DataError, SeqrepError

SPLITS = ("train", "validation", "test")


def figures(corpus) -> tuple[int, int, int]:  # noqa: ANN001
    stats = corpus.stats()
    return stats["sentences"], stats["tokens"], stats["spans"]


def test_conll2003_splits(seqrep_data: Path) -> None:
    train = load_corpus("conll2003")
    assert train.name == "conll2003/train"
    assert figures(train) == (14_041, 203_621, 23_499)
    assert train.stats()["spans_per_label"] == {"PER": 6_600, "LOC": 7_140, "ORG": 6_321,
                                                "MISC": 3_438}
    assert figures(load_corpus("conll2003", "validation")) == (3_250, 51_362, 5_942)
    assert figures(load_corpus("conll2003", "dev")) == (3_250, 51_362, 5_942)
    assert figures(load_corpus("conll2003", "test")) == (3_453, 46_435, 5_648)


def test_rest14_splits(seqrep_data: Path) -> None:
    train, dev, test = (load_corpus("rest14", s) for s in SPLITS)
    assert len(dev) == 304
    assert len(train) + len(dev) == 3_041
    assert train.stats()["spans"] + dev.stats()["spans"] == 3_693
    assert (len(test), test.stats()["spans"]) == (800, 1_134)
    assert not [n for n in train.notes + dev.notes if n.startswith("unmatched")]
    # the 5 terms not on word boundaries are reported in the split that holds them (all train)
    assert (len(train.notes), len(dev.notes)) == (5, 0)
    assert len(test.notes) == 1
    assert train.span_types() == ["ASP"]
    polar = load_corpus("rest14-polarity", "dev")
    assert [s.words for s in polar] == [s.words for s in dev]
    assert polar.span_types() == ["CONFLICT", "NEG", "NEU", "POS"]
    assert load_corpus("rest14", "dev", polarity=True).span_types() == polar.span_types()
    with pytest.raises(ConfigError, match="rest14-polarity has no test split"):
        load_corpus("rest14-polarity", "test")


def test_rest14_unmatched_dev_sentences_are_reported(rest14_dir: Path, tmp_path: Path) -> None:
    root = tmp_path / "rest14"
    (root / "semeval2014_xml").mkdir(parents=True)
    (root / "bert_e2e_absa").mkdir()
    xml = rest14_dir / "semeval2014_xml" / "Restaurants_Train_v2.xml"
    (root / "semeval2014_xml" / xml.name).symlink_to(xml)
    (root / "bert_e2e_absa" / "dev.txt").write_text(
        "But the staff was so horrible to us.####But=O the=O staff=T-NEG was=O so=O horrible=O "
        "to=O us=O .=O\nNot in the XML.####Not=O in=O the=O XML=O .=O\n")
    dev = load_corpus("rest14", "dev", data_dir=tmp_path)
    assert len(dev) == 1
    assert dev.notes == ["unmatched: bert_e2e_absa/dev.txt: sentence 'NotintheXML.' (whitespace "
                         "removed) matches no sentence of semeval2014_xml/Restaurants_Train_v2.xml"]
    assert len(load_corpus("rest14", "train", data_dir=tmp_path)) == 3_040


def test_nlupp_splits(seqrep_data: Path) -> None:
    sizes = {s: len(load_corpus("nlupp", s)) for s in SPLITS}
    assert sizes == {"train": 2_152, "validation": 309, "test": 619}
    banking = sum(len(load_corpus("nlupp-banking", s)) for s in SPLITS)
    hotels = sum(len(load_corpus("nlupp-hotels", s)) for s in SPLITS)
    assert (banking, hotels) == (2_071, 1_009)
    assert len(load_corpus("nlupp", "test", domains=["hotels"])) == \
        len(load_corpus("nlupp-hotels", "test"))
    test = load_corpus("nlupp", "test")
    assert {s.meta["fold"] for s in test} == {10, 13, 15, 18}
    spans = sum(load_corpus("nlupp", s).stats()["spans"] for s in SPLITS)
    assert spans == 1_985  # of 1,987: two overlapping slots are lost, as the notes say


@pytest.mark.parametrize("name", ["conll2003", "rest14", "rest14-polarity", "nlupp"])
def test_round_trip_tags_spans_tags_is_identity(seqrep_data: Path, name: str) -> None:
    for split in SPLITS:
        if name == "rest14-polarity" and split == "test":
            continue
        for sentence in load_corpus(name, split):
            tags = list(sentence.tags)
            spans, repaired = tags_to_spans(tags)
            assert repaired == 0
            assert spans_to_tags(spans, len(tags)) == tags
            for scheme in ("IOB1", "BIOES"):
                other, _ = convert_tags(tags, "IOB2", scheme)
                assert convert_tags(other, scheme, "IOB2") == (tags, 0)


def test_dataset_folders_and_files(data_root: Path, conll2003_dir: Path, nlupp_dir: Path,
                                   rest14_dir: Path) -> None:
    assert len(load_corpus(conll2003_dir, "test")) == 3_453
    assert len(load_corpus(nlupp_dir, "validation")) == 309
    assert load_corpus(rest14_dir, "dev", polarity=True).span_types() == [
        "CONFLICT", "NEG", "NEU", "POS"]
    assert len(load_corpus(str(conll2003_dir / "eng.testa"), format="conll")) == 3_250
    assert len(load_corpus(nlupp_dir, folds=[0, 1])) == 304  # both domains, folds 0 and 1


def test_split_and_name_errors(fixtures: Path, tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("SEQREP_DATA", str(tmp_path))
    with pytest.raises(ConfigError, match="unknown split 'dev2'; expected one of train, "
                                          "validation, test"):
        normalize_split("dev2")
    with pytest.raises(ConfigError, match="unknown dataset 'conll2004'; expected one of "
                                          "conll2003, rest14"):
        load_corpus("conll2004")
    with pytest.raises(ConfigError, match="split='test' does not apply to .*tiny.conll"):
        load_corpus(str(fixtures / "tiny.conll"), "test")
    with pytest.raises(DataError, match="a folder matching no known layout; expected seq.in"):
        load_corpus(tmp_path, "test")
    with pytest.raises(ConfigError, match="format='conll' applies to paths"):
        load_corpus("conll2003", format="conll")
    with pytest.raises(DataError, match="no such file"):
        load_corpus(str(tmp_path / "missing.conll"))
    assert len(load_corpus(fixtures / "tiny.conll")) == 5


def test_named_dataset_options_are_checked(seqrep_data: Path) -> None:
    with pytest.raises(ConfigError, match="conll2003 takes no option 'polarity'"):
        load_corpus("conll2003", polarity=True)
    with pytest.raises(ConfigError, match="nlupp takes no option 'folds'"):
        load_corpus("nlupp", folds=[1])


def test_without_local_data_or_datasets_library(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("SEQREP_DATA", str(tmp_path))  # holds no conll2003/
    monkeypatch.setitem(sys.modules, "datasets", None)  # import fails
    with pytest.raises(SeqrepError, match="set SEQREP_DATA to a directory holding conll2003/, "
                                          "or `pip install datasets`"):
        load_corpus("conll2003")
    monkeypatch.delenv("SEQREP_DATA")
    with pytest.raises(SeqrepError, match="'rest14' has no local copy and no Hugging Face Hub"):
        load_corpus("rest14")


class _Table:
    """The parts of a ``datasets.Dataset`` that the hub loader uses."""

    def __init__(self, rows: dict[str, list], names: list[str]) -> None:
        self.rows = rows
        label = types.SimpleNamespace(names=names)
        self.features = {"ner_tags": types.SimpleNamespace(feature=label)}

    def __getitem__(self, column: str) -> list:
        return self.rows[column]


def test_hub_maps_class_label_ids(monkeypatch) -> None:  # noqa: ANN001
    calls = []

    def load_dataset(repo: str, split: str, revision: str | None = None) -> _Table:
        calls.append((repo, split, revision))
        if split == "test":
            raise ConnectionError("offline")
        if revision is None:  # as datasets>=4 answers for a script dataset
            raise RuntimeError("Dataset scripts are no longer supported, but found conll2003.py")
        return _Table({"tokens": [["EU", "rejects", "German"], ["Peter", "Blackburn"]],
                       "ner_tags": [[3, 0, 7], [1, 2]]},
                      ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC"])

    monkeypatch.delenv("SEQREP_DATA", raising=False)
    monkeypatch.setitem(sys.modules, "datasets",
                        types.SimpleNamespace(load_dataset=load_dataset))
    corpus = load_corpus("conll2003", "validation")
    assert calls == [("eriktks/conll2003", "validation", None),
                     ("eriktks/conll2003", "validation", "refs/convert/parquet")]
    assert corpus.name == "hf://eriktks/conll2003/validation"
    assert corpus[0].tags == ("B-ORG", "O", "B-MISC")
    assert corpus.stats()["spans_per_label"] == {"MISC": 1, "ORG": 1, "PER": 1}
    with pytest.raises(SeqrepError, match="could not load eriktks/conll2003 \\(test\\) from the "
                                          "Hugging Face Hub: ConnectionError: offline; set "
                                          "SEQREP_DATA"):
        load_corpus("conll2003", "test")
    with pytest.raises(ConfigError, match="option 'tag_column' does not apply"):
        load_corpus("conll2003", tag_column=2)
