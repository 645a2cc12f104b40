"""The exit layer's default (issue 39 item 5): 2/3 of a decoder's depth, every layer of an
encoder; fractions of the depth; ``all``; and saved labelers that keep the layer they were
saved at, old ones (no ``exit_layer`` recorded) at full depth. Every expected layer below is
worked out by hand from the model's depth."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from seqrep.config import LabelerConfig
from seqrep.errors import ConfigError, ModelError
from seqrep.model.labeler import SequenceLabeler

FORMS = "expected a layer number, a fraction of the depth such as 2/3, all, auto or default"


def test_the_default_is_named_and_all_means_every_layer() -> None:
    assert LabelerConfig().exit_layer == "default"
    assert LabelerConfig(exit_layer="all").exit_layer is None  # the form saved runs hold
    assert LabelerConfig(exit_layer=None).exit_layer is None
    assert LabelerConfig(exit_layer=" 3/4 ").exit_layer == "3/4"
    assert LabelerConfig(exit_layer="1/1").exit_layer == "1/1"
    assert LabelerConfig(exit_layer="12").exit_layer == 12


@pytest.mark.parametrize("value,shown", [
    ("3/2", "'3/2'"), ("0/3", "'0/3'"), ("x", "'x'"), ("2/0", "'2/0'"), ("-1/3", "'-1/3'"),
    ("2/3/4", "'2/3/4'"), ("", "''"), ("top", "'top'"), (0, "0"), ("0", "0"), (-2, "-2"),
    ("²", "'²'"), ("1/²", "'1/²'"),
])
def test_a_bad_exit_layer_is_one_line_naming_the_forms(value: object, shown: str) -> None:
    with pytest.raises(ConfigError, match="^" + re.escape(f"exit_layer={shown}; {FORMS}") + "$"):
        LabelerConfig(exit_layer=value)


@pytest.mark.parametrize("value,depth,encoder,layer", [
    ("default", 30, False, 20),  # SmolLM2-135M: 2/3 of 30
    ("default", 18, False, 12),  # Gemma-3-270m: 2/3 of 18
    ("default", 32, False, 21),  # Mistral-7B: 21.33 -> 21
    ("default", 4, False, 3),    # 2.67 -> 3
    ("default", 2, False, 1),    # 1.33 -> 1
    ("default", 1, False, 1),    # 0.67 -> 1
    ("default", 6, True, None),  # MiniLM-L6, an encoder: every layer
    ("default", 12, True, None),
    ("2/3", 6, True, 4),         # a fraction given for an encoder is honoured
    ("1/2", 5, False, 3),        # 2.5: halves round up
    ("1/30", 10, False, 1),      # 0.33: at least one layer
    ("1/1", 30, False, 30),
    ("3/4", 32, False, 24),
    (None, 30, False, None), (12, 30, False, 12), ("auto", 30, False, "auto"),
])
def test_a_fraction_resolves_against_the_depth(value: object, depth: int, encoder: bool,
                                               layer: object) -> None:
    from seqrep.model.exit_layer import resolve_exit_layer

    assert resolve_exit_layer(value, depth, encoder) == layer


def test_a_decoder_left_at_the_default_is_cut_at_two_thirds(tiny) -> None:
    lab = SequenceLabeler.from_model(tiny("llama"), labels=["O"])  # 4 layers: 2.67 -> 3
    assert (lab.backbone_info.num_layers, lab.config.exit_layer) == (3, 3)
    lab = SequenceLabeler.from_model(tiny("llama"), labels=["O"], exit_layer="1/2")
    assert (lab.backbone_info.num_layers, lab.config.exit_layer) == (2, 2)
    lab = SequenceLabeler.from_model(tiny("llama"), labels=["O"], exit_layer="all")
    assert (lab.backbone_info.num_layers, lab.config.exit_layer) == (4, None)


def test_an_encoder_left_at_the_default_keeps_every_layer(tiny) -> None:
    lab = SequenceLabeler.from_model(tiny("bert"), labels=["O"])
    assert (lab.backbone_info.num_layers, lab.config.exit_layer) == (4, None)


def _saved(tiny, tmp_path: Path, **kw: object) -> Path:
    folder = tmp_path / "lab"
    SequenceLabeler.from_model(tiny("llama"), labels=["O", "B-X", "I-X"], finetune="frozen",
                               **kw).save_pretrained(folder)
    return folder


def _edit(folder: Path, change: object) -> None:
    cfg = folder / "config.json"
    data = json.loads(cfg.read_text())
    change(data["labeler"])
    cfg.write_text(json.dumps(data))


def test_a_saved_labeler_records_the_layer_it_was_cut_at(tiny, tmp_path: Path) -> None:
    folder = _saved(tiny, tmp_path)
    assert json.loads((folder / "config.json").read_text())["labeler"]["exit_layer"] == 3
    assert SequenceLabeler.from_pretrained(folder).backbone_info.num_layers == 3


def test_a_labeler_saved_before_the_default_loads_at_full_depth(tiny, tmp_path: Path) -> None:
    """A folder written before ``exit_layer`` was recorded: the layer it ran at was every
    layer, so it loads whole, not at the new default's 3 of 4."""
    folder = _saved(tiny, tmp_path, exit_layer=None)
    _edit(folder, lambda lab: lab.pop("exit_layer"))
    lab = SequenceLabeler.from_pretrained(folder)
    assert (lab.backbone_info.num_layers, lab.config.exit_layer) == (4, None)


def test_a_saved_labeler_with_an_unresolved_exit_layer_is_refused(tiny, tmp_path: Path) -> None:
    folder = _saved(tiny, tmp_path, exit_layer=2)
    _edit(folder, lambda lab: lab.update(exit_layer="2/3"))
    with pytest.raises(ModelError, match=re.escape(
            "exit_layer='2/3'; a saved labeler records the layer it was cut at (a number) "
            "or null (every layer)")):
        SequenceLabeler.from_pretrained(folder)
