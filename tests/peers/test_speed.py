"""The speed run's logic: medians over interleaved rounds, a child's own peak memory, the
seqrep run spec, and the refusal when nothing has trained."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

# the harness is a package beside src/ (benchmarks/peers), not part of seqrep
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
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


def test_a_childs_peak_is_its_own_not_the_parents(tmp_path: Path) -> None:
    """Linux starts a forked child's ru_maxrss at the parent's resident size (the copy it
    execs from), so a harness that had loaded Gemma read 3,497 MiB for every system, spaCy's
    CNN included: the peak is the child's own address space's high-water mark (VmHWM)."""
    ballast = bytearray(400 << 20)  # this process now holds 400 MiB more
    ballast[::4096] = b"x" * len(ballast[::4096])  # touched, so resident
    child = "import time; b = bytearray(64 << 20); b[::4096] = b'y' * len(b[::4096]); " \
            "time.sleep(0.5)"
    entry = speed.Entry("c", [sys.executable, "-c", child], tmp_path / "o", None, "fp32")
    got = speed.time_once(entry, tmp_path / "log")
    assert 64 <= got["peak_rss_mib"] < 300, got  # its 64 MiB and an interpreter, not 400 more
    del ballast


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


def _fake_system(tmp_path: Path, monkeypatch) -> Path:
    """The fake peer of test_run (train writes train-info.json with its budget, predict
    writes columns and a timing) registered as hf-fake, in a fake hf venv; its results
    folder holds an ok record with F1 88.0 in fp32 and 87.5 in bf16."""
    from peers import systems
    from test_run import _fake_peer, _fake_venv

    _fake_venv(tmp_path / "venvs", "hf")
    monkeypatch.setenv("PEERS_VENVS", str(tmp_path / "venvs"))
    monkeypatch.setattr(systems, "SYSTEMS", {"hf-fake": _fake_peer(tmp_path, bf16=True)})
    out = tmp_path / "results"
    out.mkdir()
    (out / "peers-hf-fake.json").write_text(json.dumps(
        {"system": "hf-fake", "status": "ok", "test": {"f1": 88.0},
         "test_at": {"bf16": {"f1": 87.5}}, "train": {"seconds": 3000.0, "steps": 900}}),
        encoding="utf-8")
    return out


BF16 = {"avx512_bf16": True}


def test_stand_ins_for_missing_models(tmp_path: Path, monkeypatch) -> None:
    results_dir = _fake_system(tmp_path, monkeypatch)
    work, data = tmp_path / "work", tmp_path / "work" / "data" / "test.jsonl"
    assert speed._peer_entries(None, work, data, 2, BF16, "none", results_dir) == []
    got = speed._peer_entries(None, work, data, 2, BF16, "missing", results_dir)
    assert [(e.name, e.precision, e.stand_in) for e in got] == [
        ("hf-fake", "fp32", True), ("hf-fake-bf16", "bf16", True)]
    assert [e.test["f1"] for e in got] == [88.0, 87.5]  # the trained model's, per precision
    assert got[0].test["source"] == str(results_dir / "peers-hf-fake.json")
    info = json.loads((work / "standins" / "hf-fake" / "train-info.json").read_text())
    assert float(info["budget"]) == speed.STAND_IN_BUDGET  # its own train, for a second
    assert got[1].command[-2:] == ["--precision", "bf16"]
    # a trained model beside: it is timed, and with "also" its stand-in next to it
    (work / "models" / "hf-fake").mkdir(parents=True)
    (work / "models" / "hf-fake" / "train-info.json").write_text("{}", encoding="utf-8")
    trained = speed._peer_entries(None, work, data, 2, {}, "missing", results_dir)
    assert [(e.name, e.stand_in, e.test) for e in trained] == [("hf-fake", False, None)]
    both = speed._peer_entries(None, work, data, 2, {}, "also", results_dir)
    assert [(e.name, e.stand_in) for e in both] == [("hf-fake", False),
                                                    ("hf-fake~stand-in", True)]


def test_no_stand_in_without_an_ok_record(tmp_path: Path, monkeypatch) -> None:
    results_dir = _fake_system(tmp_path, monkeypatch)
    (results_dir / "peers-hf-fake.json").write_text(json.dumps(
        {"system": "hf-fake", "status": "failed", "stage": "train", "error": "x"}))
    work = tmp_path / "work"
    assert speed._peer_entries(None, work, work / "t.jsonl", 2, {}, "missing",
                               results_dir) == []
    assert not (work / "standins").exists()


def test_a_stand_in_that_fails_to_build_is_one_line(tmp_path: Path, monkeypatch) -> None:
    from peers import systems

    results_dir = _fake_system(tmp_path, monkeypatch)
    broken = tmp_path / "broken.py"
    broken.write_text("raise SystemExit('no encoder here')\n", encoding="utf-8")
    monkeypatch.setattr(systems, "SYSTEMS", {"hf-fake": systems.System(
        "hf-fake", "hf", str(broken), (), "broken")})
    with pytest.raises(HarnessError) as ex:
        speed._peer_entries(None, tmp_path / "w", tmp_path / "t.jsonl", 2, {}, "missing",
                            results_dir)
    assert str(ex.value) == "hf-fake: its stand-in did not build: no encoder here"


def test_stand_in_ratio_beside_its_trained_twin() -> None:
    rows = {"a": {"status": "ok", "words_per_s": 500.0},
            "a~stand-in": {"status": "ok", "words_per_s": 490.0},
            "a-bf16": {"status": "ok", "words_per_s": 1000.0},
            "a~stand-in-bf16": {"status": "ok", "words_per_s": 1030.0},
            "b~stand-in": {"status": "ok", "words_per_s": 10.0},  # no twin timed
            "c": {"status": "failed"}, "c~stand-in": {"status": "ok", "words_per_s": 5.0}}
    speed.stand_in_ratios(rows)
    assert rows["a~stand-in"]["stand_in_over_trained"] == 0.98
    assert rows["a~stand-in-bf16"]["stand_in_over_trained"] == 1.03
    assert all("stand_in_over_trained" not in rows[k] for k in ("b~stand-in", "c~stand-in",
                                                                  "a", "a-bf16"))


def _fake_speed_run(tmp_path: Path, monkeypatch) -> tuple[Path, list[str]]:
    """The fake peer with its ok record, a one-sentence test input (3 words) and a work
    folder: the speed record's path and speed.main's arguments but --repeats, stand-ins for
    the missing model."""
    results_dir = _fake_system(tmp_path, monkeypatch)
    data = tmp_path / "test.jsonl"
    data.write_text(json.dumps({"words": ["Paris", "is", "nice"],
                                "tags": ["B-LOC", "O", "O"], "doc_id": None}) + "\n")
    (tmp_path / "work" / "data").mkdir(parents=True)
    out = tmp_path / "speed.json"
    return out, ["--work", str(tmp_path / "work"), "--input", str(data), "--out", str(out),
                 "--results", str(results_dir), "--stand-ins", "missing"]


def test_a_stand_in_row_carries_the_records_f1(tmp_path: Path, monkeypatch) -> None:
    """The speed run end to end on the fake peer: the stand-in is timed, its predictions
    are not scored, its row's F1 is the record's, and the table says it was a stand-in."""
    from peers import results

    out, args = _fake_speed_run(tmp_path, monkeypatch)
    speed.main([*args, "--repeats", "1"])
    got = json.loads(out.read_text())
    row = got["systems"]["hf-fake"]
    assert got["stand_ins"] == "missing" and row["weights"] == "stand-in"
    assert got["peak_memory"] == speed.PEAK_MEMORY  # results.py trusts its peaks
    assert row["test"]["f1"] == 88.0  # not the fake predictions' 100
    assert row["words_per_s"] == 12.0  # 3 words in the fake's 0.25 s
    # the machine's matmul rate, measured before the first round and after the last
    for when in ("before", "after"):
        assert got["matmul_gflops"][when]["fp32"] > 0 and got["matmul_gflops"][when]["bf16"] > 0
    (table_row,) = [r for r in results.rows([], got) if r["name"] == "hf-fake"]
    assert table_row["status"] == "ok, timed on a stand-in" and table_row["f1"] == 88.0


def test_seqrep_rows_refuse_a_smaller_input(tmp_path: Path, capsys) -> None:
    """seqrep's rows label CoNLL-2003's whole test split through seqrep evaluate, so a speed
    run over another input (--input, or a smoke work folder's cut split) would divide their
    time by the wrong word count: refused in one line before anything runs."""
    data = tmp_path / "test.jsonl"
    data.write_text(json.dumps({"words": ["a"], "tags": ["O"], "doc_id": None}) + "\n",
                    encoding="utf-8")
    smoke = tmp_path / "smoke"
    (smoke / "data").mkdir(parents=True)
    (smoke / "data" / "test.jsonl").write_text(data.read_text(), encoding="utf-8")
    (smoke / "data" / "manifest.json").write_text(json.dumps({"max_sentences": 1}))
    for args in (["--work", str(tmp_path), "--input", str(data)], ["--work", str(smoke)]):
        with pytest.raises(SystemExit) as ex:
            speed.main([*args, "--seqrep", f"s={tmp_path}:bf16",
                        "--out", str(tmp_path / "speed.json")])
        assert ex.value.code == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "whole test split" in err, err
        assert not (tmp_path / "speed.json").exists()


def test_time_once_makes_the_output_folder(tmp_path: Path) -> None:
    """seqrep evaluate refuses --predictions in a folder that does not exist, and a speed
    run of seqrep rows alone (or at_runtimes) on a fresh work folder has no WORK/speed yet:
    the labeling's output folder is made before the child starts."""
    out = tmp_path / "fresh" / "speed" / "x.conll"
    child = (f"import pathlib, sys; p = pathlib.Path({str(out)!r}); "
             "sys.exit('no folder') if not p.parent.is_dir() else p.write_text('')")
    entry = speed.Entry("x", [sys.executable, "-c", child], out, None, "fp32")
    speed.time_once(entry, tmp_path / "log")
    assert out.is_file()


def test_a_run_cut_short_keeps_its_finished_rounds(tmp_path: Path, monkeypatch) -> None:
    """A speed run takes hours and a session ends when it ends: the record is written after
    every round but the last, so a run killed in round 2 leaves round 1's medians, saying
    how many rounds they hold, and the table says so on every row."""
    from peers import results

    out, args = _fake_speed_run(tmp_path, monkeypatch)
    real = speed.time_once

    def killed_in_round_two(entry, log):
        if out.exists():  # written once round 1 ended: the session ends here
            raise KeyboardInterrupt
        return real(entry, log)

    monkeypatch.setattr(speed, "time_once", killed_in_round_two)
    with pytest.raises(KeyboardInterrupt):
        speed.main([*args, "--repeats", "3"])
    got = json.loads(out.read_text())
    assert got["repeats"] == 3 and got["rounds_completed"] == 1
    row = got["systems"]["hf-fake"]
    assert row["rounds"] == 1 and row["words_per_s"] == 12.0 and row["test"]["f1"] == 88.0
    assert "after" not in got["matmul_gflops"]  # the probe after the last round never ran
    table = [r for r in results.rows([], got) if r["name"] == "hf-fake"]
    assert table[0]["status"] == "ok, timed on a stand-in (1 of 3 rounds)"
