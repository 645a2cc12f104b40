"""A run's splits (``seqrep.data.splits.load_data``): which settings name files."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import write_corpus

from seqrep.config import TrainConfig
from seqrep.data import datasets
from seqrep.data.splits import load_data


def test_whether_a_setting_is_a_file_is_asked_once_per_setting(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    """The dataset and each split setting: one question each about the file system, the
    answer passed on (a training file, a carved validation split, a test file)."""
    train = str(write_corpus(tmp_path / "train.conll", 20))
    test = str(write_corpus(tmp_path / "test.conll", 4, seed=1))
    asked: list[str] = []
    real = datasets.holds_one_split
    monkeypatch.setattr(datasets, "holds_one_split",
                        lambda path: asked.append(str(path)) or real(path))
    data = load_data(TrainConfig(dataset=train, train_split="train", test_split=test))
    assert (len(data.train), len(data.eval), len(data.test)) == (18, 2, 4)
    assert sorted(asked) == sorted([train, "train", "validation", test])
