"""The model's classes come from the training and validation data, never from the test split:
a type seen only in test is no class, its spans stay in the test gold (counted as missed), and
one notice line names it. The model is never built: the run stops where it would be."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import write_corpus

from seqrep.config import LabelerConfig, TrainConfig


class Stop(Exception):
    """Raised where the model would be built; carries what the run would have used."""


def _test_file(tmp_path: Path) -> str:
    """The toy test split plus two sentences with a MISC span (in no training sentence)."""
    path = write_corpus(tmp_path / "test.txt", 4, seed=1)
    extra = "Obama B-PER\nlikes O\nGerman B-MISC\nbeer O\n\nEuro B-MISC\n2024 I-MISC\n"
    path.write_text(path.read_text(encoding="utf-8") + "\n" + extra, encoding="utf-8")
    return str(path)


def test_train_takes_labels_from_training_data(tmp_path: Path, monkeypatch,  # noqa: ANN001
                                               capsys: pytest.CaptureFixture) -> None:
    from seqrep.train import run

    seen = {}

    def fake_trainer(labeler_config, train_config, output, data, quiet, *rest):  # noqa: ANN001, ANN202
        seen.update(labels=list(labeler_config.labels), test=data.test)
        raise Stop

    monkeypatch.setattr(run, "Trainer", fake_trainer)
    train = write_corpus(tmp_path / "train.txt", 20)
    cfg = TrainConfig(dataset=str(train), test_split=_test_file(tmp_path), epochs=1)
    with pytest.raises(Stop):
        run.train(LabelerConfig(model="unused"), cfg, tmp_path / "out", quiet=True)
    # written out by hand: the training file has PER and LOC spans only
    assert seen["labels"] == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    # the MISC gold spans are kept, so they count as missed
    assert [s.tags for s in seen["test"][-2:]] == [("B-PER", "O", "B-MISC", "O"),
                                                   ("B-MISC", "I-MISC")]
    err = capsys.readouterr().err
    notices = [line for line in err.splitlines() if "MISC" in line]
    assert len(notices) == 1
    assert "the test split" in notices[0] and "cannot produce" in notices[0]
    assert "MISC (2 spans)" in notices[0]


def test_probe_takes_labels_from_training_data(tmp_path: Path, monkeypatch,  # noqa: ANN001
                                               capsys: pytest.CaptureFixture) -> None:
    from seqrep.lab import probe

    seen = {}

    def fake_model(**kw):  # noqa: ANN003, ANN202
        seen["labels"] = list(kw["labels"])
        raise Stop

    monkeypatch.setattr(probe.SequenceLabeler, "from_model", staticmethod(fake_model))
    train = write_corpus(tmp_path / "train.txt", 20)
    cfg = TrainConfig(dataset=str(train), test_split=_test_file(tmp_path), epochs=1)
    with pytest.raises(Stop):
        probe.run_probe(LabelerConfig(model="unused"), cfg, [1])
    assert seen["labels"] == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    err = capsys.readouterr().err
    assert sum("MISC (2 spans)" in line for line in err.splitlines()) == 1
