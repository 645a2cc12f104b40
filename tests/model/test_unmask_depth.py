"""``unmask=middle`` names the middle of the model's own depth, whatever the exit layer."""

from __future__ import annotations

from pathlib import Path

import pytest

from seqrep.model.labeler import SequenceLabeler

LABELS = ["O", "B-PER", "I-PER"]


@pytest.mark.parametrize("exit_layer,expected", [(None, [3, 4, 5, 6, 7, 8]),
                                                 (10, [3, 4, 5, 6, 7, 8]),
                                                 (6, [3, 4, 5])])
def test_middle_is_resolved_against_the_full_depth(tiny, exit_layer, expected) -> None:
    # 12 layers: c = 2 * floor(12 / 6) = 4, layers 12/2 - 1 - 2 = 3 .. 12/2 + 2 = 8; a model
    # cut at L keeps those below L, so the probe of the full model (--exit-layer auto), a lab
    # probe cut at its deepest layer and the model trained at L unmask the same layers
    lab = SequenceLabeler.from_model(tiny("llama", 12), labels=LABELS, unmask="middle",
                                     exit_layer=exit_layer)
    assert lab.layers_unmasked == expected
    assert lab.config.unmask == ",".join(map(str, expected))  # recorded, not re-resolved


def test_saved_labeler_keeps_the_resolved_layers(tiny, tmp_path: Path) -> None:
    # a fully fine-tuned labeler saves its cut backbone (6 layers): reloaded, "middle" would
    # be the middle of 6, so the config records the layers themselves
    lab = SequenceLabeler.from_model(tiny("llama", 12), labels=LABELS, unmask="middle",
                                     exit_layer=6, finetune="full")
    lab.save_pretrained(tmp_path / "lab")
    again = SequenceLabeler.from_pretrained(tmp_path / "lab")
    assert again.layers_unmasked == [3, 4, 5]
