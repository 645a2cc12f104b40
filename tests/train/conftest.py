"""Fixtures of the training tests: a synthetic CoNLL corpus (train and test files)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import write_corpus


@pytest.fixture()
def corpus(tmp_path: Path) -> tuple[str, str]:
    """60 training and 12 test sentences of the toy 'PER VERB the city of LOC .' task."""
    return (str(write_corpus(tmp_path / "train.txt", 60)),
            str(write_corpus(tmp_path / "test.txt", 12, seed=1)))
