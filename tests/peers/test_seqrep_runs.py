"""seqrep's side of the peers benchmark: run specs (torch precisions and ONNX runtimes),
stand-ins built from a run's records, the F1 those records hold at each precision, and the
F1s a trained run adds at other runtimes (test_at.json)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from peers import seqrep_runs  # noqa: E402
from peers.common import HarnessError  # noqa: E402


def _trained_run(folder: Path) -> Path:
    (folder / "best").mkdir(parents=True)
    (folder / "best" / "config.json").write_text("{}", encoding="utf-8")
    return folder


def test_seqrep_spec(tmp_path: Path) -> None:
    run = _trained_run(tmp_path / "run")
    (entry,) = seqrep_runs.seqrep_entries(f"gemma-doc={run}:bf16", tmp_path, 2)
    assert entry.name == "gemma-doc" and entry.precision == "bf16" and not entry.stand_in
    assert entry.command[4] == str(run)
    # --overwrite: each round of the speed run writes the same predictions file again
    assert entry.command[-7:] == ["--precision", "bf16", "--runtime", "torch", "--json",
                                  "--quiet", "--overwrite"]
    assert entry.stdout_json and entry.train is None  # a folder without metrics.json
    (run / "metrics.json").write_text(json.dumps(
        {"train_seconds": 2880.5, "steps": 2651, "train_sentences": 14041}), encoding="utf-8")
    (run / "run.json").write_text(json.dumps({"train": {"epochs": 3}}), encoding="utf-8")
    (trained,) = seqrep_runs.seqrep_entries(f"g={run}", tmp_path, 2)
    assert trained.train == {"seconds": 2880.5, "steps": 2651, "epochs": 3,
                             "sentences": 14041, "run": str(run)}
    # a fourth part: the window overlap the labeling uses (--context-overlap)
    (lean,) = seqrep_runs.seqrep_entries(f"lean={run}:bf16:openvino:0.125", tmp_path, 2)
    assert lean.command[-9:] == ["--precision", "bf16", "--runtime", "openvino",
                                 "--context-overlap", "0.125", "--json", "--quiet",
                                 "--overwrite"]
    assert lean.precision == "openvino-bf16"
    (fused,) = seqrep_runs.seqrep_entries(f"fused={run}:bf16:compile", tmp_path, 2)
    assert fused.precision == "compile-bf16" and "compile" in fused.command
    with pytest.raises(HarnessError, match="overlap 'half'"):
        seqrep_runs.seqrep_entries(f"x={run}:bf16:torch:half", tmp_path, 2)
    with pytest.raises(HarnessError, match="expected NAME=RUN"):
        seqrep_runs.seqrep_entries("just-a-name", tmp_path, 2)
    with pytest.raises(HarnessError, match="does not exist"):
        seqrep_runs.seqrep_entries(f"x={tmp_path / 'none'}", tmp_path, 2)
    records = tmp_path / "records"  # run.json and metrics.json, no model
    records.mkdir()
    with pytest.raises(HarnessError, match="holds no trained model.*--stand-ins missing"):
        seqrep_runs.seqrep_entries(f"r={records}", tmp_path, 2)


RUN_JSON = {"labeler": {"model": "gemma3-270m", "exit_layer": 11, "repetitions": 1,
                        "context": "document-focus", "labels": ["O", "B-LOC", "I-LOC"]},
            "train": {"dataset": "conll2003", "epochs": 3, "precision": "bf16",
                      "max_train_sentences": None, "max_eval_sentences": 1000,
                      "max_test_sentences": None, "max_steps": None, "batch_size": 16},
            "reader_options": {}}
METRICS = {"train_seconds": 2793.1, "steps": 2651, "train_sentences": 14041,
           "test": {"f1": 0.92, "precision": 0.91, "recall": 0.93, "sentences": 3453}}


def _records(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps(RUN_JSON), encoding="utf-8")
    (folder / "metrics.json").write_text(json.dumps(METRICS), encoding="utf-8")
    return folder


def test_seqrep_stand_in_keeps_the_labeler_and_the_f1(tmp_path: Path, monkeypatch) -> None:
    """A seqrep stand-in trains the records' labeler configuration unchanged on 16
    sentences for one epoch; its row's F1 is the records' test F1, at their precision only."""
    import seqrep.train

    built = []

    def fake_train(labeler, cfg, output, **kw):
        built.append((labeler, cfg, kw))
        (Path(output) / "best").mkdir(parents=True)
        (Path(output) / "best" / "config.json").write_text("{}", encoding="utf-8")

    monkeypatch.setattr(seqrep.train, "train", fake_train)
    records = _records(tmp_path / "records")
    (entry,) = seqrep_runs.seqrep_entries(f"recipe={records}:bf16", tmp_path / "w", 2, "missing")
    assert entry.stand_in and entry.name == "recipe"
    folder = entry.command[4]
    assert folder == str(seqrep_runs.stand_in_folder(records, tmp_path / "w"))
    assert Path(folder).parent == tmp_path / "w" / "standins"
    labeler, cfg, kw = built[0]
    assert (labeler.model, labeler.exit_layer, labeler.repetitions, labeler.context,
            labeler.labels) == ("gemma3-270m", 11, 1, "document-focus", ["O", "B-LOC", "I-LOC"])
    assert (cfg.epochs, cfg.max_train_sentences, cfg.max_eval_sentences,
            cfg.max_test_sentences, cfg.precision, cfg.batch_size) == (1, 16, 16, 16, "bf16", 16)
    assert entry.test["f1"] == 92.0 and entry.test["recall"] == 93.0
    assert entry.test["source"] == str(records / "metrics.json")
    assert entry.train["seconds"] == 2793.1  # the trained run's training, not the stand-in's
    (fp32,) = seqrep_runs.seqrep_entries(f"r2={records}:fp32", tmp_path / "w", 2, "missing")
    assert fp32.test is None  # the records hold no F1 at fp32
    seqrep_runs.seqrep_entries(f"recipe={records}:bf16", tmp_path / "w", 2, "missing")
    assert len(built) == 1  # one stand-in per run folder, whatever the spec's name
    other = _records(tmp_path / "elsewhere" / "records")  # same name, another run
    (third,) = seqrep_runs.seqrep_entries(f"recipe={other}:bf16", tmp_path / "w", 2, "missing")
    assert len(built) == 2 and third.command[4] != folder


def _fake_export(monkeypatch) -> list:
    """seqrep export replaced by a folder with its marker files; the calls are returned."""
    calls = []

    def fake(model: Path, out: Path, logs: Path) -> Path:
        calls.append((model, out))
        out.mkdir(parents=True, exist_ok=True)
        (out / "seqrep-onnx.json").write_text("{}", encoding="utf-8")
        return out

    monkeypatch.setattr(seqrep_runs, "export", fake)
    return calls


def test_onnx_runtimes_label_an_export(tmp_path: Path, monkeypatch) -> None:
    """An ONNX runtime labels an export of the run (made before timing), in fp32, and its
    table cell names the runtime; a bf16 ONNX spec is refused in one line."""
    calls = _fake_export(monkeypatch)
    run = _trained_run(tmp_path / "run")
    (onnx,) = seqrep_runs.seqrep_entries(f"g={run}:fp32:onnx", tmp_path / "w", 2)
    (int8,) = seqrep_runs.seqrep_entries(f"g8={run}::onnx-int8", tmp_path / "w", 2)
    exported = calls[0][1]  # one export of the run serves both runtimes
    assert calls == [(run, exported), (run, exported)]
    assert exported.parent == tmp_path / "w" / "exports"
    assert onnx.command[4] == int8.command[4] == str(exported)
    assert onnx.command[-7:-1] == ["--precision", "fp32", "--runtime", "onnx", "--json",
                                   "--quiet"]
    assert (onnx.precision, int8.precision) == ("onnx", "onnx-int8")
    assert int8.command[-5:-3] == ["--runtime", "onnx-int8"]
    with pytest.raises(HarnessError, match="onnx runs an fp32 graph"):
        seqrep_runs.seqrep_entries(f"g={run}:bf16:onnx", tmp_path / "w", 2)
    # an export folder is labeled as it is
    (direct,) = seqrep_runs.seqrep_entries(f"d={exported}::onnx", tmp_path / "w", 2)
    assert direct.command[4] == str(exported) and len(calls) == 2


def test_stand_in_rows_at_onnx_carry_test_at(tmp_path: Path, monkeypatch) -> None:
    """A stand-in at an ONNX runtime is exported too, and its row's F1 is the records'
    test_at.json entry for that runtime; without one, it has none."""
    calls = _fake_export(monkeypatch)
    monkeypatch.setattr(seqrep_runs, "seqrep_stand_in", lambda run, out: out)
    records = _records(tmp_path / "records")
    (bare,) = seqrep_runs.seqrep_entries(f"r={records}::onnx-int8", tmp_path / "w", 2, "missing")
    assert bare.stand_in and bare.test is None
    (records / "test_at.json").write_text(json.dumps(
        {"onnx-int8": {"f1": 91.9, "precision": 91.0, "recall": 92.8}}), encoding="utf-8")
    (got,) = seqrep_runs.seqrep_entries(f"r={records}::onnx-int8", tmp_path / "w", 2, "missing")
    assert got.test["f1"] == 91.9 and got.test["source"] == str(records / "test_at.json")
    stand_in = seqrep_runs.stand_in_folder(records, tmp_path / "w")
    assert calls[-1][0] == stand_in and calls[-1][1].parent == tmp_path / "w" / "exports"
    assert got.command[4] == str(calls[-1][1])
    # test_at.json's bf16 entry, where present, wins over metrics.json's (same precision)
    (bf16,) = seqrep_runs.seqrep_entries(f"b={records}:bf16", tmp_path / "w", 2, "missing")
    assert bf16.test["f1"] == 92.0  # none in test_at.json: metrics.json's


def test_at_runtimes_scores_each_labeling(tmp_path: Path, monkeypatch) -> None:
    """at_runtimes labels at each runtime (the labeling faked: one entity right, one
    missed), scores with seqrep score (P 100, R 50: F1 66.67 by hand) and merges the F1s
    into the records' test_at.json, keeping what was there."""
    from peers import speed

    _fake_export(monkeypatch)
    run = _trained_run(tmp_path / "run")
    records = tmp_path / "records"
    records.mkdir()
    (records / "test_at.json").write_text(json.dumps({"fp32": {"f1": 90.0}}), encoding="utf-8")

    def fake_time(entry, log):
        # the real time_once makes the output folder first (test_speed's
        # test_time_once_makes_the_output_folder): the fake does as it does
        entry.output.parent.mkdir(parents=True, exist_ok=True)
        entry.output.write_text("Peter B-PER B-PER\nin O O\nParis B-LOC O\n\n",
                                encoding="utf-8")
        return {"wall_s": 2.0, "label_s": 1.5, "peak_rss_mib": 10.0}

    monkeypatch.setattr(speed, "time_once", fake_time)
    got = seqrep_runs.at_runtimes(run, records, ["onnx", "onnx-int8"], tmp_path / "w", 2)
    saved = json.loads((records / "test_at.json").read_text(encoding="utf-8"))
    assert saved == got and saved["fp32"] == {"f1": 90.0}
    for r in ("onnx", "onnx-int8"):
        assert round(saved[r]["f1"], 2) == 66.67 and saved[r]["precision"] == 100.0
        assert saved[r]["label_s"] == 1.5 and r in saved[r]["command"]
    # a runtime at another window overlap: its own row, the overlap on its command
    got = seqrep_runs.at_runtimes(run, records, ["compile-bf16@0.125"], tmp_path / "w", 2)
    row = got["compile-bf16@0.125"]
    assert row["command"][-9:-3] == ["--precision", "bf16", "--runtime", "compile",
                                     "--context-overlap", "0.125"]
    assert "onnx" in got  # kept
    with pytest.raises(HarnessError, match="unknown 'fp16'"):
        seqrep_runs.at_runtimes(run, records, ["fp16"], tmp_path / "w", 2)
    with pytest.raises(HarnessError, match="no trained model"):
        seqrep_runs.at_runtimes(records, records, ["onnx"], tmp_path / "w", 2)


def test_damaged_records_are_one_line_naming_the_file(tmp_path: Path) -> None:
    """A run's test_at.json, metrics.json or run.json that is not JSON (or not an object)
    is a HarnessError naming that file, never a traceback from json."""
    records = _records(tmp_path / "records")
    (records / "test_at.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(HarnessError, match="test_at.json"):
        seqrep_runs.seqrep_test(records, "bf16")
    (records / "test_at.json").unlink()
    (records / "metrics.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(HarnessError, match="metrics.json"):
        seqrep_runs.seqrep_test(records, "bf16")
    with pytest.raises(HarnessError, match="metrics.json"):
        seqrep_runs.seqrep_training(records)
    (records / "metrics.json").write_text("{}", encoding="utf-8")
    (records / "run.json").write_text("", encoding="utf-8")
    with pytest.raises(HarnessError, match="run.json"):
        seqrep_runs.seqrep_test(records, "bf16")
    (records / "run.json").write_text(json.dumps({"train": {}}), encoding="utf-8")
    with pytest.raises(HarnessError, match="no 'labeler' object"):
        seqrep_runs.seqrep_stand_in(records, tmp_path / "stand-in")


def test_an_openvino_spec_runs_the_run_folder_on_openvino(tmp_path: Path) -> None:
    run = _trained_run(tmp_path / "run")
    (entry,) = seqrep_runs.seqrep_entries(f"g-ov={run}:bf16:openvino", tmp_path, 2)
    assert entry.precision == "openvino-bf16" and entry.command[4] == str(run)
    assert entry.command[-7:-1] == ["--precision", "bf16", "--runtime", "openvino", "--json",
                                    "--quiet"]


def test_the_changed_share_counts_words_whose_tag_differs(tmp_path: Path) -> None:
    a, b = tmp_path / "a.conll", tmp_path / "b.conll"
    a.write_text("EU B-ORG B-ORG\nrejects O O\n\nPeter B-PER B-PER\nBlack I-PER I-PER\n")
    b.write_text("EU B-ORG B-LOC\nrejects O O\n\nPeter B-PER B-PER\nBlack I-PER I-PER\n")
    assert seqrep_runs.changed_share(a, b) == 0.25  # 1 of 4 words, counted by hand
    b.write_text("EU B-ORG B-ORG\n")
    with pytest.raises(HarnessError, match="not the same sentences"):
        seqrep_runs.changed_share(a, b)
