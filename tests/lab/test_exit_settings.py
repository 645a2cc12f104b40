"""A run asked for a fraction of the depth or the default exit layer (a grid that names
neither a layer nor ``all``): its record is readable and its row stands at the layer the run
resolved (``metrics.exit_layer``), as an ``auto`` run's does, without the auto mark."""

from __future__ import annotations

import pytest

from seqrep.lab.results import record_problem
from seqrep.lab.stats import strategy


def _record(exit_layer: object, resolved: object) -> dict:
    return {"run_id": "x", "kind": "run",
            "config": {"labeler": {"model": "smollm2-135m", "repetitions": 1, "unmask": "none",
                                   "exit_layer": exit_layer, "finetune": "full"},
                       "train": {"dataset": "conll2003", "seed": 1, "epochs": 2, "lr": 5e-5}},
            "metrics": {"status": "finished", "exit_layer": resolved,
                        "validation": {"f1": 0.8}, "test": {"f1": 0.79}}}


@pytest.mark.parametrize("asked,resolved,auto", [
    ("2/3", 20, False), ("default", 20, False), ("default", None, False), ("auto", 18, True),
    (20, 20, False), (None, None, False),
])
def test_a_row_stands_at_the_layer_the_run_resolved(asked: object, resolved: object,
                                                    auto: bool) -> None:
    record = _record(asked, resolved)
    assert record_problem(record) is None
    row = strategy(record)
    assert (row["exit_layer"], row["auto_exit"]) == (resolved, auto)


@pytest.mark.parametrize("bad", ["3/2", "all", "x", True, 0])
def test_an_exit_layer_no_run_asks_for_is_a_problem(bad: object) -> None:
    assert "config.labeler.exit_layer" in (record_problem(_record(bad, 20)) or "")


def test_a_grid_run_at_a_fraction_is_named_without_a_folder_in_it() -> None:
    from seqrep.lab.grid import expand

    (run,) = expand({"models": ["m"], "datasets": ["conll2003"], "seeds": [1],
                     "strategies": [{"exit_layer": "2/3"}]})
    assert run.name.startswith("conll2003/m-r1-none-L2of3-full-s1-"), run.name
    assert run.name.count("/") == 1
