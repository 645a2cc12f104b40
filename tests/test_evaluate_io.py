"""``seqrep evaluate`` for a quick check: a sentence limit, progress on stderr also with
--json, its predictions in conlleval's ``word gold predicted`` columns that ``seqrep score``
reads back to the same scores, a missing file named as such, and the spans a reader did not
read as written counted on screen (also when training reads its data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import write_corpus

from seqrep.cli.app import main
from seqrep.model.labeler import SequenceLabeler

LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]


@pytest.fixture(scope="module")
def folder(tiny, tmp_path_factory: pytest.TempPathFactory) -> Path:
    lab = SequenceLabeler.from_model(tiny("llama"), labels=LABELS, finetune="frozen")
    return lab.save_pretrained(tmp_path_factory.mktemp("evaluate_io") / "lab")


def _cli(capsys: pytest.CaptureFixture, *args: object) -> tuple[int, str, str]:
    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as ex:
        code = ex.code
    got = capsys.readouterr()
    return code, got.out, got.err


def test_sentence_limit_and_progress_with_json(folder: Path, tmp_path: Path, capsys) -> None:
    data = write_corpus(tmp_path / "gold.txt", 12)
    code, out, err = _cli(capsys, "evaluate", folder, "--dataset", data, "--json",
                          "--max-sentences", 3)
    assert code == 0, err
    result = json.loads(out)
    # write_corpus gives every sentence one PER and one LOC span
    assert result["sentences"] == 3 and result["gold_spans"] == 6
    assert "3 sentences" in err and "sentences/s" in err  # progress stays on stderr
    code, out, err = _cli(capsys, "evaluate", folder, "--dataset", data, "--json", "--quiet")
    assert code == 0 and json.loads(out)["sentences"] == 12 and "sentences/s" not in err
    code, _, err = _cli(capsys, "evaluate", folder, "--dataset", data, "--max-sentences", 0)
    assert code == 2 and "--max-sentences" in err


@pytest.mark.parametrize("decoding", ["constrained", "greedy"])
def test_predictions_file_scores_the_same_with_score(folder: Path, tmp_path: Path, capsys,
                                                     decoding: str) -> None:
    data = write_corpus(tmp_path / "gold.txt", 8, seed=5)
    preds = tmp_path / "pred.txt"
    code, out, err = _cli(capsys, "evaluate", folder, "--dataset", data, "--json",
                          "--decoding", decoding, "--predictions", preds)
    assert code == 0, err
    result = json.loads(out)
    assert result["predicted_spans"] > 0  # a random head: spans to score, not all O
    rows = [line.split(" ") for line in preds.read_text(encoding="utf-8").split("\n")]
    gold_rows = [line.split(" ") for line in data.read_text(encoding="utf-8").split("\n")]
    # word and gold as in the file, one predicted tag per word, blank lines between sentences
    assert [r[:2] for r in rows] == gold_rows and all(len(r) in (1, 3) for r in rows)
    for bad in (data, tmp_path, tmp_path / "no" / "p.txt"):  # never the gold, a folder ...
        code, _, err = _cli(capsys, "evaluate", folder, "--dataset", data, "--predictions", bad)
        assert code == 2 and "--predictions" in err and len(err.strip().splitlines()) == 1
    assert [r[:2] for r in rows] == gold_rows
    code, out, err = _cli(capsys, "score", preds, "--json")
    assert code == 0, err
    scored = json.loads(out)
    for key in ("precision", "recall", "f1", "sentences"):
        assert scored[key] == pytest.approx(result[key]), key


def test_missing_dataset_file_says_so(folder: Path, tmp_path: Path, capsys,
                                      monkeypatch) -> None:
    import seqrep.export

    def fail(*a: object, **k: object) -> None:
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(seqrep.export, "load_labeler", fail)
    code, _, err = _cli(capsys, "evaluate", folder, "--dataset", tmp_path / "missing.txt")
    assert code == 2 and "Traceback" not in err
    line = err.strip().splitlines()[-1]
    assert "missing.txt" in line and "no such file" in line and "split" not in line, err


def _overlapping(path: Path) -> Path:
    """JSONL gold with one overlapping span (dropped by the reader) and one duplicate."""
    path.write_text(
        '{"text": "Obama visited Paris", "spans": [{"start": 0, "end": 5, "label": "PER"}, '
        '{"start": 0, "end": 13, "label": "LOC"}, {"start": 14, "end": 19, "label": "LOC"}]}\n'
        '{"text": "Maria left Tokyo", "spans": [{"start": 11, "end": 16, "label": "LOC"}, '
        '{"start": 11, "end": 16, "label": "LOC"}]}\n', encoding="utf-8")
    return path


def test_evaluate_counts_the_reader_notes(folder: Path, tmp_path: Path, capsys) -> None:
    data = _overlapping(tmp_path / "gold.jsonl")
    code, out, err = _cli(capsys, "evaluate", folder, "--dataset", data, "--json")
    assert code == 0, err
    assert json.loads(out)["gold_spans"] == 3
    assert "2 reader notes" in err and "1 overlapping" in err and "1 duplicate" in err, err


def test_training_data_counts_the_reader_notes(tmp_path: Path, capsys) -> None:
    from seqrep.config import TrainConfig
    from seqrep.data.splits import load_data

    train = _overlapping(tmp_path / "train.jsonl")
    test = _overlapping(tmp_path / "test.jsonl")
    load_data(TrainConfig(dataset=str(train), eval_split=str(train), test_split=str(test)))
    err = capsys.readouterr().err
    assert err.count("2 reader notes") == 3, err  # train, validation and test files
    assert "train.jsonl" in err and "test.jsonl" in err


def test_predictions_are_written_as_the_spans_scored(tmp_path: Path) -> None:
    # a stray I-PER (greedy decoding) is in no span when evaluating (seqeval strict), so the
    # file holds O there: score reads back P 1/1, R 1/2 (F1 2/3), not a PER span
    from seqrep.cli.evaluate import write_predictions
    from seqrep.data.types import Sentence
    from seqrep.evaluate import score_file

    path = tmp_path / "pred.txt"
    gold = [Sentence(["Obama", "in", "Paris"], ["B-PER", "O", "B-LOC"])]
    write_predictions(path, gold, [["I-PER", "O", "B-LOC"]])
    assert path.read_text(encoding="utf-8") == "Obama B-PER O\nin O O\nParis B-LOC B-LOC\n\n"
    assert score_file(path)["f1"] == pytest.approx(2 / 3)


def test_predictions_never_replace_other_files(folder: Path, tmp_path: Path, capsys) -> None:
    data = write_corpus(tmp_path / "gold.txt", 4, seed=5)
    other = tmp_path / "notes.txt"
    other.write_text("two columns\n", encoding="utf-8")  # no 'word gold predicted' file
    three = tmp_path / "three.txt"  # a dataset of three columns reads like predictions
    three.write_text("Obama NNP B-PER\nleft VBD O\n", encoding="utf-8")
    for data_file, bad in ((data, other), (three, three)):
        code, _, err = _cli(capsys, "evaluate", folder, "--dataset", data_file,
                            "--predictions", bad)
        assert code == 2 and "--predictions" in err, err
    assert other.read_text(encoding="utf-8") == "two columns\n"
    assert three.read_text(encoding="utf-8") == "Obama NNP B-PER\nleft VBD O\n"
