"""The speed run's logic: medians over interleaved rounds, a child's own peak memory, the
seqrep run spec, and the refusal when nothing has trained."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

# the harness is a package beside src/ (benchmarks/peers), not part of seqrep
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from peers import speed  # noqa: E402
from peers.common import HarnessError  # noqa: E402


def test_median_of_rounds() -> None:
    runs = [{"wall_s": 12.0, "label_s": 10.0, "peak_rss_mib": 500.0},
            {"wall_s": 9.0, "label_s": 8.0, "peak_rss_mib": 520.0},
            {"wall_s": 30.0, "label_s": 20.0, "peak_rss_mib": 510.0}]
    got = speed.summarize(runs, words=4000, sentences=300)
    assert got["median_label_s"] == 10.0 and got["median_wall_s"] == 12.0
    assert got["words_per_s"] == 400.0 and got["sentences_per_s"] == 30.0
    assert got["peak_rss_mib"] == 520.0 and got["timed"] == "labeling"
    whole = speed.summarize([{"wall_s": 4.0, "peak_rss_mib": 1.0}], words=100, sentences=8)
    assert whole["timed"] == "whole process" and whole["words_per_s"] == 25.0


def test_time_once_reads_the_child(tmp_path: Path) -> None:
    timing = tmp_path / "t.json"
    record = {"seconds": 0.5, "words": 7, "sentences": 2}
    child = (f"import json; b = bytearray(64 << 20); "
             f"json.dump({record!r}, open({str(timing)!r}, 'w'))")
    entry = speed.Entry("x", [sys.executable, "-c", child], tmp_path / "o", timing, "fp32")
    got = speed.time_once(entry, tmp_path / "log")
    assert got["label_s"] == 0.5 and got["words"] == 7
    assert got["peak_rss_mib"] >= 64  # the child's 64 MiB, not this process's peak
    bad = speed.Entry("y", [sys.executable, "-c", "raise SystemExit('no model here')"],
                      tmp_path / "o", None, "fp32")
    with pytest.raises(HarnessError, match="y: labeling failed: no model here"):
        speed.time_once(bad, tmp_path / "log2")


def test_seqrep_spec(tmp_path: Path) -> None:
    entry = speed.seqrep_entry(f"gemma-doc={tmp_path}:bf16:onnx", tmp_path, 2)
    assert entry.name == "gemma-doc" and entry.precision == "bf16"
    assert entry.command[-6:] == ["--precision", "bf16", "--runtime", "onnx", "--json",
                                  "--quiet"]
    assert entry.stdout_json and entry.train is None  # a folder without metrics.json
    (tmp_path / "metrics.json").write_text(json.dumps(
        {"train_seconds": 2880.5, "steps": 2651, "train_sentences": 14041}), encoding="utf-8")
    (tmp_path / "run.json").write_text(json.dumps({"train": {"epochs": 3}}), encoding="utf-8")
    trained = speed.seqrep_entry(f"g={tmp_path}", tmp_path, 2).train
    assert trained == {"seconds": 2880.5, "steps": 2651, "epochs": 3, "sentences": 14041,
                       "run": str(tmp_path)}
    with pytest.raises(HarnessError, match="expected NAME=RUN"):
        speed.seqrep_entry("just-a-name", tmp_path, 2)
    with pytest.raises(HarnessError, match="does not exist"):
        speed.seqrep_entry(f"x={tmp_path / 'none'}", tmp_path, 2)


def test_seqrep_labeling_seconds_come_from_its_json(tmp_path: Path) -> None:
    """seqrep evaluate --json's "seconds" (the labeling alone, model loading excluded) is the
    label_s, read from stdout while its progress and notes go to the log."""
    child = ("import json, sys; print('loading', file=sys.stderr); "
             "print(json.dumps({'f1': 0.9, 'seconds': 12.5}))")
    entry = speed.Entry("s", [sys.executable, "-c", child], tmp_path / "o", None, "bf16",
                        stdout_json=True)
    got = speed.time_once(entry, tmp_path / "log")
    assert got["label_s"] == 12.5 and got["wall_s"] < 12.5
    assert (tmp_path / "log").read_text(encoding="utf-8").strip() == "loading"
    mute = speed.Entry("m", [sys.executable, "-c", "print('no json')"], tmp_path / "o", None,
                       "bf16", stdout_json=True)
    with pytest.raises(HarnessError, match="m: expected a JSON with 'seconds'"):
        speed.time_once(mute, tmp_path / "log3")


def test_nothing_trained_is_one_line(tmp_path: Path, capsys) -> None:
    data = tmp_path / "test.jsonl"
    data.write_text(json.dumps({"words": ["a"], "tags": ["O"], "doc_id": None}) + "\n",
                    encoding="utf-8")
    with pytest.raises(SystemExit) as ex:
        speed.main(["--work", str(tmp_path), "--input", str(data),
                    "--out", str(tmp_path / "speed.json")])
    assert ex.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "nothing to time" in err
    assert not (tmp_path / "speed.json").exists()
