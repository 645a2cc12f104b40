"""The exit layer's default in a training run (issue 39 item 5): the run plan resolves it
against the model's depth before anything loads, and the run's records hold the layer it
trained at, so the saved run reloads there. Layers are worked out by hand (tiny models of 4
layers: 2/3 of 4 is 2.67, so 3)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from support import cli, train_configs

from seqrep.config import LabelerConfig, TrainConfig
from seqrep.lab.grid import expand, load_spec
from seqrep.train import train
from seqrep.train.plan import plan_run
from seqrep.train.recipes import apply_recipe

ROOT = Path(__file__).resolve().parents[2]


def _default(model: str, corpus: tuple[str, str]) -> tuple[LabelerConfig, TrainConfig]:
    lab, cfg = train_configs(model, corpus, epochs=1)
    return LabelerConfig(**{**lab.to_dict(), "exit_layer": "default"}), cfg


def test_the_plan_resolves_the_default_before_the_data_and_weights(tiny, corpus,
                                                                   tmp_path: Path) -> None:
    plan = plan_run(*_default(tiny("llama"), corpus), tmp_path / "run", quiet=True)
    assert plan.labeler.exit_layer == 3
    plan = plan_run(*_default(tiny("bert"), corpus), tmp_path / "run", quiet=True)
    assert plan.labeler.exit_layer is None  # an encoder: every layer
    lab, cfg = _default(tiny("llama"), corpus)
    plan = plan_run(lab.replace(exit_layer="1/4"), cfg, tmp_path / "run", quiet=True)
    assert plan.labeler.exit_layer == 1


def test_a_run_records_the_layer_it_trained_at(tiny, corpus, tmp_path: Path) -> None:
    out = tmp_path / "run"
    metrics = train(*_default(tiny("llama"), corpus), out, quiet=True)
    assert json.loads((out / "run.json").read_text())["labeler"]["exit_layer"] == 3
    assert json.loads((out / "best" / "config.json").read_text())["labeler"]["exit_layer"] == 3
    assert metrics["exit_layer"] == 3


def test_the_record_holds_the_layer_where_the_plan_could_not_read_the_depth(
        tiny, corpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A packaged GGUF model is converted when it first loads, so its depth is unknown to
    the plan then; the labeler resolves the default and run.json records that layer."""
    monkeypatch.setattr("seqrep.train.probes.model_depth", lambda *a, **k: None)
    out = tmp_path / "run"
    train(*_default(tiny("llama"), corpus), out, quiet=True)
    assert json.loads((out / "run.json").read_text())["labeler"]["exit_layer"] == 3


@pytest.mark.parametrize("value", ["3/2", "0/3", "x"])
def test_a_bad_exit_layer_on_the_command_line_is_one_line_exit_2(
        capsys: pytest.CaptureFixture, tiny, corpus, tmp_path: Path, value: str) -> None:
    code, _, err = cli(capsys, "train", "--model", tiny("llama"), "--dataset", corpus[0],
                       "--exit-layer", value, "--output", str(tmp_path / "run"))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert re.search(re.escape(f"exit_layer={value!r}; expected a layer number, a fraction "
                               f"of the depth such as 2/3, all, auto or default"), err), err
    assert not (tmp_path / "run").exists()


def test_the_paper_recipe_reads_the_last_layer_as_the_paper_does() -> None:
    lab, _ = apply_recipe("paper", LabelerConfig(), TrainConfig())
    assert lab.exit_layer is None
    lab, _ = apply_recipe("paper", LabelerConfig(exit_layer=12), TrainConfig(), {"exit_layer"})
    assert lab.exit_layer == 12


@pytest.mark.parametrize("grid", sorted((ROOT / "experiments").glob("*.yaml")),
                         ids=lambda p: p.name)
def test_every_experiment_grid_names_its_exit_layer(grid: Path) -> None:
    """The committed grids ran before the default changed: each run names its layer (or
    ``all``), so what a grid means, and the ids of the runs it finished, stay as they were."""
    assert yaml.safe_load(grid.read_text())  # a grid file
    for run in expand(load_spec(grid)):
        assert run.labeler.exit_layer != "default", (grid.name, run.name)


def test_a_probe_without_layers_named_probes_every_layer(tiny, corpus, tmp_path: Path) -> None:
    """``layers`` empty means every layer of the model (4 here), not those of a model cut
    at the default's 3."""
    from seqrep.lab.probe import run_probe

    out = run_probe(LabelerConfig(model=tiny("llama"), repetitions=1),
                    TrainConfig(dataset=corpus[0], test_split=None), [], None, epochs=1)
    assert [r["layer"] for r in out] == [1, 2, 3, 4]
