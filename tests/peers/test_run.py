"""The peers harness's runner and its records: a missing data directory or peer venv is one
line and exit 2; a peer that fails to train is a failed record and a failed row of the table;
a finished system is skipped on the next run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

# the harness is a package beside src/ (benchmarks/peers), not part of seqrep
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from peers import results, run  # noqa: E402
from peers.common import MARK, HarnessError  # noqa: E402
from peers.systems import System  # noqa: E402


def _fake_venv(root: Path, peer: str) -> None:
    """A venv whose python is this interpreter, marked as installed."""
    (root / peer / "bin").mkdir(parents=True)
    (root / peer / "bin" / "python").symlink_to(sys.executable)
    (root / peer / MARK).write_text("flair==0.15.1\ntorch==2.13.0+cpu\n", encoding="utf-8")


def _data(folder: Path) -> Path:
    folder.mkdir(parents=True)
    sent = {"words": ["Paris", "is", "nice"], "tags": ["B-LOC", "O", "O"], "doc_id": "doc1"}
    for split in ("train", "validation", "test"):
        (folder / f"{split}.jsonl").write_text(json.dumps(sent) + "\n", encoding="utf-8")
    (folder / "manifest.json").write_text(json.dumps({"max_sentences": None, "splits": {}}),
                                          encoding="utf-8")
    return folder


def test_missing_venv_is_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("PEERS_VENVS", str(tmp_path / "venvs"))
    with pytest.raises(SystemExit) as ex:
        run.main(["--systems", "flair-flert", "--work", str(tmp_path / "w"),
                  "--results", str(tmp_path / "r")])
    assert ex.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert str(tmp_path / "venvs" / "flair") in err and "did not install" in err
    assert not (tmp_path / "r").exists()


def test_missing_data_dir_is_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    _fake_venv(tmp_path / "venvs", "flair")
    monkeypatch.setenv("PEERS_VENVS", str(tmp_path / "venvs"))
    with pytest.raises(SystemExit) as ex:
        run.main(["--systems", "flair-flert", "--data-dir", str(tmp_path / "nothing"),
                  "--work", str(tmp_path / "w"), "--results", str(tmp_path / "r")])
    assert ex.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(tmp_path / "nothing" / "conll2003") in err


def test_unknown_system_is_one_line(capsys) -> None:
    with pytest.raises(SystemExit) as ex:
        run.main(["--systems", "spacy-cnn,nope"])
    assert ex.value.code == 2
    assert "nope" in capsys.readouterr().err


def test_failed_training_is_a_failed_record_and_row(tmp_path: Path, monkeypatch) -> None:
    venvs = tmp_path / "venvs"
    _fake_venv(venvs, "flair")
    monkeypatch.setenv("PEERS_VENVS", str(venvs))
    script = tmp_path / "broken_peer.py"
    script.write_text("import sys\nprint('loading', file=sys.stderr)\n"
                      "sys.exit('RuntimeError: out of memory in the encoder')\n",
                      encoding="utf-8")
    system = System("flair-broken", "flair", str(script), (), "a peer that cannot train")
    out = tmp_path / "results"
    rec = run.run_system(system, _data(tmp_path / "data"), tmp_path / "work", out,
                         budget=5, threads=1)
    assert rec["status"] == "failed" and rec["stage"] == "train"
    assert rec["error"] == "RuntimeError: out of memory in the encoder"
    stored = json.loads((out / "peers-flair-broken.json").read_text(encoding="utf-8"))
    assert stored == rec
    assert not results.finished(out, "flair-broken")  # a failed system runs again
    table = results.table([rec])
    row = [line for line in table.splitlines() if "flair-broken" in line]
    assert len(row) == 1 and "failed (train)" in row[0]


def test_finished_systems_are_skipped(tmp_path: Path) -> None:
    rec = {"system": "spacy-cnn", "status": "ok", "test": {"f1": 88.1, "precision": 88.0,
           "recall": 88.2}, "train": {"seconds": 600.0, "steps": 4000}}
    results.write_record(tmp_path, rec)
    assert results.finished(tmp_path, "spacy-cnn")
    assert not results.finished(tmp_path, "spacy-trf")


def test_a_broken_record_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "peers-spacy-cnn.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(HarnessError) as ex:
        results.finished(tmp_path, "spacy-cnn")
    assert len(str(ex.value).splitlines()) == 1 and "peers-spacy-cnn.json" in str(ex.value)


def test_table_rows() -> None:
    ok = {"system": "hf-trainer", "status": "ok", "description": "HF Trainer",
          "test": {"f1": 90.123, "precision": 89.5, "recall": 90.75},
          "train": {"seconds": 3540.0, "steps": 1755}}
    failed = {"system": "spacy-trf", "status": "failed", "stage": "predict",
              "description": "spaCy trf", "error": "boom"}
    lines = results.table([ok, failed]).splitlines()
    assert lines[0].startswith("| System")
    assert "| hf-trainer | HF Trainer | 90.12 | 89.50 | 90.75 | 59.0 | 1755 | ok |" in lines
    assert any("spacy-trf" in ln and "failed (predict): boom" in ln for ln in lines)


def test_epoch_override() -> None:
    from peers import systems

    changed = systems.with_epochs(systems.SYSTEMS["flair-flert"], "3")
    assert changed.train_args == ("--context", "--epochs", "3", "--lr", "5e-5",
                                  "--clock-schedule")
    with pytest.raises(HarnessError, match="no epoch count"):
        systems.with_epochs(systems.SYSTEMS["spacy-cnn"], "3")
    with pytest.raises(HarnessError, match="expected a number above 0"):
        systems.with_epochs(systems.SYSTEMS["hf-trainer"], "x")


FAKE_PEER = '''import argparse, json, sys
from pathlib import Path
p = argparse.ArgumentParser()
p.add_argument("command")
for name in ("--data", "--out", "--budget", "--threads", "--model", "--input", "--output",
             "--timing", "--precision"):
    p.add_argument(name)
a = p.parse_args()
if a.command == "train":
    Path(a.out).mkdir(parents=True)
    Path(a.out, "train-info.json").write_text(json.dumps({"seconds": 1.0, "budget": a.budget}))
else:
    # fp32 finds the one entity (F1 100); bf16 misses it (F1 0); onnx fails
    if a.precision == "onnx":
        sys.exit("no exporter for this model")
    tag = "O" if a.precision == "bf16" else "B-LOC"
    Path(a.output).parent.mkdir(parents=True, exist_ok=True)
    Path(a.output).write_text(f"Paris B-LOC {tag}\\nis O O\\nnice O O\\n\\n")
    Path(a.timing).write_text(json.dumps({"seconds": 0.25, "words": 3, "sentences": 1}))
'''


def _fake_peer(tmp_path: Path, bf16: bool) -> System:
    script = tmp_path / "fake_peer.py"
    script.write_text(FAKE_PEER, encoding="utf-8")
    return System("hf-fake", "hf", str(script), (), "a peer with two precisions",
                  offers=("bf16",) if bf16 else ())


@pytest.mark.parametrize("native", [True, False])
def test_each_precision_a_tool_offers_is_scored(tmp_path: Path, monkeypatch,
                                                native: bool) -> None:
    """A system that labels under bf16 autocast too gets that labeling's own F1 (test_at),
    where the CPU has native bf16; elsewhere only fp32 is labeled."""
    venvs = tmp_path / "venvs"
    _fake_venv(venvs, "hf")
    monkeypatch.setenv("PEERS_VENVS", str(venvs))
    flags = {"avx512_bf16": native, "amx_bf16": False, "avx2": True}
    monkeypatch.setattr(run.common, "cpu_flags", lambda: {"model": "x", "cores": 2,
                                                          "flags": flags})
    rec = run.run_system(_fake_peer(tmp_path, bf16=True), _data(tmp_path / "data"),
                         tmp_path / "work", tmp_path / "results", budget=5, threads=1)
    assert rec["status"] == "ok" and rec["test"]["f1"] == 100.0
    if native:
        assert rec["test_at"]["bf16"]["f1"] == 0.0  # its own predictions, not fp32's
        assert "--precision bf16" not in rec["commands"]["predict"]
    else:
        assert "test_at" not in rec


def test_spacy_overrides() -> None:
    """``--set`` items become load_config's dotted overrides, values typed as spaCy's CLI
    types them; a malformed one is refused in one line."""
    from peers import spacy_peer

    got = spacy_peer.parse_overrides([
        "training.accumulate_gradient=1", "training.optimizer.learn_rate.warmup_steps=90",
        "training.dropout=0.2", "nlp.lang=en", 'paths.train="a b"', "training.x=true"])
    assert got == {"training.accumulate_gradient": 1,
                   "training.optimizer.learn_rate.warmup_steps": 90, "training.dropout": 0.2,
                   "nlp.lang": "en", "paths.train": "a b", "training.x": True}
    assert spacy_peer.parse_overrides(None) == {}
    for bad in ("training.eval_frequency", "=3", "eval_frequency=3"):
        with pytest.raises(HarnessError, match="expected SECTION.KEY=VALUE"):
            spacy_peer.parse_overrides([bad])


def test_spacy_trf_schedule_fits_the_budget() -> None:
    """The spacy-trf system's overrides, read as spaCy reads them, end the learning-rate
    schedule where training stops (max_steps), warm up over a tenth of it, and ask for no
    more padded words than the hour holds. spaCy's accumulate_gradient splits each batch of
    ``batcher.size`` padded words into that many sub-batches (it does not add batches), so a
    step's words are batcher.size whatever it is. Measured here: 339 steps of 2,000 padded
    words (678,000) in the hour with sub-batches of 667 (dadb7e2's record); 273 steps of
    2,000 (546,000) in one batch (the second record): 600,000 leaves room for dev evals."""
    from peers import spacy_peer, systems

    args = list(systems.SYSTEMS["spacy-trf"].train_args)
    sets = [args[i + 1] for i, a in enumerate(args) if a == "--set"]
    got = spacy_peer.parse_overrides(sets)
    steps = got["training.max_steps"]
    assert got["training.optimizer.learn_rate.total_steps"] == steps
    assert got["training.optimizer.learn_rate.warmup_steps"] == steps // 10
    assert got["training.batcher.size"] * steps <= 600_000
    assert got["training.batcher.size"] <= 2000 // 3 + 1  # no larger than the default's sub-batch
    assert steps % got["training.eval_frequency"] == 0  # the last step is evaluated


def test_precisions_offered_where_they_run() -> None:
    """fp32 always; int8 and onnx wherever offered; bf16 autocast only on native bf16."""
    peer = System("p", "hf", "x.py", (), "d", offers=("bf16", "int8", "onnx"))
    assert peer.precisions({"avx512_bf16": False, "amx_bf16": False}) == ["fp32", "int8", "onnx"]
    assert peer.precisions({"amx_bf16": True}) == ["fp32", "bf16", "int8", "onnx"]
    assert peer.precision_args("int8") == ["--precision", "int8"]
    fused = System("c", "hf", "x.py", (), "d", offers=("bf16", "compile"))  # runs in bf16
    assert fused.precisions({"avx512_bf16": False}) == ["fp32"]
    assert fused.precisions({"avx512_bf16": True}) == ["fp32", "bf16", "compile"]
    plain = System("q", "spacy", "x.py", (), "d")
    assert plain.precisions({"avx512_bf16": True}) == ["fp32"]
    assert plain.precision_args("fp32") == []


def test_a_failed_extra_precision_keeps_the_record(tmp_path: Path, monkeypatch) -> None:
    """A labeling at an extra precision that fails is recorded in test_at as failed; the
    trained model's fp32 F1 and the other precisions stay, and the record stays ok."""
    venvs = tmp_path / "venvs"
    _fake_venv(venvs, "hf")
    monkeypatch.setenv("PEERS_VENVS", str(venvs))
    monkeypatch.setattr(run.common, "cpu_flags", lambda: {"model": "x", "cores": 2,
                                                          "flags": {"avx512_bf16": True}})
    peer = System("hf-fake", "hf", _fake_peer(tmp_path, bf16=True).script, (), "d",
                  offers=("onnx", "bf16"))
    rec = run.run_system(peer, _data(tmp_path / "data"), tmp_path / "work",
                         tmp_path / "results", budget=5, threads=1)
    assert rec["status"] == "ok" and rec["test"]["f1"] == 100.0
    assert rec["test_at"]["onnx"] == {"error": "predict onnx: no exporter for this model"}
    assert rec["test_at"]["bf16"]["f1"] == 0.0


def test_a_damaged_train_info_is_a_failed_record(tmp_path: Path, monkeypatch) -> None:
    """A peer whose training wrote a train-info.json that is not JSON (killed mid-write) is a
    failed record naming the file, written to results like any failed training, not a
    traceback that leaves the system out of the table."""
    venvs = tmp_path / "venvs"
    _fake_venv(venvs, "hf")
    monkeypatch.setenv("PEERS_VENVS", str(venvs))
    script = tmp_path / "fake_peer.py"
    script.write_text(FAKE_PEER.replace('json.dumps({"seconds": 1.0, "budget": a.budget})',
                                        '"{\\"seconds\\": 1."'), encoding="utf-8")
    peer = System("hf-fake", "hf", str(script), (), "a peer that writes half its info")
    rec = run.run_system(peer, _data(tmp_path / "data"), tmp_path / "work",
                         tmp_path / "results", budget=5, threads=1)
    info = tmp_path / "work" / "models" / "hf-fake" / "train-info.json"
    assert rec["status"] == "failed" and rec["stage"] == "train"
    assert str(info) in rec["error"] and "\n" not in rec["error"]
    assert results.read_record(results.record_path(tmp_path / "results", "hf-fake")
                               )["status"] == "failed"
