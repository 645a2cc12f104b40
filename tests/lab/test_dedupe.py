"""A run read twice (a store and its run folder, one store given twice, or two grid processes
that appended the same run to one store) counts once, and the report says so. Expected means
and spreads are computed by hand from the F1 values written here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seqrep.lab.report import group, report
from seqrep.lab.results import append_record, read_sources


def _config(seed: int, resolved: bool) -> dict:
    """A grid's configuration; ``resolved`` as ``seqrep train`` writes it into run.json
    (the labels found in the data and the task filled in)."""
    return {"labeler": {"model": "smollm2-135m", "repetitions": 1, "unmask": "none",
                        "exit_layer": 20, "finetune": "full",
                        "labels": ["O", "B-PER", "I-PER"] if resolved else [],
                        "task": "spans" if resolved else "auto"},
            "train": {"dataset": "conll2003", "seed": seed, "epochs": 2, "lr": 5e-5}}


def _record(seed: int, f1: float) -> dict:
    return {"run_id": f"id{seed}", "name": f"conll2003/run-s{seed}", "kind": "run",
            "config": _config(seed, resolved=False),
            "metrics": {"status": "finished", "validation": {"f1": f1 / 100 + 0.01},
                        "test": {"f1": f1 / 100, "sentences": 3453}, "train_seconds": 61.25,
                        "train_sentences": 1000}}


def test_a_run_appended_twice_counts_once(tmp_path: Path) -> None:
    store = tmp_path / "results.jsonl"
    for seed, f1 in ((1, 80.0), (2, 82.0), (3, 84.0)):
        append_record(store, _record(seed, f1))
    append_record(store, _record(1, 80.0))  # a second grid process finished seed 1 too
    (row,) = group(read_sources([store]))
    # seeds 80, 82, 84: mean 82, sample sd 2 (with seed 1 twice: mean 81.5, n 4)
    assert row["seeds"] == [1, 2, 3]
    assert (row["test_f1"]["n"], row["test_f1"]["mean"]) == (3, pytest.approx(82.0))
    assert row["test_f1"]["std"] == pytest.approx(2.0)
    # one store given twice: every record is a repeat
    (row,) = group(read_sources([store, store]))
    assert row["test_f1"]["n"] == 3
    text = report([store, store], tmp_path / "out").read_text()
    # 8 records read, 3 runs
    assert "5 records repeat a run already read" in text and "counted once" in text
    assert "| 82.00 ± 2.00 |" in text


def test_a_store_and_its_run_folder_count_once(tmp_path: Path) -> None:
    store = tmp_path / "results.jsonl"
    for seed, f1 in ((1, 80.0), (2, 84.0)):
        append_record(store, _record(seed, f1))
    folder = tmp_path / "runs" / "run-s1"  # the folder the grid trained seed 1 in
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps(_config(1, resolved=True)), encoding="utf-8")
    (folder / "metrics.json").write_text(json.dumps(_record(1, 80.0)["metrics"], indent=2),
                                         encoding="utf-8")
    rows = group(read_sources([store, folder]))
    assert len(rows) == 1 and rows[0]["seeds"] == [1, 2]
    assert rows[0]["test_f1"]["mean"] == pytest.approx(82.0)
    text = report([store, folder], tmp_path / "out").read_text()
    assert "1 record repeats a run already read" in text and str(folder) in text
    # another run (seed 3), with its own results, is not a repeat
    other = tmp_path / "runs" / "other"
    other.mkdir()
    (other / "run.json").write_text(json.dumps(_config(3, resolved=True)), encoding="utf-8")
    (other / "metrics.json").write_text(json.dumps(_record(3, 90.0)["metrics"]),
                                        encoding="utf-8")
    assert len(read_sources([store, folder, other])) == 4
    rows = group(read_sources([store, folder, other]))
    assert sorted(len(r["seeds"]) for r in rows) == [1, 2]
    assert "repeat" not in report([store, other], tmp_path / "out2").read_text()
