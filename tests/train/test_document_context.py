"""Training and evaluation with document context (issue 24): the setting reaches run.json and
the saved labeler, evaluation stays per sentence, a corpus without documents gets one notice,
and a bad budget is one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import cli, train_configs, with_documents, write_corpus

from seqrep.cli.app import main
from seqrep.data import load_corpus
from seqrep.data.splits import load_data
from seqrep.data.tasks import SPANS
from seqrep.encode.document import chunk_spans
from seqrep.evaluate import evaluate, shard_indices
from seqrep.model.labeler import SequenceLabeler
from seqrep.train import train
from seqrep.train.loop import Trainer

NOTICE = "notice: context=document"


def test_a_run_with_document_context_records_saves_and_evaluates_it(
        tiny, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    train_file = with_documents(write_corpus(tmp_path / "train.txt", 40), 8)
    test_file = with_documents(write_corpus(tmp_path / "test.txt", 12, seed=1), 6)
    lab, cfg = train_configs(tiny("llama"), (str(train_file), str(test_file)), epochs=1)
    lab = lab.replace(context="document", context_tokens=32)
    metrics = train(lab, cfg, tmp_path / "run", quiet=True)
    assert metrics["status"] == "finished"
    assert NOTICE not in capsys.readouterr().err  # every split has documents
    saved = json.loads((tmp_path / "run" / "run.json").read_text())
    assert saved["labeler"]["context"] == "document"
    assert saved["labeler"]["context_tokens"] == 32
    best = SequenceLabeler.from_pretrained(tmp_path / "run")
    assert (best.config.context, best.config.context_tokens) == ("document", 32)
    # evaluation is per sentence: the same 12 sentences and gold spans, and the scores the
    # run reported, also when evaluated in chunks smaller than a document
    test = load_corpus(str(test_file), "train").sentences
    assert {s.doc_id for s in test} == {"doc1", "doc2"}
    again = evaluate(best, test, progress=lambda n: None, batch_size=1)
    assert again["sentences"] == 12 and again["gold_spans"] == metrics["test"]["gold_spans"]
    assert again["f1"] == pytest.approx(metrics["test"]["f1"])
    assert again["predicted_spans"] == metrics["test"]["predicted_spans"]
    capsys.readouterr()
    code = 0
    try:
        main(["evaluate", str(tmp_path / "run"), "--dataset", str(test_file), "--json"])
    except SystemExit as ex:
        code = ex.code
    out = capsys.readouterr()
    assert code in (0, None) and NOTICE not in out.err, out.err
    assert json.loads(out.out)["f1"] == pytest.approx(metrics["test"]["f1"])
    # the training rows hold several sentences of a document, each word once
    trainer = Trainer(best.config, cfg, tmp_path / "again", load_data(cfg), quiet=True)
    assert max(len({s for s, _ in it.targets()}) for it in trainer.items) > 1
    assert sum(len(it.targets()) for it in trainer.items) == \
        sum(len(s) for s in trainer.data.train)
    assert sum(it.starts for it in trainer.items) == len(trainer.data.train)


def test_chunks_and_shards_keep_documents_whole() -> None:
    docs = ["a"] * 4 + ["b"] * 2 + [None] * 4
    assert chunk_spans(10, 3, docs) == [(0, 4), (4, 7), (7, 10)]
    assert chunk_spans(10, 3, None) == [(0, 3), (3, 6), (6, 9), (9, 10)]
    docs = ["a", "a", "b", None, "c", "c", "c"]
    assert shard_indices(7, docs, 0, 2) == [0, 1, 3]
    assert shard_indices(7, docs, 1, 2) == [2, 4, 5, 6]
    assert shard_indices(5, None, 1, 2) == [1, 3]


def test_a_corpus_without_documents_gets_one_notice(tiny, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture) -> None:
    corpus = (str(write_corpus(tmp_path / "train.txt", 16)),
              str(write_corpus(tmp_path / "test.txt", 4, seed=1)))
    lab, cfg = train_configs(tiny("llama"), corpus, epochs=1)
    metrics = train(lab.replace(context="document"), cfg, tmp_path / "run", quiet=True)
    assert metrics["status"] == "finished"
    err = capsys.readouterr().err
    assert err.count(NOTICE) == 1, err
    line = next(x for x in err.splitlines() if NOTICE in x)
    assert "training split" in line and "test split" in line


@pytest.mark.parametrize("value", ["0", "-3"])
def test_a_budget_of_no_tokens_is_one_line_exit_2(tmp_path: Path, value: str,
                                                  capsys: pytest.CaptureFixture) -> None:
    data = write_corpus(tmp_path / "train.txt", 4)
    code, _, err = cli(capsys, "train", "--dataset", str(data), "--output",
                    str(tmp_path / "run"), "--context", "document", "--context-tokens", value)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "context_tokens" in err, err
    assert not (tmp_path / "run").exists()


def test_an_unknown_context_is_one_line_exit_2(tmp_path: Path,
                                              capsys: pytest.CaptureFixture) -> None:
    data = write_corpus(tmp_path / "train.txt", 4)
    code, _, err = cli(capsys, "train", "--dataset", str(data), "--output",
                    str(tmp_path / "run"), "--context", "page")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "context" in err, err


def test_exit_layer_auto_probes_with_document_context(tiny, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list = []
    original = SequenceLabeler.layer_states

    def layer_states(self, sentences, layers, batch_size=32, max_tokens=None, docs=None):
        seen.append(docs)
        return original(self, sentences, layers, batch_size, docs=docs)

    monkeypatch.setattr(SequenceLabeler, "layer_states", layer_states)
    train_file = with_documents(write_corpus(tmp_path / "train.txt", 24), 6)
    lab, cfg = train_configs(tiny("llama"), (str(train_file), ""), epochs=1)
    lab = lab.replace(context="document", context_tokens=32, exit_layer="auto")
    metrics = train(lab, cfg.replace(test_split=None), tmp_path / "run", quiet=True)
    assert metrics["status"] == "finished" and 1 <= metrics["exit_layer"] <= 4
    # the training subset and the validation split, each with its document ids
    assert len(seen) == 2 and all(d and all(x.startswith("doc") for x in d) for d in seen)


def test_a_training_batch_counts_sentences_unless_asked_for_rows(tiny, tmp_path: Path) -> None:
    """--batch-size is sentences per batch at either context: a document batch holds rows
    reading at most that many sentences together (a row alone may read more); --batch-rows
    counts model rows, as runs before the option did (fewer, larger steps)."""
    train_file = with_documents(write_corpus(tmp_path / "train.txt", 40), 8)
    test_file = write_corpus(tmp_path / "test.txt", 6, seed=1)
    lab, cfg = train_configs(tiny("llama"), (str(train_file), str(test_file)), epochs=1,
                             batch_size=6)
    data = load_data(cfg)
    lab = lab.replace(context="document", context_tokens=40,
                      labels=SPANS.inventory(data.train + data.eval))
    steps = {}
    for rows in (False, True):
        trainer = Trainer(lab, cfg.replace(batch_rows=rows), tmp_path / f"r{rows}", data,
                          quiet=True)
        read = [len({s for s, _ in trainer.items[i].targets()}) for i in
                range(len(trainer.items))]
        assert max(read) > 1  # rows hold several sentences
        batches = trainer.epoch_batches(0)
        assert sorted(i for b in batches for i in b) == list(range(len(trainer.items)))
        if rows:
            assert all(len(b) <= 6 for b in batches) and any(len(b) == 6 for b in batches)
        else:
            assert all(len(b) == 1 or sum(read[i] for i in b) <= 6 for b in batches)
            # sentences, not words: rows batched together read more than 6 words
            words = [len(trainer.items[i].targets()) for i in range(len(trainer.items))]
            assert any(len(b) > 1 and sum(words[i] for i in b) > 6 for b in batches)
        steps[rows] = len(batches)
    assert steps[False] > steps[True]  # counting sentences: more, smaller steps


@pytest.mark.parametrize("saved_rows", [None, False, True])
def test_a_resumed_run_batches_as_it_was_saved(tmp_path: Path, saved_rows: bool | None) -> None:
    """A document run saved before --batch-rows existed counted model rows: resuming it
    keeps counting rows (its run.json has no batch_rows), so the resumed run trains the
    batches the interrupted one planned; a run that saved the field keeps its value."""
    from seqrep.config import LabelerConfig, TrainConfig
    from seqrep.train.folder import resumed_config

    run = tmp_path / "run"
    run.mkdir()
    train = {"epochs": 1, "batch_size": 4}
    if saved_rows is not None:
        train["batch_rows"] = saved_rows
    (run / "run.json").write_text(json.dumps(
        {"labeler": {"model": "m", "context": "document"}, "train": train}), encoding="utf-8")
    _, cfg, _ = resumed_config(run, LabelerConfig(), TrainConfig())
    assert cfg.batch_rows is (True if saved_rows is None else saved_rows)
    assert cfg.batch_size == 4
