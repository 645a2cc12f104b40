"""Data from Hugging Face ``datasets``: a Dataset or DatasetDict in memory, a save_to_disk
folder, parquet or arrow files, or ``hf:ORG/NAME`` read the same as the data written as CoNLL
files. No test reads the network: ``hf:`` names go to a stand-in for ``load_dataset``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from inprocess import seqrep
from support import write_corpus

datasets = pytest.importorskip("datasets")
pq = pytest.importorskip("pyarrow.parquet")

from seqrep import load_corpus, train_labeler  # noqa: E402
from seqrep.config import LabelerConfig, TrainConfig  # noqa: E402
from seqrep.data.conll import read_conll  # noqa: E402
from seqrep.data.splits import load_data  # noqa: E402
from seqrep.train.run import train  # noqa: E402

NAMES = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
SPLIT_FILES = {"train": "train.txt", "validation": "valid.txt", "test": "test.txt"}
SETTINGS = dict(repetitions=1, exit_layer=2, epochs=3, batch_size=8, lr=3e-3, head_lr=1e-2,
                seed=7)


def _pairs(path: Path) -> list[tuple[list[str], list[str]]]:
    """The sentences of a 'word tag' file, read here by hand (not by seqrep's reader)."""
    out = []
    for block in path.read_text(encoding="utf-8").strip().split("\n\n"):
        rows = [line.split() for line in block.splitlines() if not line.startswith("-DOCSTART-")]
        out.append(([r[0] for r in rows], [r[1] for r in rows]))
    return out


@pytest.fixture(scope="module")
def conll(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("conll")
    return {split: write_corpus(root / name, n, seed=seed) for (split, name), n, seed in
            zip(SPLIT_FILES.items(), (40, 8, 8), (0, 2, 1), strict=True)}


def _dataset(pairs, tags: str = "classlabel", **extra) -> datasets.Dataset:
    """A Dataset of ``tokens`` + ``ner_tags`` (ClassLabel ids, or the tag strings)."""
    if tags == "classlabel":
        tag_feature = datasets.ClassLabel(names=NAMES)
        values = [[NAMES.index(t) for t in ts] for _, ts in pairs]
    else:
        tag_feature = datasets.Value("string")
        values = [list(ts) for _, ts in pairs]
    columns = {"tokens": [list(w) for w, _ in pairs], "ner_tags": values}
    features = {"tokens": datasets.List(datasets.Value("string")),
                "ner_tags": datasets.List(tag_feature)}
    for name, (values_, feature) in extra.items():
        columns[name], features[name] = values_, feature
    return datasets.Dataset.from_dict(columns, features=datasets.Features(features))


def _dict(conll, tags: str = "classlabel", dev: str = "validation") -> datasets.DatasetDict:
    return datasets.DatasetDict({(dev if split == "validation" else split):
                                 _dataset(_pairs(path), tags) for split, path in conll.items()})


def _same_as_conll(source, conll, **options) -> None:
    for split, path in conll.items():
        got = load_corpus(source, split, **options).sentences
        assert [(list(s.words), list(s.tags)) for s in got] == _pairs(path)
        assert got == read_conll(path).sentences


@pytest.fixture(scope="module")
def conll_run(tiny, conll, tmp_path_factory) -> tuple[Path, dict]:
    """The reference: a labeler trained on the CoNLL files, on one thread as the tests that
    compare with it train (a module fixture is set up before the autouse function fixture of
    conftest.py sets one thread: on a 2-core machine it trained on two, and summed in another
    order its scores could differ from a test's run)."""
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("runs") / "conll"
    lab_keys = {"repetitions", "exit_layer"}
    metrics = train(LabelerConfig(model=tiny("llama"), **{k: SETTINGS[k] for k in lab_keys}),
                    TrainConfig(dataset=str(conll["train"]), eval_split=str(conll["validation"]),
                                test_split=str(conll["test"]),
                                **{k: v for k, v in SETTINGS.items() if k not in lab_keys}),
                    out, quiet=True)
    return out, metrics


def _scores(m: dict) -> dict:
    return {k: v for k, v in m.items() if "second" not in k}


def test_a_datasetdict_trains_and_scores_as_the_conll_files(tiny, conll, conll_run, tmp_path,
                                                            monkeypatch):
    monkeypatch.setenv("SEQREP_CACHE", str(tmp_path / "cache"))
    run, on_files = conll_run
    labeler, metrics = train_labeler(_dict(conll), model=tiny("llama"), output=tmp_path / "hf",
                                     quiet=True, **SETTINGS)
    for split in ("validation", "test"):
        assert _scores(metrics[split]) == _scores(on_files[split])
    assert metrics["test"]["f1"] > 0.5  # it learned: the comparison is not of two zeros
    assert labeler.config.labels == json.loads(
        (run / "best" / "config.json").read_text())["labeler"]["labels"]


@pytest.mark.parametrize("tags", ["classlabel", "string"])
def test_dataset_objects_read_as_the_conll_files(conll, tags):
    _same_as_conll(_dict(conll, tags, dev="dev"), conll)
    assert load_corpus(_dict(conll, tags)["test"]).sentences == read_conll(conll["test"]).sentences


def test_save_to_disk_folders_read_as_the_conll_files(conll, tmp_path):
    _dict(conll).save_to_disk(str(tmp_path / "dict"))
    _same_as_conll(tmp_path / "dict", conll)
    # one Dataset saved is one split, as a file is
    _dict(conll)["test"].save_to_disk(str(tmp_path / "one"))
    assert load_corpus(tmp_path / "one").sentences == read_conll(conll["test"]).sentences


def test_parquet_and_arrow_files_read_as_the_conll_files(conll, tmp_path):
    folder = tmp_path / "parquet" / "data"
    folder.mkdir(parents=True)
    for split, ds in _dict(conll, dev="validation").items():
        ds.to_parquet(str(folder / f"{split}-00000-of-00001.parquet"))
    _same_as_conll(tmp_path / "parquet", conll)
    one = folder / "test-00000-of-00001.parquet"
    assert load_corpus(one).sentences == read_conll(conll["test"]).sentences
    # an arrow file as save_to_disk writes it (the arrow IPC stream format)
    _dict(conll)["test"].save_to_disk(str(tmp_path / "saved"))
    arrow = next((tmp_path / "saved").glob("*.arrow"))
    assert load_corpus(arrow).sentences == read_conll(conll["test"]).sentences


def test_iob1_tags_become_iob2_as_in_a_file(tmp_path):
    # IOB1: a span starts with I- unless it follows a span of its type
    pairs = [(["Ada", "Lovelace", "met", "Bob", "in", "Paris"],
              ["I-PER", "I-PER", "O", "I-PER", "O", "I-LOC"]),
             (["Ann", "Bea", "left"], ["I-PER", "B-PER", "O"])] * 3
    expected = [("B-PER", "I-PER", "O", "B-PER", "O", "B-LOC"), ("B-PER", "B-PER", "O")] * 3
    path = tmp_path / "iob1.txt"
    path.write_text("\n\n".join("\n".join(f"{w} {t}" for w, t in zip(*p, strict=True))
                                for p in pairs) + "\n", encoding="utf-8")
    names = ["O", "I-PER", "B-PER", "I-LOC"]  # the names of an IOB1 ClassLabel
    as_ids = datasets.Dataset.from_dict(
        {"words": [w for w, _ in pairs], "tags": [[names.index(t) for t in ts] for _, ts in pairs]},
        features=datasets.Features({"words": datasets.List(datasets.Value("string")),
                                    "tags": datasets.List(datasets.ClassLabel(names=names))}))
    for source in (_dataset(pairs, "string"), as_ids):
        got = load_corpus(source).sentences
        assert [s.tags for s in got] == expected
        assert got == read_conll(path).sentences


def test_a_document_column_groups_sentences_as_docstart_does(conll, tmp_path):
    pairs = _pairs(conll["train"])
    path = tmp_path / "docs.txt"
    blocks = ["\n".join(f"{w} {t}" for w, t in zip(*p, strict=True)) for p in pairs]
    path.write_text("\n\n".join(("-DOCSTART- O\n\n" if i % 4 == 0 else "") + b
                                for i, b in enumerate(blocks)) + "\n", encoding="utf-8")
    docs = [f"doc{i // 4 + 1}" for i in range(len(pairs))]  # the CoNLL reader's names
    string_ids = datasets.Value("string")
    for column, values in (("doc_id", docs), ("document_id", docs), ("article", docs)):
        ds = _dataset(pairs, **{column: (values, string_ids)})
        options = {"doc_column": column} if column == "article" else {}
        assert load_corpus(ds, **options).sentences == read_conll(path).sentences
    numbers = _dataset(pairs, doc_id=([i // 4 for i in range(len(pairs))],
                                      datasets.Value("int64")))
    assert [s.doc_id for s in load_corpus(numbers)] == [str(i // 4) for i in range(len(pairs))]
    # whole documents are drawn for a subset, as from the CoNLL file
    ds = datasets.DatasetDict({"train": _dataset(pairs, doc_id=(docs, string_ids)),
                               "validation": _dataset(pairs[:4])})
    ds.save_to_disk(str(tmp_path / "saved"))
    common = dict(max_train_sentences=10, subset_unit="document", subset_seed=3, test_split=None)
    on_hf = load_data(TrainConfig(dataset=str(tmp_path / "saved"), **common))
    on_file = load_data(TrainConfig(dataset=str(path), eval_split=str(path), **common))
    assert on_hf.train == on_file.train and len(on_hf.train) == 12


def test_the_cli_evaluates_parquet_as_the_conll_file(conll, conll_run, tmp_path):
    run, _ = conll_run
    _dict(conll)["test"].to_parquet(str(tmp_path / "test.parquet"))
    outs = [seqrep("evaluate", str(run / "best"), "--dataset", str(source), "--json")
            for source in (tmp_path / "test.parquet", conll["test"])]
    assert [o.returncode for o in outs] == [0, 0], [o.stderr for o in outs]
    hf, on_file = (_scores(json.loads(o.stdout)) for o in outs)
    where = {"dataset", "name", "source"}  # the only figures that name the data
    assert {k: v for k, v in hf.items() if k not in where} == \
        {k: v for k, v in on_file.items() if k not in where}


def test_hf_names_load_through_load_dataset_with_named_columns(conll, monkeypatch):
    asked = []

    def load_dataset(path, name=None, **kw):  # noqa: ANN001, ANN003, ANN202 - the stand-in
        asked.append((path, name))
        renamed = _dict(conll)
        return renamed.rename_columns({"tokens": "toks", "ner_tags": "labels_bio"})

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    _same_as_conll("hf:org/toy:english", conll, tokens_column="toks", tags_column="labels_bio")
    assert set(asked) == {("org/toy", "english")}
    ran = seqrep("data", "stats", "hf:org/toy", "--split", "dev", "--tokens-column", "toks",
                 "--tags-column", "labels_bio", "--json")
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["sentences"] == len(_pairs(conll["validation"]))


def _one_line_exit_2(*args: str) -> str:
    ran = seqrep(*args)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert "Traceback" not in ran.stderr and len(ran.stderr.strip().splitlines()) == 1, ran.stderr
    return ran.stderr.strip()


def test_bad_datasets_stop_in_one_line_exit_2(conll, tmp_path, monkeypatch):
    pairs = _pairs(conll["test"])
    no_tags = datasets.Dataset.from_dict({"tokens": [w for w, _ in pairs],
                                          "id": list(range(len(pairs)))})
    no_tags.save_to_disk(str(tmp_path / "no_tags"))
    err = _one_line_exit_2("data", "stats", str(tmp_path / "no_tags"))
    assert "no tags column" in err and "ner_tags" in err and "the columns are tokens, id" in err
    err = _one_line_exit_2("data", "stats", str(tmp_path / "no_tags"), "--tags-column", "iob")
    assert "no column 'iob'" in err and "the columns are tokens, id" in err
    mixed = ["O", "B-PER", "I-PER", "LOC"]  # a plain label beside prefixed tags, both used
    bad_names = datasets.Dataset.from_dict(
        {"tokens": [["a", "b"]], "ner_tags": [[1, 3]]},
        features=datasets.Features({"tokens": datasets.List(datasets.Value("string")),
                                    "ner_tags": datasets.List(datasets.ClassLabel(names=mixed))}))
    bad_names.to_parquet(str(tmp_path / "bad.parquet"))
    err = _one_line_exit_2("data", "stats", str(tmp_path / "bad.parquet"))
    assert "ClassLabel names" in err and "'LOC'" in err and "expected" in err
    datasets.DatasetDict({"train": _dataset(pairs)}).save_to_disk(str(tmp_path / "only_train"))
    err = _one_line_exit_2("data", "stats", str(tmp_path / "only_train"), "--split", "test")
    assert "no test split" in err and "the splits are train" in err
    uneven = datasets.Dataset.from_dict({"tokens": [["a", "b"]], "ner_tags": [["O"]]})
    uneven.to_parquet(str(tmp_path / "uneven.parquet"))
    err = _one_line_exit_2("data", "stats", str(tmp_path / "uneven.parquet"))
    assert "row 1" in err and "2 words but 1 tags" in err

    def offline(*args, **kw):  # noqa: ANN002, ANN003, ANN202
        raise ConnectionError("Couldn't reach 'org/missing' on the Hub (LocalEntryNotFoundError)")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    err = _one_line_exit_2("data", "stats", "hf:org/missing")
    assert "hf:org/missing" in err and "Couldn't reach" in err
    err = _one_line_exit_2("data", "stats", "hf:")
    assert "expected hf:ORG/NAME" in err


def test_a_bad_dataset_stops_train_before_anything_is_written(conll, tiny, tmp_path):
    """The same refusals from ``seqrep train``: one line, exit 2, and no run folder made."""
    pairs = _pairs(conll["test"])
    datasets.Dataset.from_dict({"tokens": [w for w, _ in pairs]}).save_to_disk(
        str(tmp_path / "no_tags"))
    mixed = datasets.Dataset.from_dict(
        {"tokens": [["a", "b"]], "ner_tags": [[1, 3]]},
        features=datasets.Features({"tokens": datasets.List(datasets.Value("string")),
                                    "ner_tags": datasets.List(datasets.ClassLabel(
                                        names=["O", "B-PER", "I-PER", "LOC"]))}))
    mixed.to_parquet(str(tmp_path / "mixed.parquet"))
    for data, says in ((tmp_path / "no_tags", "no tags column"),
                       (tmp_path / "mixed.parquet", "ClassLabel names")):
        out = tmp_path / "run"
        err = _one_line_exit_2("train", "--model", tiny("llama"), "--dataset", str(data),
                               "--test-split", "", "--max-steps", "1", "-o", str(out))
        assert says in err, err
        assert not out.exists()
