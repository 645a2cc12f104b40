"""Fixtures for the data tests: the committed tiny files and the shared real datasets.

Real-data tests take ``data_root`` (``$SEQREP_DATA``, else ``../shared/data`` beside the
repository) and skip when
the dataset they need is missing there; ``seqrep_data`` also points ``SEQREP_DATA`` at it so
that named datasets resolve.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from made_files import write_made_files

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "data"
DEFAULT_DATA = str(Path(__file__).resolve().parents[2].parent / "shared" / "data")


@pytest.fixture(scope="session")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of tiny data files: the committed ones plus those the tests write."""
    root = tmp_path_factory.mktemp("fixtures")
    shutil.copytree(FIXTURES, root, dirs_exist_ok=True)
    write_made_files(root)
    return root


@pytest.fixture(scope="session")
def data_root() -> Path:
    """The shared data directory; skips the test when it is missing."""
    root = Path(os.environ.get("SEQREP_DATA") or DEFAULT_DATA)  # empty means unset, as in seqrep
    if not root.is_dir():
        pytest.skip(f"shared data directory {root} is missing (set SEQREP_DATA)")
    return root


def _need(root: Path, name: str) -> Path:
    path = root / name
    if not path.is_dir():
        pytest.skip(f"{path} is missing")
    return path


@pytest.fixture(scope="session")
def conll2003_dir(data_root: Path) -> Path:
    """``<data>/conll2003`` (eng.train, eng.testa, eng.testb)."""
    return _need(data_root, "conll2003")


@pytest.fixture(scope="session")
def rest14_dir(data_root: Path) -> Path:
    """``<data>/rest14`` (semeval2014_xml/, bert_e2e_absa/)."""
    return _need(data_root, "rest14")


@pytest.fixture(scope="session")
def nlupp_dir(data_root: Path) -> Path:
    """``<data>/nlupp`` (data/banking, data/hotels)."""
    return _need(data_root, "nlupp")


@pytest.fixture
def seqrep_data(data_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Set ``SEQREP_DATA`` to the shared data directory for named-dataset tests."""
    monkeypatch.setenv("SEQREP_DATA", str(data_root))
    return data_root
