"""A new user on four public corpora, as published: train, evaluate and predict with the
documented commands and no conversion script (issue 10). Tiny model, a few steps each: the
point is that every command runs and reads the layout right, not the F1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from layouts import write_layouts
from typer.testing import CliRunner

from seqrep.cli.app import app

runner = CliRunner()

# name -> (train options, task, labels the model must know)
CASES = {
    "wnut17": ([], "spans", {"B-location", "I-creative-work"}),
    "ud": ([], "tokens", {"PRON", "AUX", "PART", "VERB", "PUNCT"}),
    "conll2000": ([], "spans", {"B-NP", "I-VP"}),
    "conll2000-pos": (["--tag-column", "1"], "tokens", {"NN", "DT"}),
    "snips": ([], "spans", {"B-artist", "I-playlist"}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_train_evaluate_predict(tiny, tmp_path: Path, case: str) -> None:
    paths = write_layouts(tmp_path / "data")
    data = paths[case.split("-")[0]]
    options, task, labels = CASES[case]
    out = tmp_path / "run"
    # one file: validation is carved from it; a dataset folder (SNIPS) has its own splits
    split = ["--test", str(paths.get(f"{case}-test", data))] if data.is_file() else []
    result = runner.invoke(app, ["train", "--model", tiny("llama"), "--dataset", str(data),
                                 *split, *options, "--epochs", "1", "--batch-size", "4",
                                 "--output", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    saved = json.loads((out / "run.json").read_text())["labeler"]
    assert saved["task"] == task
    assert labels <= set(saved["labels"])
    result = runner.invoke(app, ["evaluate", str(out), "--dataset", str(data), *options,
                                 "--json"])
    assert result.exit_code == 0, result.output
    scores = json.loads(result.stdout)
    assert scores["sentences"] > 0 and ("accuracy" in scores) == (task == "tokens")
    result = runner.invoke(app, ["predict", str(out), "Sue likes tea @jo_b #TGIF 🙂 ."])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert "@jo_b" in record["sentences"][0]["words"]
    for span in record["spans"]:
        assert record["text"][span["start"]:span["end"]] == span["text"]
