"""The no-documents notice of document context is said once per launch: by the main process
only when training runs in several processes (torchrun sets RANK), as the corpus notes are."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import train_configs, write_corpus

import seqrep.train.run as run_module
from seqrep.train import train

NOTICE = "notice: context=document"


class Stop(Exception):
    """Raised where the model would be built: the notice comes before it."""


@pytest.mark.parametrize("rank,expected", [("0", 1), ("1", 0)])
def test_the_notice_comes_from_the_main_process_only(tmp_path: Path, rank: str, expected: int,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture) -> None:
    corpus = (str(write_corpus(tmp_path / "train.txt", 16)),
              str(write_corpus(tmp_path / "test.txt", 4, seed=1)))
    lab, cfg = train_configs("unused-model", corpus, epochs=1)

    def stop(*args, **kwargs):
        raise Stop

    monkeypatch.setattr(run_module, "Trainer", stop)
    monkeypatch.setenv("RANK", rank)
    with pytest.raises(Stop):
        train(lab.replace(context="document"), cfg, tmp_path / "run", quiet=True)
    assert capsys.readouterr().err.count(NOTICE) == expected
