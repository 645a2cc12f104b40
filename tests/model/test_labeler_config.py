"""LabelerConfig's own checks (seqrep.model.labeler_config, moved from seqrep.config): each
refuses its bad value with the one line written out here by hand, and takes its edge values."""

from __future__ import annotations

import re

import pytest

from seqrep.config import LabelerConfig
from seqrep.errors import ConfigError


@pytest.mark.parametrize("kw,says", [
    ({"repetitions": 65}, "repetitions=65; expected 0 to 64"),
    ({"repetitions": -1}, "repetitions=-1; expected 0 to 64"),
    ({"max_subtokens": 7}, "max_subtokens=7; expected 8 to 131072"),
    ({"frozen_layers": 16385}, "frozen_layers=16385; expected 0 to 16384"),
    ({"lora_rank": 0}, "lora_rank=0; expected 1 to 16384"),
    ({"lora_alpha": 1048577}, "lora_alpha=1048577; expected 1 to 1048576"),
    ({"labels": ["O"] + [f"B-T{i}" for i in range(2048)]},
     "labels: 2049 tags, the longest of 7 characters; expected at most 2048 of at most 200"),
    ({"labels": ["O", "B-" + "X" * 199]},
     "labels: 2 tags, the longest of 201 characters; expected at most 2048 of at most 200"),
    ({"exit_layer": "top"}, "exit_layer='top'; expected a layer number, a fraction of the depth"
                            " such as 2/3, all, auto or default"),
    ({"exit_layer": 0}, "exit_layer=0; expected a layer number, a fraction of the depth such "
                        "as 2/3, all, auto or default"),
    ({"exit_layer": "0"}, "exit_layer=0; expected a layer number, a fraction of the depth such "
                          "as 2/3, all, auto or default"),
    ({"context_tokens": 131073}, "context_tokens=131073; expected 1 to 131072"),
    ({"dropout": 1.0}, "dropout=1.0; expected 0 <= dropout < 1"),
    ({"lora_dropout": -0.1}, "lora_dropout=-0.1; expected 0 <= lora_dropout < 1"),
    ({"labels": ["O", "B-PER", "I-PER", "B-PER"]}, "labels contain duplicates"),
])
def test_each_check_refuses_with_its_line(kw: dict, says: str) -> None:
    with pytest.raises(ConfigError, match="^" + re.escape(says) + "$"):
        LabelerConfig(**kw)


def test_the_edge_values_are_taken() -> None:
    cfg = LabelerConfig(repetitions=64, max_subtokens=8, lora_rank=1, exit_layer=" 3 ",
                        context_tokens=1, dropout=0.0, lora_dropout=0.99,
                        lora_targets=["q, k", "v"],
                        labels=["O"] + [f"B-T{i}" for i in range(2047)])
    assert (cfg.exit_layer, cfg.lora_targets, len(cfg.labels)) == (3, ["q", "k", "v"], 2048)
    assert LabelerConfig(context_tokens=131072).context_tokens == 131072
    assert LabelerConfig(exit_layer="auto").exit_layer == "auto"
    assert LabelerConfig(exit_layer=None).exit_layer is None
