"""Grid skipping, report statistics, probes and the benchmark's bookkeeping."""

from __future__ import annotations

import json
import multiprocessing as mp
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from support import write_corpus

from seqrep.lab.bench import speedups
from seqrep.lab.grid import expand, run_grid
from seqrep.lab.report import group, markdown, paired, paired_markdown, report, summarize
from seqrep.lab.results import append_record, read_records

# what the grid's and the bench's child processes import, loaded once in a fork server
CHILD_IMPORTS = ["seqrep.lab.bench", "seqrep.lab.grid", "seqrep.lab.probe", "seqrep.train",
                 "seqrep.model.labeler", "seqrep.export.onnx", "seqrep.export.runtime",
                 "seqrep.export.quantize"]


@pytest.fixture(scope="module")
def forkserver() -> Iterator[mp.context.BaseContext]:
    """A fork server that has imported torch, transformers and seqrep's modules once: each job
    the grid or the bench hands to a child process still runs in a process of its own (its
    arguments and result pickled, as with spawn), without a fresh interpreter importing
    everything again (a few seconds each, for well under a second of work)."""
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(CHILD_IMPORTS)
    yield ctx
    from multiprocessing import forkserver as server

    server._forkserver._stop()  # its process would wait idle until the suite ends


@pytest.fixture()
def child_processes(forkserver, monkeypatch) -> None:
    """The grid's and the bench's spawn contexts come from :func:`forkserver`."""
    real = mp.get_context
    monkeypatch.setattr(mp, "get_context",
                        lambda method=None: forkserver if method == "spawn" else real(method))


def test_expand_is_a_product_with_stable_ids() -> None:
    spec = {"models": ["m1", "m2"], "datasets": ["d1"], "seeds": [1, 2],
            "labeler": {"finetune": "frozen"}, "train": {"epochs": 1},
            "strategies": [{"repetitions": [0, 1, 2]}, {"unmask": ["full", "middle"]},
                           {"model": "enc", "repetitions": 0}]}
    runs = expand(spec)
    assert len(runs) == 2 * 3 * 2 + 2 * 2 * 2 + 1 * 2
    assert len({r.run_id for r in runs}) == len(runs)
    assert [r.run_id for r in expand(spec)] == [r.run_id for r in runs]
    assert {r.labeler.model for r in runs if r.labeler.unmask == "none"
            and r.labeler.repetitions == 0} == {"m1", "m2", "enc"}
    from seqrep.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown setting 'repetition'"):
        expand({**spec, "strategies": [{"repetition": 1}]})


def test_grid_runs_records_and_skips_finished(tiny, tmp_path: Path, child_processes) -> None:
    data = write_corpus(tmp_path / "train.txt", 30)
    test = write_corpus(tmp_path / "test.txt", 6, seed=1)
    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump({
        "output": "runs", "models": [tiny("llama")], "datasets": [str(data)], "seeds": [1],
        "labeler": {"finetune": "frozen", "exit_layer": 2},
        # one thread in each run's process: a second one waits more than it works here
        "train": {"epochs": 1, "batch_size": 8, "test_split": str(test), "head_lr": 0.01,
                  "threads": 1},
        "strategies": [{"repetitions": [0, 1]}, {"probe": True, "layers": [1, 2]}]}))
    lines: list[str] = []
    statuses = run_grid(grid, echo=lines.append)
    assert [s["status"] for s in statuses] == ["done"] * 3
    records = read_records(tmp_path / "runs" / "results.jsonl")
    assert len(records) == 2 + 2  # two trained runs, one probe with two layers
    for rec in records:
        assert rec["metrics"]["status"] == "finished"
        assert {"config", "wall_seconds", "peak_memory_mb", "environment", "run_id"} <= set(rec)
        assert rec["environment"]["versions"]["torch"]
        assert rec["peak_memory_mb"] > 0
    # a second call skips everything, a dry run plans nothing
    again = run_grid(grid, echo=lines.append)
    assert [s["status"] for s in again] == ["skipped"] * 3
    assert all(s["status"] == "skipped" for s in run_grid(grid, dry_run=True, echo=print))
    assert len(read_records(tmp_path / "runs" / "results.jsonl")) == 4


def test_grid_goes_seed_by_seed_and_in_pieces(tmp_path: Path) -> None:
    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump({
        "output": "runs", "models": ["m"], "datasets": ["d"], "seeds": [3, 1],
        "labeler": {"finetune": "frozen"}, "strategies": [{"repetitions": [0, 1]}]}))
    lines: list[str] = []
    planned = run_grid(grid, dry_run=True, echo=lines.append)
    assert [s["name"].split("-s")[-1][0] for s in planned] == ["3", "3", "1", "1"]
    assert [s["name"].split("-r")[1][0] for s in planned] == ["0", "1", "0", "1"]
    piece = run_grid(grid, dry_run=True, echo=lines.append, max_runs=3)
    assert [s["run_id"] for s in piece] == [s["run_id"] for s in planned]
    assert sum(line.startswith("  would run") for line in lines) == 4 + 3
    assert "4 to run, 3 now" in lines[-4]


def _record(f1: float, seed: int, r: int = 1, dataset: str = "conll2003",
            exit_layer: int | None = 20) -> dict:
    return {"run_id": f"x{seed}{r}{exit_layer}", "kind": "run",
            "config": {"labeler": {"model": "smollm2-135m", "repetitions": r, "unmask": "none",
                                   "exit_layer": exit_layer, "finetune": "full"},
                       "train": {"dataset": dataset, "seed": seed, "epochs": 2,
                                 "lr": 5e-5}},
            "metrics": {"status": "finished", "validation": {"f1": f1 / 100 + 0.01},
                        "test": {"f1": f1 / 100}, "train_seconds": 60, "train_sentences": 1000}}


def test_report_statistics_on_hand_made_results(tmp_path: Path) -> None:
    store = tmp_path / "results.jsonl"
    for seed, f1 in zip((1, 2, 3), (80.0, 82.0, 84.0)):
        append_record(store, _record(f1, seed))
    append_record(store, _record(70.0, 1, r=0))
    with open(store, "a") as f:
        f.write('{"run_id": "broken", "conf')  # a crash mid-write
    with pytest.warns(UserWarning, match="incomplete record"):
        rows = group(read_records(store))
    row = next(r for r in rows if r["r"] == 1)
    # mean 82, sample sd 2, 95% CI half-width t(0.975, 2) * 2 / sqrt(3) = 4.3027 * 1.1547
    assert row["test_f1"]["mean"] == pytest.approx(82.0)
    assert row["test_f1"]["std"] == pytest.approx(2.0)
    assert row["test_f1"]["ci95"] == pytest.approx(4.30265 * 2 / 3 ** 0.5, rel=1e-4)
    assert row["seeds"] == [1, 2, 3]
    md = markdown(rows)
    assert "82.00 ± 2.00" in md and "[77.03, 86.97]" in md
    assert "| 70.00 | - |" in md  # one seed: no spread claimed
    rows = [{"model": "m", "mode": mode, "repetitions": 1, "exit_layer": layer,
             "layers_computed": n, "seconds": sec, "sentences_per_second": 8 / sec,
             "tokens_per_second": 80 / sec, "latency_ms": 5.0, "padding_waste": 0.05,
             "flops_per_sentence": 2e9, "share_of_ceiling": 0.5, "peak_memory_mb": 900.0,
             "checksum": 1.0}
            for mode, layer, n, sec in [("cut", 10, 10, 1.0), ("cut", 30, 30, 3.0),
                                        ("full_hidden_states", 10, 30, 3.3)]]
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"config": {"repeats": 3}, "rows": rows,
                                 "speedups": speedups(rows)}))
    with pytest.warns(UserWarning):
        path = report(store, tmp_path / "out", bench=bench)
    text = path.read_text()
    assert text.count("###") >= 3 and "| 10 | 0.33 | 0.33 | 3.00 | 3.3 | True |" in text
    assert (tmp_path / "out" / "conll2003_f1_vs_r.png").stat().st_size > 1000
    assert summarize([]) == {"n": 0, "mean": None, "std": None, "ci95": None}


def test_report_pairs_settings_with_the_causal_baseline_by_seed() -> None:
    recs = [_record(f1, seed, r=1) for seed, f1 in ((1, 60.0), (2, 64.0), (3, 65.0))]
    recs += [_record(f1, seed, r=0) for seed, f1 in ((1, 58.0), (2, 61.0), (3, 66.0))]
    recs.append(_record(70.0, 4, r=1))  # no baseline in seed 4: left out of the pairs
    recs.append(_record(50.0, 1, r=0, dataset="rest14"))  # a baseline alone: no row
    rows = paired(recs)
    assert len(rows) == 1
    row = rows[0]
    # differences 2, 3, -1: mean 4/3, sample sd sqrt(13/3), higher in 2 of 3 seeds
    assert row["seeds"] == [1, 2, 3] and row["wins"] == 2
    assert row["diff"]["mean"] == pytest.approx(4 / 3)
    assert row["diff"]["std"] == pytest.approx((13 / 3) ** 0.5)
    assert row["diff"]["ci95"] == pytest.approx(4.30265 * (13 / 3) ** 0.5 / 3 ** 0.5, rel=1e-4)
    md = paired_markdown(rows)
    assert ("| conll2003 | smollm2-135m | 1 | none | 20 | r=0 | +1.33 ± 2.08 | [-3.84, 6.50] "
            "| 2 of 3 |") in md
    # against the deepest exit layer: layers 10 and 20 against 30, each with its own r
    recs += [_record(f1, seed, r=1, exit_layer=30) for seed, f1 in ((1, 61.0), (2, 60.0))]
    recs += [_record(55.0, 1, r=1, exit_layer=10), _record(59.0, 1, r=0, exit_layer=30)]
    depth = paired(recs, against="depth")
    by = {(r["dataset"], r["r"], r["exit_layer"]): r for r in depth}
    assert set(by) == {("conll2003", 1, 10), ("conll2003", 1, 20), ("conll2003", 0, 20)}
    assert by["conll2003", 1, 20]["seeds"] == [1, 2] and by["conll2003", 1, 20]["wins"] == 1
    assert by["conll2003", 1, 20]["diff"]["mean"] == pytest.approx((-1.0 + 4.0) / 2)
    assert by["conll2003", 1, 10]["baseline"]["exit_layer"] == 30
    assert by["conll2003", 0, 20]["diff"]["mean"] == pytest.approx(-1.0)
    assert "| conll2003 | smollm2-135m | 1 | none | 10 | L=30 | -6.00 |" in paired_markdown(
        depth, "depth")


def test_store_appends_survive_a_torn_line(tmp_path: Path) -> None:
    store = tmp_path / "r.jsonl"
    store.write_text('{"a": 1}\n{"b": ')
    append_record(store, {"c": 3})
    with pytest.warns(UserWarning):
        assert read_records(store) == [{"a": 1}, {"c": 3}]


def test_probe_scores_each_layer(tiny, tmp_path: Path) -> None:
    from seqrep.config import LabelerConfig, TrainConfig
    from seqrep.lab.probe import run_probe

    data = write_corpus(tmp_path / "train.txt", 100)
    out = run_probe(LabelerConfig(model=tiny("llama"), repetitions=1),
                    TrainConfig(dataset=str(data), test_split=None), [1, 3], tmp_path / "p",
                    epochs=60, lr=3e-2)
    assert [r["layer"] for r in out] == [1, 3]
    # the toy task is separable from word identity: a working probe is far above the 0 F1
    # of a head that predicts O everywhere (measured 0.68 and 0.79)
    assert all(r["validation"]["f1"] > 0.5 for r in out)
    assert json.loads((tmp_path / "p" / "probe.json").read_text())[1]["layer"] == 3



def test_probe_records_the_layers_middle_unmasked(tiny, tmp_path: Path) -> None:
    from seqrep.config import LabelerConfig, TrainConfig
    from seqrep.lab.probe import run_probe

    data = write_corpus(tmp_path / "train.txt", 20)
    out = run_probe(LabelerConfig(model=tiny("llama", 12), repetitions=1, unmask="middle"),
                    TrainConfig(dataset=str(data), test_split=None), [2, 6], None, epochs=1)
    # 12 layers: c = 2 * floor(12 / 6) = 4, the middle is layers 6 - 1 - 2 = 3 .. 6 + 2 = 8 of
    # the full depth; the probe runs the model cut at its deepest layer (6), keeping 3, 4, 5
    assert [r["unmasked_layers"] for r in out] == [[3, 4, 5], [3, 4, 5]]

def test_bench_cut_equals_full_forward_state(tiny) -> None:
    from support import WORDS

    from seqrep.lab.bench_rows import _measure

    model = tiny("llama", 6)
    cut = _measure(model, 1, 3, WORDS, 2, None, 2, "cut", None)
    full = _measure(model, 1, 3, WORDS, 2, None, 2, "full_hidden_states", None)
    deep = _measure(model, 1, 6, WORDS, 2, None, 2, "cut", None)
    # a token budget changes the batches, never the states, and pads less
    budget = _measure(model, 1, 3, WORDS, 8, 40, 2, "cut", None)
    loose = _measure(model, 1, 3, WORDS, 8, None, 2, "cut", None)
    assert budget["checksum"] == pytest.approx(cut["checksum"], rel=1e-5)
    assert budget["padding_waste"] < loose["padding_waste"]
    assert cut["layers_computed"] == 3 and full["layers_computed"] == 6
    assert cut["checksum"] == pytest.approx(full["checksum"], rel=1e-5)
    assert cut["flops_per_sentence"] * 2 == pytest.approx(deep["flops_per_sentence"], rel=1e-6)
    (s3, s6) = speedups([cut, full, deep])
    assert s3["layer_share"] == 0.5 and s3["same_states"] is True
    assert s6["speedup_vs_deepest"] == 1.0


def test_bench_ceiling_runs_the_models_own_linear_shapes(tiny) -> None:
    from seqrep.lab.bench_rows import linear_shapes, matmul_ceiling
    from seqrep.model.labeler import SequenceLabeler

    model = tiny("llama", 2)
    lab = SequenceLabeler.from_model(model, labels=["O"], finetune="frozen")
    cfg = lab.backbone.config
    shapes = linear_shapes(lab.backbone)
    h, inter = cfg.hidden_size, cfg.intermediate_size
    assert (h, inter) in shapes and (inter, h) in shapes and len(set(shapes)) == len(shapes)
    ceiling = matmul_ceiling(model, 16, None, repeats=2)
    assert set(ceiling["shapes"]) == {f"16x{k}x{n}" for k, n in shapes}
    assert ceiling["gflops"] == max(ceiling["shapes"].values()) > 0


def test_frontier_marks_the_pareto_settings() -> None:
    from seqrep.lab.frontier import frontier

    def row(model: str, r: int, layer: int | None, f1: float) -> dict:
        return {"dataset": "conll2003", "model": model, "finetune": "full", "r": r,
                "unmask": "none", "exit_layer": layer, "train_sentences": 500,
                "test_f1": {"mean": f1, "std": 1.0}, "seeds": [1, 2]}

    rows = [row("dec", 0, 10, 50.0), row("dec", 1, 10, 70.0), row("dec", 1, 20, 68.0),
            row("enc", 0, None, 60.0), row("dec", 2, 10, 71.0)]
    bench = [{"model": "dec", "mode": "cut", "repetitions": 0, "exit_layer": 10,
              "sentences_per_second": 60.0},
             {"model": "dec", "mode": "cut", "repetitions": 1, "exit_layer": 10,
              "sentences_per_second": 39.0},
             {"model": "dec", "mode": "cut", "repetitions": 1, "exit_layer": 20,
              "sentences_per_second": 21.0},
             {"model": "enc", "mode": "encoder", "repetitions": 0, "exit_layer": None,
              "sentences_per_second": 230.0},
             {"model": "dec", "mode": "cut", "repetitions": 2, "exit_layer": 10,
              "precision": "bf16", "sentences_per_second": 30.0}]
    points = {(p["model"], p["r"], p["exit_layer"]): p for p in frontier(rows, bench)}
    assert (("dec", 2, 10)) not in points  # no fp32 speed measured: not on the plot
    assert points[("enc", 0, None)]["pareto"]  # fastest
    assert points[("dec", 1, 10)]["pareto"]  # most accurate
    assert not points[("dec", 1, 20)]["pareto"]  # slower and worse than r=1 L=10
    assert not points[("dec", 0, 10)]["pareto"]  # the encoder is faster and better
    # A larger budget is its own frontier: an encoder trained on 2,000 sentences that beats
    # every 500-sentence setting leaves their marks as they were.
    big = {**row("enc", 0, None, 90.0), "train_sentences": 2000}
    points2 = frontier([*rows, big], bench)
    assert [p["pareto"] for p in points2 if p["train_sentences"] == 500] == [
        p["pareto"] for p in frontier(rows, bench)]
    assert [p["train_sentences"] for p in points2] == [500, 500, 500, 500, 2000]
    assert points2[-1]["pareto"]
    # a learning-rate sweep: the rate best on validation stands, even where another rate
    # scored higher on test
    sweep = [{**row("enc", 0, None, f1), "train_sentences": 2000, "lr": lr,
              "val_f1": {"mean": val}} for lr, f1, val in ((1e-4, 88.0, 80.0),
                                                            (5e-4, 86.0, 84.0))]
    chosen = [p for p in frontier([*rows, *sweep], bench) if p["train_sentences"] == 2000]
    assert [(p["lr"], p["f1"], p["swept"]) for p in chosen] == [(5e-4, 86.0, 2)]
    from seqrep.lab.frontier import frontier_markdown

    assert "| 0.0005 (of 2) |" in frontier_markdown(chosen).replace("**", "")
    fewer_test = {**row("enc", 0, None, 95.0), "test_sentences": 100}
    assert frontier([*rows, fewer_test], bench)[-1]["pareto"]  # another test set: apart too
    assert points[("enc", 0, None)]["pareto"]


def test_frontier_labels_do_not_overlap(tmp_path) -> None:
    """Crowded Pareto points (as Gemma's r=1/r=2 at layer 6 were) get labels that do not
    overlap and stay inside the axes; the figure is written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from seqrep.lab.frontier import _place_labels, frontier_plots

    pts = [{"dataset": "d", "model": "gemma3-270m", "finetune": "full", "r": r,
            "exit_layer": 6, "f1": f1, "sentences_per_second": sps, "pareto": True,
            "train_sentences": 2000, "test_sentences": 3453}
           for r, f1, sps in ((1, 87.4, 31.8), (2, 87.6, 30.9), (0, 86.9, 33.0),
                              (3, 87.2, 32.3))]
    fig, ax = plt.subplots(figsize=(8, 5))
    for p in pts:
        ax.scatter(p["sentences_per_second"], p["f1"])
    ax.set_xscale("log")
    fig.tight_layout()
    boxes = _place_labels(fig, ax, pts)
    assert len(boxes) == 4
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    inside = ax.get_window_extent()
    assert all(inside.x0 <= b.x0 and b.x1 <= inside.x1 and inside.y0 <= b.y0
               and b.y1 <= inside.y1 for b in boxes)
    plt.close(fig)
    made = frontier_plots([*pts, {**pts[0], "r": 5, "pareto": False, "f1": 50.0}], tmp_path)
    assert [m.name for m in made] == ["d_frontier.png"] and made[0].stat().st_size > 10_000


def test_bench_precisions_side_by_side(tiny) -> None:
    """bf16 rows beside fp32 ones: the same states within bf16's error, each precision with a
    ceiling measured in its own dtype."""
    from support import WORDS

    from seqrep.lab.bench import precision_speedups
    from seqrep.lab.bench_rows import _measure, matmul_ceiling

    model = tiny("llama", 4)
    fp32 = _measure(model, 1, 3, WORDS, 2, None, 2, "cut", None, 1, "fp32")
    bf16 = _measure(model, 1, 3, WORDS, 2, None, 2, "cut", None, 1, "bf16")
    assert (fp32["precision"], bf16["precision"]) == ("fp32", "bf16")
    (row,) = precision_speedups([fp32, bf16])
    assert row["precision"] == "bf16" and row["speedup_vs_fp32"] > 0
    assert 0 < row["checksum_rel_diff"] < 0.02  # really bf16, and close
    assert matmul_ceiling(model, 16, None, repeats=2, precision="bf16")["gflops"] > 0


def test_bench_runs_onnx_runtime_beside_pytorch(tiny, tmp_path) -> None:
    """ONNX Runtime rows: the same exit states as PyTorch fp32 (fp32 graph), near them for the
    int8 recipe, both rows on one export (the int8 graph added beside it, the fp32 graph not
    written again); a precision the bench does not know is one clear error."""
    pytest.importorskip("onnxruntime")
    from support import WORDS

    from seqrep.errors import ConfigError
    from seqrep.export.folder import read_meta
    from seqrep.lab.bench import BenchConfig, precision_speedups
    from seqrep.lab.bench_rows import _export, _measure
    from seqrep.lab.tables import bench_markdown

    model = tiny("llama", 4)
    folder = str(tmp_path / "export")
    _export(model, 1, 3, folder, None, None)
    graph = tmp_path / "export" / read_meta(folder)["model_file"]
    written = graph.stat().st_mtime_ns
    assert "int8" not in read_meta(folder).get("variants", {})
    _export(model, 1, 3, folder, "int8", None)
    assert "int8" in read_meta(folder)["variants"] and graph.stat().st_mtime_ns == written
    rows = [_measure(model, 1, 3, WORDS, 2, None, 2, "cut", None, 1, "fp32")] + [
        _measure(model, 1, 3, WORDS, 2, None, 2, "cut", None, 1, p, folder)
        for p in ("onnx", "onnx-int8")]
    assert [r["precision"] for r in rows] == ["fp32", "onnx", "onnx-int8"]
    onnx, int8 = precision_speedups(rows)
    assert onnx["checksum_rel_diff"] < 1e-5 and onnx["speedup_vs_fp32"] > 0
    assert 0 < int8["checksum_rel_diff"] < 0.2
    md = bench_markdown({"config": {}, "rows": rows, "precision_speedups": [onnx, int8]})
    assert f"| {model} | cut | onnx-int8 | 1 | 3 |" in md and "| onnx | 1 | 3 |" in md
    with pytest.raises(ConfigError, match="expected a comma list of fp32, bf16, "
                                          "openvino-fp32, openvino-bf16, compile-fp32, "
                                          "compile-bf16, onnx"):
        BenchConfig(precisions=("fp16",))


def test_report_rows_are_settings_not_just_strategies() -> None:
    """Runs that differ in anything but the seed (the learning rate, or datasets whose files
    share a name) are separate rows; seeds of one setting pool into one row."""
    def rec(seed: int, lr: float, dataset: str) -> dict:
        return {"config": {"labeler": {"model": "m", "repetitions": 1, "unmask": "none",
                                       "exit_layer": 10, "finetune": "full"},
                           "train": {"dataset": dataset, "seed": seed, "lr": lr,
                                     "epochs": 2}},
                "metrics": {"status": "finished", "train_sentences": 500,
                            "validation": {"f1": 0.5}, "test": {"f1": 0.5, "sentences": 9}}}

    records = [rec(1, 5e-5, "a/train.txt"), rec(2, 5e-5, "a/train.txt"),
               rec(1, 1e-4, "a/train.txt"), rec(1, 5e-5, "b/train.txt")]
    rows = group(records)
    assert sorted(r["seeds"] for r in rows) == [[1], [1], [1, 2]]


def test_auto_exit_runs_sit_beside_the_fixed_layers(tmp_path: Path) -> None:
    """A run with exit_layer=auto shows the layer its sweep chose, and the comparison table
    says whether that layer is the grid's best fine-tuned one."""
    recs = [_record(f1, seed, r=1, exit_layer=layer)
            for layer, f1s in ((10, (50.0, 52.0)), (20, (67.0, 68.0)), (30, (55.0, 56.0)))
            for seed, f1 in zip((1, 2), f1s)]
    for seed, f1 in ((1, 66.0), (2, 69.0)):
        auto = _record(f1, seed, r=1, exit_layer="auto")
        auto["run_id"] += "auto"
        auto["metrics"]["exit_layer"] = 20
        recs.append(auto)
    rows = group(recs)
    (auto_row,) = [r for r in rows if r["auto_exit"]]
    assert auto_row["exit_layer"] == 20 and auto_row["seeds"] == [1, 2]
    assert "| 20 (auto) |" in markdown(rows)
    from seqrep.lab.exit_choice import auto_exit_markdown, auto_exit_rows

    (cmp,) = auto_exit_rows(rows)
    assert cmp["layers"] == [10, 20, 30] and cmp["best_test_layer"] == 20
    assert cmp["auto_f1"] == pytest.approx(67.5) and cmp["chosen_f1"] == pytest.approx(67.5)
    assert "| 20 | 67.50 | 2 | 10, 20, 30 | 20 (67.50) | 20 | yes |" in auto_exit_markdown(
        [cmp])
    # the auto rows stay out of the depth pairing's "deepest layer" and out of the plots
    depth = {r["exit_layer"]: r for r in paired(recs, "depth") if not r["auto_exit"]}
    assert depth[20]["baseline"]["exit_layer"] == 30
    store = tmp_path / "a.jsonl"
    other = tmp_path / "b.jsonl"
    for rec in recs[:6]:
        append_record(store, rec)
    for rec in recs[6:]:
        append_record(other, rec)
    bench = [tmp_path / f"bench{i}.json" for i in (1, 2)]
    for path, layer in zip(bench, (20, 30)):
        path.write_text(json.dumps({"config": {}, "rows": [
            {"model": "smollm2-135m", "mode": "cut", "repetitions": 1, "exit_layer": layer,
             "layers_computed": layer, "sentences_per_second": 600 / layer,
             "tokens_per_second": 1.0, "latency_ms": 1.0, "padding_waste": 0.0,
             "flops_per_sentence": 1e9, "peak_memory_mb": 1.0}]}))
    # two stores and two bench files read together
    text = report([store, other], tmp_path / "out", bench=bench).read_text()
    assert text.count("### Inference benchmark") == 2
    assert ("| **conll2003** | **1000** | **-** | **smollm2-135m** | **full** | **5e-05** | **2** "
            "| **1** | **20** |") in text
    assert "| conll2003 | 1000 | - | smollm2-135m | full | 5e-05 | 2 | 1 | 30 |" in text
    assert "`--exit-layer auto` picks" in text and "| 20 (auto) |" in text


def test_report_shows_the_learning_rate_of_each_setting() -> None:
    recs = []
    for lr, f1 in ((5e-5, 40.0), (2e-4, 60.0)):
        rec = _record(f1, 1, r=0, exit_layer=None)
        rec["run_id"] += str(lr)
        rec["config"]["train"]["lr"] = lr
        recs.append(rec)
    md = markdown(group(recs))
    assert "| smollm2-135m | full | 5e-05 | 0 |" in md
    assert "| smollm2-135m | full | 0.0002 | 0 |" in md


def test_report_says_when_the_lowest_layers_were_frozen() -> None:
    plain, frozen = _record(83.0, 1), _record(80.0, 1)
    frozen["run_id"] += "f"
    frozen["config"]["labeler"]["frozen_layers"] = 10
    rows = group([plain, frozen])
    assert sorted(r["finetune"] for r in rows) == ["full", "full, 10 frozen"]
    md = markdown(rows)
    assert "| smollm2-135m | full | 5e-05 | 1 |" in md
    assert "| smollm2-135m | full, 10 frozen | 5e-05 | 1 |" in md


def test_run_bench_exports_once_for_both_onnx_rows(tiny, tmp_path, monkeypatch,
                                                   child_processes) -> None:
    """A whole bench run over fp32, onnx and onnx-int8: one export of the setting (in its own
    process) serves both ONNX rows, and every row is measured."""
    pytest.importorskip("onnxruntime")
    from support import write_corpus

    from seqrep.lab import bench

    exports = []
    real = bench.ProcessPoolExecutor

    class Counting(real):  # count the export jobs the parent hands to its child processes
        def submit(self, fn, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
            if fn is bench._export:
                exports.append((args[3], args[4]))
            return super().submit(fn, *args, **kwargs)

    monkeypatch.setattr(bench, "ProcessPoolExecutor", Counting)
    data = write_corpus(tmp_path / "test.txt", 6)
    cfg = bench.BenchConfig(model=tiny("llama", 4), repetitions=(1,), exit_layers=(3,),
                            dataset=str(data), split="train", sentences=6, batch_size=2,
                            repeats=1, latency_sentences=1, encoder=None, baseline=False,
                            threads=1, precisions=("fp32", "onnx", "onnx-int8"))
    out = bench.run_bench(cfg, echo=lambda *_: None)
    assert [r["precision"] for r in out["rows"]] == ["fp32", "onnx", "onnx-int8"]
    assert len({folder for folder, _ in exports}) == 1  # one folder for the setting
    assert [v for _, v in exports] == [None, "int8"]
    assert {p["precision"] for p in out["precision_speedups"]} == {"onnx", "onnx-int8"}


def test_report_reads_run_folders_beside_stores(tmp_path: Path) -> None:
    """A run made by `seqrep train` (a folder) joins a report beside a store; an auto exit
    reads as auto with its chosen layer; a folder that is no finished run is one clear line."""
    from seqrep.errors import ConfigError
    from seqrep.lab.frontier import frontier, frontier_markdown
    from seqrep.lab.results import read_sources, run_record

    rec = _record(91.0, 1, r=1, exit_layer=11)
    run = tmp_path / "cpu-recipe"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({**rec["config"], "exit_search": {"chosen": 11}}))
    (run / "metrics.json").write_text(json.dumps({**rec["metrics"], "exit_layer": 11,
                                                  "train_sentences": 14041}))
    store = tmp_path / "store.jsonl"
    append_record(store, _record(80.0, 1, r=1, exit_layer=20))
    records = read_sources([store, run])
    assert [r["metrics"]["test"]["f1"] for r in records] == [0.80, 0.91]
    assert records[1]["config"]["labeler"]["exit_layer"] == "auto"
    rows = group(records)
    auto = next(r for r in rows if r["auto_exit"])
    assert (auto["exit_layer"], auto["train_sentences"]) == (11, 14041)
    bench = [{"model": "smollm2-135m", "mode": "cut", "repetitions": 1, "exit_layer": layer,
              "sentences_per_second": speed} for layer, speed in ((11, 20.0), (20, 10.0))]
    points = frontier(rows, bench)
    assert all(p["pareto"] for p in points)  # two budgets, one setting each
    assert ("| **conll2003** | **14041** | **-** | **smollm2-135m** | **full** | **5e-05** | **2** "
            "| **1** | **11 (auto)** | **91.00** |") in frontier_markdown(points)
    (run / "metrics.json").unlink()
    with pytest.raises(ConfigError, match="cpu-recipe: not a finished run .metrics.json"):
        run_record(run)


def test_best_setting_is_chosen_on_validation_within_a_budget() -> None:
    """The best-setting table picks by validation F1 per budget: a rate that did better on
    test but worse on validation is not the one shown, and a larger budget has its own row."""
    from seqrep.lab.report import markdown

    a = _record(88.0, 1, r=0, exit_layer=None)  # validation 0.89
    b = {**_record(86.0, 1, r=0, exit_layer=None), "run_id": "b"}
    b["config"]["train"]["lr"] = 5e-4
    b["metrics"]["validation"]["f1"] = 0.95
    big = {**_record(70.0, 1, r=1, exit_layer=20), "run_id": "big"}
    big["metrics"] = {**big["metrics"], "train_sentences": 2000}
    md = markdown(group([a, b, big]))
    table = md[md.index("### Best setting"):]
    assert "(chosen on validation F1)" in table
    assert ("| conll2003 | 1000 / - | smollm2-135m | full | 0.0005 | 0 | none | all | 95.00 "
            "| 86.00 |") in table
    assert "| conll2003 | 2000 / - | smollm2-135m | full | 5e-05 | 1 | none | 20 |" in table
