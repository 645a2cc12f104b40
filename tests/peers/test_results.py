"""The peers table, plot and page: every timed labeling and every trained or failed system
is a row, an F1 comes from the labeling at its own precision, and the page keeps its prose."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from peers import results  # noqa: E402
from peers.common import HarnessError  # noqa: E402

RECORDS = [
    {"system": "hf-trainer", "status": "ok", "test": {"f1": 90.0},
     "train": {"seconds": 1800.0, "steps": 878}},
    {"system": "flair-flert", "status": "failed", "stage": "train", "error": "out of memory"},
    {"system": "spacy-cnn", "status": "ok", "test": {"f1": 85.5},
     "train": {"seconds": 600.0, "steps": 4000}},
]
SPEED = {"peak_memory": "own: each labeling forked from peak.py", "systems": {
    "hf-trainer": {"status": "ok", "system": "hf-trainer", "precision": "fp32",
                   "words_per_s": 500.0, "sentences_per_s": 37.2, "peak_rss_mib": 900.4,
                   "test": {"f1": 90.0}},
    "hf-trainer-bf16": {"status": "ok", "system": "hf-trainer", "precision": "bf16",
                        "words_per_s": 1100.0, "sentences_per_s": 81.8,
                        "peak_rss_mib": 700.0, "test": {"f1": 89.96}},
    "gemma-focus": {"status": "ok", "system": "gemma-focus", "precision": "bf16",
                    "words_per_s": 820.0, "sentences_per_s": 61.0, "peak_rss_mib": 1500.0,
                    "test": {"f1": 92.1}, "train": {"seconds": 2880.0, "steps": 2651}},
    "spacy-cnn": {"status": "failed", "system": "spacy-cnn", "precision": "fp32",
                  "error": "labeling failed: killed"},
}}


def test_rows_join_speed_and_records() -> None:
    got = {r["name"]: r for r in results.rows(RECORDS, SPEED)}
    assert list(got) == ["hf-trainer", "hf-trainer-bf16", "gemma-focus", "spacy-cnn",
                         "flair-flert"]
    bf16 = got["hf-trainer-bf16"]  # its own F1 (89.96, not the fp32 record's 90.0)
    assert bf16["f1"] == 89.96 and bf16["train_s"] == 1800.0 and bf16["steps"] == 878
    assert not bf16["seqrep"] and got["gemma-focus"]["seqrep"]
    assert got["gemma-focus"]["train_s"] == 2880.0  # a seqrep run brings its own training
    assert got["spacy-cnn"]["f1"] is None and "killed" in got["spacy-cnn"]["status"]
    assert got["flair-flert"]["status"] == "failed (train): out of memory"
    before_speed = {r["name"]: r for r in results.rows(RECORDS, None)}
    assert before_speed["spacy-cnn"]["status"] == "not timed"
    assert before_speed["spacy-cnn"]["f1"] == 85.5


def test_peaks_only_from_a_run_that_measured_them_so() -> None:
    """An older speed run's children counted the harness's resident size in their peaks (all
    3,497 MiB once it held Gemma): its peaks are left out, or taken from a later pass that
    measured each labeling's own (peak_memory); its speeds and F1s stay."""
    old = {"systems": {k: {**v, "peak_rss_mib": 3497.0} for k, v in SPEED["systems"].items()}}
    alone = {r["name"]: r for r in results.rows(RECORDS, old)}
    assert alone["hf-trainer"]["peak_rss_mib"] is None
    assert alone["hf-trainer"]["words_per_s"] == 500.0 and alone["hf-trainer"]["f1"] == 90.0
    memory = {"peak_memory": "own", "systems": {
        "hf-trainer": {"status": "ok", "words_per_s": 1.0, "peak_rss_mib": 811.0}}}
    got = {r["name"]: r for r in results.rows(RECORDS, old, memory)}
    assert got["hf-trainer"]["peak_rss_mib"] == 811.0 and got["hf-trainer"]["words_per_s"] == 500.0
    assert got["gemma-focus"]["peak_rss_mib"] is None  # the memory pass did not run it
    unmarked = {"systems": memory["systems"]}  # a pass without the mark is not trusted either
    assert {r["name"]: r for r in results.rows(RECORDS, old, unmarked)}[
        "hf-trainer"]["peak_rss_mib"] is None
    # a run that measured its own peaks keeps them, whatever a memory pass says
    assert {r["name"]: r for r in results.rows(RECORDS, SPEED, memory)}[
        "hf-trainer"]["peak_rss_mib"] == 900.4


def test_row_table_cells() -> None:
    text = results.row_table(results.rows(RECORDS, SPEED))
    lines = text.splitlines()
    assert len(lines) == 2 + 5
    assert lines[3] == ("| hf-trainer-bf16 | bf16 | 89.96 | 1100 | 81.8 | 700 | 30.0 | 878 "
                        "| ok |")
    assert lines[4].startswith("| **gemma-focus** | bf16 | 92.10 | 820 | 61.0 | 1500 | 48.0 |")
    assert lines[6] == ("| flair-flert | fp32 | - | - | - | - | - | - "
                        "| failed (train): out of memory |")


def test_plot_has_every_timed_point(tmp_path: Path) -> None:
    path = tmp_path / "plot.png"
    assert results.plot(results.rows(RECORDS, SPEED), path) == 3  # not the failed ones
    unscored = {"systems": {"x": {"status": "ok", "system": "x", "precision": "fp32",
                                  "words_per_s": 900.0, "test": {"error": "no predictions"}}}}
    assert results.plot(results.rows([], unscored), tmp_path / "none.png") == 0  # timed, no F1
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_numbers_points_by_f1_and_leaves_a_far_row_off_the_axes() -> None:
    """Numbered by F1, highest first (a tie: the slower first); a row more than 30 points
    under the best is listed, not drawn (93 - 30 = 63: 46.6 is under it, 63 is not)."""
    def row(name: str, f1: float, speed: float) -> dict:
        return {"name": name, "f1": f1, "words_per_s": speed}

    got = results.plot_points([row("fast", 90.0, 3000.0), row("int8", 46.6, 1300.0),
                               row("best", 93.0, 1900.0), row("edge", 63.0, 100.0),
                               row("slow", 90.0, 700.0), row("untimed", 88.0, None)])
    assert [(i, r["name"], drawn) for i, r, drawn in got] == [
        (1, "best", True), (2, "slow", True), (3, "fast", True), (4, "edge", True),
        (5, "int8", False)]


def test_fill_page_keeps_the_prose(tmp_path: Path) -> None:
    page = tmp_path / "peers.md"
    page.write_text(f"# Peers\n\nprose\n\n{results.BEGIN}\nold table\n{results.END}\n\nmore\n",
                    encoding="utf-8")
    results.fill_page(page, "| new |\n")
    assert page.read_text(encoding="utf-8") == (
        f"# Peers\n\nprose\n\n{results.BEGIN}\n\n| new |\n\n{results.END}\n\nmore\n")
    bare = tmp_path / "bare.md"
    bare.write_text("# no markers\n", encoding="utf-8")
    with pytest.raises(HarnessError, match="expected the markers"):
        results.fill_page(bare, "| new |\n")
    assert bare.read_text(encoding="utf-8") == "# no markers\n"


def test_main_prints_the_table_from_files(tmp_path: Path, capsys) -> None:
    for rec in RECORDS:
        (tmp_path / f"peers-{rec['system']}.json").write_text(json.dumps(rec), encoding="utf-8")
    (tmp_path / "peers-speed.json").write_text(json.dumps(SPEED), encoding="utf-8")
    # another speed run saved beside them (speed.py --out) is no system's record either
    (tmp_path / "peers-stand-in-check.json").write_text(json.dumps(SPEED), encoding="utf-8")
    results.main(["--results", str(tmp_path)])
    out = capsys.readouterr().out
    assert out == results.row_table(results.rows(RECORDS, SPEED))
    assert "peers-speed" not in out  # the speed file is not read as a system's record
    (tmp_path / "peers-speed.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(SystemExit) as ex:
        results.main(["--results", str(tmp_path)])
    assert ex.value.code == 2 and "not a peers speed record" in capsys.readouterr().err


def test_main_writes_page_and_figure(tmp_path: Path) -> None:
    res = tmp_path / "results"
    res.mkdir()
    for rec in RECORDS:
        (res / f"peers-{rec['system']}.json").write_text(json.dumps(rec), encoding="utf-8")
    (res / "peers-speed.json").write_text(json.dumps(SPEED), encoding="utf-8")
    page = tmp_path / "docs" / "research" / "peers.md"
    page.parent.mkdir(parents=True)
    page.write_text(f"intro\n{results.BEGIN}\n{results.END}\n", encoding="utf-8")
    results.main(["--results", str(res), "--page", str(page), "--plot",
                  str(tmp_path / "docs" / "fig.png")])
    text = page.read_text(encoding="utf-8")
    assert "| **gemma-focus** | bf16 | 92.10 |" in text
    assert "![test F1 against words/s](../fig.png)" in text  # relative to the page
    assert (tmp_path / "docs" / "fig.png").is_file()
