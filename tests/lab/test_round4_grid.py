"""A grid takes a finished run folder's results only when its ``run.json`` names the grid's
model: a folder planted with another model's run (or a 0.999 F1 written by hand) never enters
the store under the grid's model (issue 37, item 10)."""

from __future__ import annotations

import json
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
import yaml

from seqrep.config import LabelerConfig, TrainConfig
from seqrep.lab.grid import run_grid
from seqrep.lab.results import read_records
from tests.inprocess import seqrep


class InProcess:
    """A stand-in for the grid's one-process pool: the run executes here, at once (a
    finished folder's run loads no model, so no child process is needed to test it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __enter__(self) -> InProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def submit(self, fn: Any, *args: Any) -> Future:
        done: Future = Future()
        done.set_result(fn(*args))
        return done


@pytest.fixture
def grid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    import concurrent.futures

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", InProcess)
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump({
        "output": "runs", "models": ["minilm-l6"], "datasets": ["d"], "seeds": [1],
        "labeler": {"finetune": "frozen"}, "strategies": [{"repetitions": [0]}]}))
    return path


def _plant(folder: Path, model: str) -> None:
    """A finished run folder: run.json naming ``model``, metrics claiming 0.999 F1."""
    folder.mkdir(parents=True)
    labeler = LabelerConfig(model=model, finetune="frozen").to_dict()
    train = TrainConfig(dataset="d", seed=1).to_dict()
    (folder / "run.json").write_text(json.dumps({"labeler": labeler, "train": train}))
    (folder / "metrics.json").write_text(json.dumps({
        "status": "finished", "validation": {"f1": 0.999}, "test": {"f1": 0.999}}))


def test_a_finished_folder_naming_another_model_is_refused(grid: Path, tmp_path: Path) -> None:
    (name,) = [s["name"] for s in run_grid(grid, dry_run=True, echo=lambda *_: None)]
    folder = tmp_path / "runs" / name
    _plant(folder, "someone/else")
    ran = seqrep("grid", str(grid))
    assert ran.returncode == 2 and "Traceback" not in ran.stderr, ran.stderr
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), ran.stderr
    assert "someone/else" in lines[0] and "minilm-l6" in lines[0] and "run.json" in lines[0]
    assert read_records(tmp_path / "runs" / "results.jsonl") == []  # nothing entered
    assert (folder / "metrics.json").exists()  # and nothing deleted


def test_a_finished_folder_with_a_run_json_that_is_no_record_is_refused(
        grid: Path, tmp_path: Path) -> None:
    (name,) = [s["name"] for s in run_grid(grid, dry_run=True, echo=lambda *_: None)]
    folder = tmp_path / "runs" / name
    _plant(folder, "minilm-l6")
    (folder / "run.json").unlink()
    (folder / "run.json").symlink_to("/dev/zero")
    ran = seqrep("grid", str(grid))
    assert ran.returncode == 2 and len(ran.stderr.strip().splitlines()) == 1, ran.stderr
    assert "run.json" in ran.stderr and "Traceback" not in ran.stderr
    assert read_records(tmp_path / "runs" / "results.jsonl") == []


def test_a_finished_folder_naming_the_grid_model_is_taken(grid: Path, tmp_path: Path) -> None:
    (name,) = [s["name"] for s in run_grid(grid, dry_run=True, echo=lambda *_: None)]
    _plant(tmp_path / "runs" / name, "minilm-l6")
    ran = seqrep("grid", str(grid))
    assert ran.returncode == 0, ran.stderr
    (record,) = read_records(tmp_path / "runs" / "results.jsonl")
    assert record["config"]["labeler"]["model"] == "minilm-l6"
    assert record["metrics"]["validation"]["f1"] == 0.999


def test_a_grid_folder_holding_a_users_file_is_never_replaced(grid: Path,
                                                               tmp_path: Path) -> None:
    """A grid trains a folder without run.json with overwrite: the owner refuses a folder
    holding a file seqrep did not write, before anything loads (issue 55's every-writer
    check, for grid)."""
    (name,) = [s["name"] for s in run_grid(grid, dry_run=True, echo=lambda *_: None)]
    folder = tmp_path / "runs" / name
    folder.mkdir(parents=True)
    (folder / "NOTES.md").write_text("mine")
    ran = seqrep("grid", str(grid))
    assert ran.returncode == 2 and "Traceback" not in ran.stderr, ran.stderr
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and "seqrep did not write it" in lines[0], ran.stderr
    assert (folder / "NOTES.md").read_text() == "mine"
