"""The lab's layer probe keeps, per layer, the decoding that scores higher on validation, a tie
going to constrained (the training rule, seqrep.evaluate.choose_decoding). Validation scores
are set by hand here."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import write_corpus

import seqrep.lab.probe as probe_module
from seqrep.config import LabelerConfig, TrainConfig


@pytest.mark.parametrize("greedy,constrained,kept", [(0.5, 0.6, "constrained"),
                                                     (0.5, 0.5, "constrained"),
                                                     (0.6, 0.5, "greedy")])
def test_each_layer_keeps_the_better_decoding(tiny, tmp_path: Path, monkeypatch,
                                              greedy: float, constrained: float,
                                              kept: str) -> None:
    def fixed(logits, gold, labels, task="spans"):  # noqa: ANN001, ANN202
        return {"greedy": {"f1": greedy}, "constrained": {"f1": constrained}}

    monkeypatch.setattr(probe_module, "scores_by_decoding", fixed)
    data = write_corpus(tmp_path / "train.txt", 20)
    out = probe_module.run_probe(LabelerConfig(model=tiny("llama"), repetitions=1),
                                 TrainConfig(dataset=str(data), test_split=None), [1, 2], None,
                                 epochs=1)
    assert [(r["decoding"], r["validation"]["f1"]) for r in out] == \
        [(kept, max(greedy, constrained))] * 2
