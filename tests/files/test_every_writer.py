"""Every command that writes, run with --overwrite into a place that also holds a user's file,
and where its bookkeeping names are links to a user's file: nothing of the user's is changed
or deleted, and each refusal is one line, exit 2."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
from support import cli

NOTE = b"the user's own file"


@pytest.fixture(scope="module")
def world(tiny, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from support import train_tiny_run

    root = tmp_path_factory.mktemp("writers")
    run, data = train_tiny_run(tiny("llama"), root)
    text = root / "in.txt"
    text.write_text("Ann met Bob in Paris .\n")
    return {"root": root, "data": data, "run": run, "text": text,
            "student": Path(tiny("qwen2")), "teacher_model": Path(tiny("llama"))}


def _hashes(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


def _folder_commands(w: dict[str, Path], out: Path) -> dict[str, list[str]]:
    return {
        "train": ["train", "--model", str(w["teacher_model"]), "--dataset", str(w["data"]),
                  "--test-split", "", "--epochs", "1", "--exit-layer", "1", "--max-steps", "1",
                  "--quiet", "-o", str(out), "--overwrite"],
        "distill": ["distill", str(w["run"]), "--student", str(w["student"]), "--dataset",
                    str(w["data"]), "--test-split", "", "--max-steps", "1", "-r", "0",
                    "--exit-layer", "2", "--quiet", "-o", str(out), "--overwrite"],
        "export": ["export", str(w["run"]), "--onnx", str(out), "--no-check", "--overwrite"],
    }


@pytest.mark.parametrize("command", ["train", "distill", "export"])
@pytest.mark.parametrize("plant", ["a user's file beside seqrep's", "manifest linked"])
def test_a_folder_writer_with_overwrite_keeps_the_users_files(
        world, tmp_path: Path, capsys, command: str, plant: str) -> None:
    if command == "export":
        pytest.importorskip("onnxscript")
    out = shutil.copytree(world["run"], tmp_path / "out")  # a folder seqrep wrote whole
    mine = tmp_path / "mine.txt"
    mine.write_bytes(NOTE)
    if plant == "manifest linked":
        (out / ".seqrep-files.json").unlink()
        os.symlink(mine, out / ".seqrep-files.json")
    else:
        (out / "NOTES.md").write_bytes(NOTE)
    before = _hashes(out)
    code, _, err = cli(capsys, *_folder_commands(world, out)[command])
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    assert mine.read_bytes() == NOTE and _hashes(out) == before


@pytest.mark.parametrize("name", ["OUT.partial", "OUT.partial.json"])
def test_predict_with_bookkeeping_names_linked_to_a_users_file(
        world, tmp_path: Path, capsys, name: str) -> None:
    mine = tmp_path / "mine.txt"
    mine.write_bytes(NOTE)
    out = tmp_path / "out.jsonl"
    os.symlink(mine, tmp_path / name.replace("OUT", out.name))
    code, _, err = cli(capsys, "predict", str(world["run"]), "--input", str(world["text"]),
                       "--output", str(out), "--overwrite")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert mine.read_bytes() == NOTE and not out.exists()


def test_evaluate_predictions_replace_a_link_never_the_file_behind_it(
        world, tmp_path: Path, capsys) -> None:
    mine = tmp_path / "mine.txt"
    mine.write_bytes(NOTE)
    preds = tmp_path / "preds.txt"
    os.symlink(mine, preds)
    code, _, err = cli(capsys, "evaluate", str(world["run"]), "--dataset", str(world["data"]),
                       "--predictions", str(preds))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--overwrite" in err, err
    code, _, err = cli(capsys, "evaluate", str(world["run"]), "--dataset", str(world["data"]),
                       "--predictions", str(preds), "--overwrite")
    assert code == 0, err
    assert mine.read_bytes() == NOTE and not preds.is_symlink()


def test_report_keeps_a_users_file_and_a_linked_record(world, tmp_path: Path, capsys) -> None:
    from seqrep.lab.results import append_record

    store = tmp_path / "results.jsonl"
    append_record(store, {
        "run_id": "conll2003-1", "kind": "run",
        "config": {"labeler": {"model": "m", "repetitions": 1, "unmask": "none",
                               "exit_layer": 2, "finetune": "full"},
                   "train": {"dataset": "conll2003", "seed": 1, "epochs": 1, "lr": 1e-4}},
        "metrics": {"status": "finished", "validation": {"f1": 0.8}, "test": {"f1": 0.8},
                    "train_seconds": 6, "train_sentences": 10}})
    out = tmp_path / "report"
    code, _, err = cli(capsys, "report", str(store), "--out", str(out))
    assert code == 0, err
    (out / "NOTES.md").write_bytes(NOTE)
    mine = tmp_path / "mine.txt"
    mine.write_bytes(NOTE)
    (out / ".seqrep-files.json").unlink()
    os.symlink(mine, out / ".seqrep-files.json")
    code, _, err = cli(capsys, "report", str(store), "--out", str(out))
    assert code in (0, 2) and len(err.strip().splitlines()) <= 1, err
    assert (out / "NOTES.md").read_bytes() == NOTE and mine.read_bytes() == NOTE
