"""Which PNG plots lab.plots draws for which rows (the file names and their order, worked out
by hand from the rows below)."""

from __future__ import annotations

from pathlib import Path

from seqrep.lab.plots import plots


def _row(ds: str, finetune: str, r: int, exit_layer: int | None, mean: float | None) -> dict:
    return {"dataset": ds, "model": "m", "finetune": finetune, "unmask": "none", "r": r,
            "exit_layer": exit_layer, "lr": None, "test_f1": {"mean": mean, "std": None}}


def test_plots_drawn_for_each_kind_of_row(tmp_path: Path) -> None:
    rows = [
        _row("a", "full", 0, None, 80.0), _row("a", "full", 1, None, 85.0),  # F1 vs r, p(k)
        _row("b", "probe", 1, 2, 50.0), _row("b", "probe", 1, 4, 60.0),  # probes: layers
        _row("c", "full", 1, 3, None),  # no test F1: nothing
        {**_row("d", "full", 1, 2, 70.0), "auto_exit": True},  # auto exit: left out
    ]
    bench = [{"model": "m", "repetitions": 1, "exit_layer": e, "sentences_per_second": s}
             for e, s in ((2, 10.0), (4, 6.0))]
    made = plots(rows, tmp_path, bench)
    assert [p.name for p in made] == ["a_f1_vs_r.png", "a_visibility.png",
                                      "b_f1_vs_layer.png", "throughput_vs_layer.png"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in made)
    assert [p.name for p in plots(rows[4:], tmp_path / "none")] == []
