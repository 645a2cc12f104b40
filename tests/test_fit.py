"""seqrep.train_labeler: a corpus in memory passes wherever a dataset name or a file does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import write_corpus

from seqrep import Corpus, Sentence, load_corpus, train_labeler
from seqrep.config import LabelerConfig, TrainConfig
from seqrep.errors import ConfigError, DataError
from seqrep.train.run import train

SETTINGS = dict(repetitions=1, exit_layer=2, epochs=3, batch_size=8, lr=3e-3, head_lr=1e-2,
                seed=7)


def _pairs(path: Path) -> list[tuple[list[str], list[str]]]:
    """The sentences of a 'word tag' file, read here by hand (not by seqrep's reader)."""
    out = []
    for block in path.read_text(encoding="utf-8").strip().split("\n\n"):
        rows = [line.split() for line in block.splitlines()]
        out.append(([r[0] for r in rows], [r[1] for r in rows]))
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("fit")
    return write_corpus(root / "train.txt", 40), write_corpus(root / "test.txt", 8, seed=1)


def test_pairs_in_memory_train_as_the_same_file_does(tiny, files, tmp_path, monkeypatch):
    monkeypatch.setenv("SEQREP_CACHE", str(tmp_path / "cache"))
    train_file, test_file = files
    model = tiny("llama")
    labeler, metrics = train_labeler(_pairs(train_file), test=_pairs(test_file), model=model,
                                     output=tmp_path / "memory", quiet=True, **SETTINGS)
    lab_keys = {"repetitions", "exit_layer"}
    on_file = train(LabelerConfig(model=model, **{k: SETTINGS[k] for k in lab_keys}),
                    TrainConfig(dataset=str(train_file), test_split=str(test_file),
                                **{k: v for k, v in SETTINGS.items() if k not in lab_keys}),
                    tmp_path / "file", quiet=True)
    # the same sentences, carved the same way, give the same scores and the same labels
    def scores(m):  # noqa: ANN001, ANN202 - everything but the times
        return {k: v for k, v in m.items() if "second" not in k}

    for split in ("validation", "test"):
        assert scores(metrics[split]) == scores(on_file[split])
    assert metrics["test"]["f1"] > 0.5  # it learned: the comparison is not of two zeros
    assert labeler.config.labels == json.loads(
        (tmp_path / "file" / "best" / "config.json").read_text())["labeler"]["labels"]
    # the run names a file holding exactly the sentences given, one JSON record a line
    dataset = Path(json.loads((tmp_path / "memory" / "run.json").read_text())["train"]["dataset"])
    records = [json.loads(line) for line in dataset.read_text().splitlines()]
    assert [(r["tokens"], r["tags"]) for r in records] == _pairs(train_file)
    assert dataset.parent == tmp_path / "cache" / "corpora"


def test_sentences_and_mappings_and_iob1_tags(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("SEQREP_CACHE", str(tmp_path / "cache"))
    # IOB1, as the original CoNLL-2003 files: a span starts with I- unless it follows one
    # of its type; read like a file, it becomes IOB2 (B-PER), so B-PER is a label
    iob1 = [{"tokens": ["Obama", "visited", "Paris"], "tags": ["I-PER", "O", "I-LOC"]},
            Sentence(("Maria", "left", "Berlin"), ("I-PER", "O", "I-LOC"))] * 10
    labeler, metrics = train_labeler(iob1, validation=iob1[:4], model=tiny("llama"),
                                     output=tmp_path / "run", quiet=True, **SETTINGS)
    assert {"B-PER", "B-LOC"} <= set(labeler.config.labels)
    assert metrics["status"] == "finished" and not metrics.get("test")
    record = json.loads((tmp_path / "run" / "run.json").read_text())["train"]
    assert record["test_split"] is None  # no test was given, and the record says so
    dataset = record["dataset"]
    first = load_corpus(dataset).sentences[0]
    assert first.tags == ("B-PER", "O", "B-LOC")


@pytest.mark.parametrize("bad, where", [
    ([(["a", "b"], ["O"])], "train[0]: 2 words but 1 tags"),
    ([(["a"], ["O"]), "just text"], "train[1]: 'just text'; expected a Sentence"),
    ([(["a"], [1])], "train[0]: tags are [1]; expected a list of strings"),
    ([], "train: no sentences"),
])
def test_bad_sentences_are_one_line_naming_the_item(tiny, tmp_path, monkeypatch, bad, where):
    monkeypatch.setenv("SEQREP_CACHE", str(tmp_path / "cache"))
    with pytest.raises(DataError) as err:
        train_labeler(bad, model=tiny("llama"), output=tmp_path / "run", quiet=True)
    assert str(err.value).startswith(where)
    assert not (tmp_path / "run").exists()


def test_an_unknown_setting_is_refused_before_anything_runs(tiny, tmp_path):
    with pytest.raises(ConfigError, match="unknown setting epoch="):
        train_labeler([(["a"], ["O"])], model=tiny("llama"), output=tmp_path / "run",
                      epoch=3)
    with pytest.raises(ConfigError, match="unknown setting dataset="):
        train_labeler([(["a"], ["O"])], model=tiny("llama"), output=tmp_path / "run",
                      dataset="conll2003")


def _expected_cache(pairs) -> tuple[str, str]:
    """The cache file's text and name for ``pairs``, built here by hand: one JSON record a
    line, named by the SHA-256 of the text."""
    import hashlib

    text = "".join(json.dumps({"tokens": w, "tags": t}, ensure_ascii=False) + "\n"
                   for w, t in pairs)
    return text, hashlib.sha256(text.encode("utf-8")).hexdigest() + ".jsonl"


@pytest.mark.parametrize("planted", ["other", "longer", "link", "fifo"])
def test_a_cache_file_is_reused_only_when_it_holds_the_same_content(tmp_path, planted):
    import os

    from tampering import deadline

    from seqrep.train.fit import corpus_file

    pairs = [(["Ada", "left"], ["B-PER", "O"]), (["Bob"], ["B-PER"])]
    text, name = _expected_cache(pairs)
    folder = tmp_path / "cache" / "corpora"
    folder.mkdir(parents=True)
    path = folder / name
    if planted == "other":
        path.write_text(text.replace("Ada", "Eve"), encoding="utf-8")
    elif planted == "longer":
        path.write_text(text + text, encoding="utf-8")
    elif planted == "link":  # the same bytes, but in a file someone else may change
        (tmp_path / "theirs.jsonl").write_text(text, encoding="utf-8")
        path.symlink_to(tmp_path / "theirs.jsonl")
    else:
        os.mkfifo(path)
    with deadline(20):
        got = corpus_file(pairs, "train", tmp_path / "cache")
    assert got == path and not path.is_symlink() and path.is_file()
    assert path.read_text(encoding="utf-8") == text


def _pairs_dataset(pairs, tags_column: str):  # noqa: ANN001, ANN202 - a datasets.Dataset
    datasets = pytest.importorskip("datasets")
    return datasets.Dataset.from_dict({"words": [w for w, _ in pairs],
                                       tags_column: [t for _, t in pairs]})


def test_train_labeler_takes_the_reader_options(tiny, files, tmp_path, monkeypatch):
    monkeypatch.setenv("SEQREP_CACHE", str(tmp_path / "cache"))
    train_file, test_file = files
    pairs = _pairs(train_file)
    ds = _pairs_dataset(pairs, "iob")  # a tags column no name detects
    with pytest.raises(DataError, match="no tags column"):
        train_labeler(ds, model=tiny("llama"), output=tmp_path / "none", quiet=True)
    labeler, metrics = train_labeler(ds, validation=_pairs_dataset(_pairs(test_file), "iob"),
                                     tags_column="iob", model=tiny("llama"),
                                     output=tmp_path / "run", quiet=True, **SETTINGS)
    assert metrics["status"] == "finished"
    assert set(labeler.config.labels) >= {"B-PER", "I-PER", "B-LOC"}
    dataset = json.loads((tmp_path / "run" / "run.json").read_text())["train"]["dataset"]
    assert [(list(s.words), list(s.tags)) for s in load_corpus(dataset)] == pairs


def test_reader_options_reach_the_run_for_files_and_names(tiny, files, tmp_path,
                                                          monkeypatch):
    import seqrep.train.run
    from seqrep.data.splits import load_data

    pytest.importorskip("pyarrow.parquet")
    monkeypatch.setenv("SEQREP_CACHE", str(tmp_path / "cache"))
    train_file, test_file = files
    for source, target in ((train_file, "train.parquet"), (test_file, "test.parquet")):
        _pairs_dataset(_pairs(source), "iob").to_parquet(str(tmp_path / target))
    seen = {}

    class Stop(Exception):
        pass

    def run(labeler_config, train_config, output, **kw):  # noqa: ANN001, ANN003, ANN202
        seen.update(config=train_config, options=kw.get("reader_options"))
        raise Stop

    monkeypatch.setattr(seqrep.train.run, "train", run)
    with pytest.raises(Stop):
        train_labeler(str(tmp_path / "train.parquet"), str(tmp_path / "test.parquet"),
                      model=tiny("llama"), output=tmp_path / "run", tags_column="iob",
                      scheme="IOB2")
    assert seen["options"] == {"tags_column": "iob", "scheme": "IOB2"}
    data = load_data(seen["config"], seen["options"])
    assert [(list(s.words), list(s.tags)) for s in data.eval] == _pairs(test_file)


def test_reader_options_for_data_in_memory(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("SEQREP_CACHE", str(tmp_path / "cache"))
    model = tiny("llama")
    pairs = [(["Ada", "left"], ["I-PER", "O"])] * 3
    with pytest.raises(ConfigError, match="tags_column"):  # no column in a list of pairs
        train_labeler(pairs, model=model, output=tmp_path / "run", tags_column="x")
    with pytest.raises(ConfigError, match="in memory"):  # one run reads files one way
        train_labeler(pairs, validation=str(tmp_path / "v.txt"), model=model,
                      output=tmp_path / "run", scheme="IOB1")
    with pytest.raises(ConfigError, match="load_corpus"):  # a Corpus was read already
        train_labeler(Corpus([Sentence(*pairs[0])]), model=model, output=tmp_path / "run",
                      scheme="IOB1")
    with pytest.raises(DataError, match="I-PER"):  # strict: I-PER cannot start a span in IOB2
        train_labeler(pairs, model=model, output=tmp_path / "run", scheme="IOB2", strict=True)
    assert not (tmp_path / "run").exists()
