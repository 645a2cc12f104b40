"""``seqrep report`` on distilled students (issue 25), from hand-made run folders and a bench
JSON: the students are marked with their teacher in the table and on the frontier, beside the
teacher and the plainly trained runs of the same settings, never pooled with them."""

from __future__ import annotations

import json
from pathlib import Path

from seqrep.lab.report import report

TEACHER = "/runs/issue25/teacher"


def run_folder(root: Path, name: str, model: str, r: int, exit_layer: int | None, f1: float,
               unmask: str = "none", teacher: str | None = None, unlabeled: int = 0) -> Path:
    folder = root / name
    folder.mkdir()
    labeler = {"model": f"/m/{model}", "repetitions": r, "unmask": unmask,
               "exit_layer": exit_layer, "finetune": "full"}
    run = {"labeler": labeler, "train": {"dataset": "/d/conll2003", "epochs": 1, "seed": 1,
                                         "lr": 5e-5}}
    if teacher:
        run["distill"] = {"teacher": teacher, "temperature": 1.0, "gold_weight": 0.0,
                          "unlabeled": "/d/more.txt" if unlabeled else None,
                          "unlabeled_sentences": unlabeled}
    (folder / "run.json").write_text(json.dumps(run))
    # a student's training sentences count the unlabeled ones it trained on too
    (folder / "metrics.json").write_text(json.dumps(
        {"status": "finished", "validation": {"f1": f1 + 0.01}, "train_sentences": 100 + unlabeled,
         "test": {"f1": f1, "sentences": 50}}))
    return folder


def bench_row(model: str, mode: str, r: int, exit_layer: int | None, speed: float
              ) -> dict[str, object]:
    return {"model": model, "mode": mode, "precision": "fp32", "repetitions": r,
            "exit_layer": exit_layer, "layers_computed": exit_layer or 6, "sentences": 256,
            "tokens": 5752, "seconds": round(256 / speed, 3), "sentences_per_second": speed,
            "tokens_per_second": 1480.5, "latency_ms": 41.49, "padding_waste": 0.1,
            "flops_per_sentence": 1523984640, "gflops_per_second": 100.0,
            "peak_memory_mb": 1124.2, "checksum": 1.0, "share_of_ceiling": 0.5}


def bench_file(path: Path, *extra: dict[str, object]) -> Path:
    rows = [bench_row("/m/gemma", "cut", 1, 11, 18.0), bench_row("/m/gemma", "cut", 0, 18, 30.0),
            bench_row("/m/minilm", "encoder", 0, None, 170.0), *extra]
    path.write_text(json.dumps({"kind": "bench", "config": {}, "matmul_gflops": 200.0,
                                "matmul_shapes": [], "ceilings": {"fp32": 200.0}, "rows": rows,
                                "speedups": [], "precision_speedups": []}))
    return path


def lines_with(text: str, *parts: str) -> list[str]:
    """The lines holding every part (Pareto rows' bold marks left out)."""
    return [line for line in text.replace("**", "").splitlines()
            if all(p in line for p in parts)]


def test_students_are_marked_in_the_table_and_on_the_frontier(tmp_path: Path) -> None:
    runs = [run_folder(tmp_path, "teacher", "gemma", 1, 11, 0.91),
            run_folder(tmp_path, "minilm-plain", "minilm", 0, None, 0.85),
            run_folder(tmp_path, "minilm-student", "minilm", 0, None, 0.89, teacher=TEACHER),
            run_folder(tmp_path, "gemma-r0-plain", "gemma", 0, 18, 0.80, unmask="full"),
            run_folder(tmp_path, "gemma-r0-student", "gemma", 0, 18, 0.88, unmask="full",
                       teacher=TEACHER)]
    md = report(runs, tmp_path / "report", bench_file(tmp_path / "bench.json")).read_text()
    table, frontier = md.split("### Accuracy against speed")
    marked = "full, distilled from teacher"
    # the results table: each student its own row, named by its teacher's run folder
    rows = [line for line in table.splitlines() if line.startswith("| minilm |")]
    assert sorted(rows) == [
        "| minilm | full | 5e-05 | 0 | none | all | 100 / 50 | 85.00 | - | 86.00 | 1 | 0 |",
        f"| minilm | {marked} | 5e-05 | 0 | none | all | 100 / 50 | 89.00 | - | 90.00 | 1 | 0 |"]
    # the frontier: teacher, plain run and student side by side at their bench speed
    assert len(lines_with(frontier, "| minilm |", marked, "| 89.00 |", "170.0")) == 1
    assert len(lines_with(frontier, "| minilm |", "| full |", "| 85.00 |", "170.0")) == 1
    assert len(lines_with(frontier, "| gemma |", "| 91.00 |", "18.0")) == 1
    # an unmasked r=0 student (one pass read both ways) is placed at its cut's speed, its
    # unmasking shown, beside its plainly trained twin
    assert len(lines_with(frontier, "| gemma |", marked, "unmask full", "| 88.00 |",
                          "| 30.0 (causal) |")) == 1
    assert len(lines_with(frontier, "| gemma |", "unmask full", "| 80.00 |",
                          "| 30.0 (causal) |")) == 1
    # and the text above the table says that speed is assumed, not measured
    assert ("An unmasked setting whose speed reads \"(causal)\" was not timed unmasked: it "
            "stands at the speed measured for its model, r and exit layer without unmasking, "
            "an assumption") in frontier
    # a bench that timed the unmasked cut (seqrep bench --unmask) gives them its own speed
    timed = dict(bench_row("/m/gemma", "cut", 0, 18, 27.0), unmask="full")
    md = report(runs, tmp_path / "timed", bench_file(tmp_path / "timed.json", timed)
                ).read_text()
    frontier = md.split("### Accuracy against speed")[1]
    assert len(lines_with(frontier, "| gemma |", marked, "unmask full", "| 88.00 |",
                          "| 27.0 |")) == 1
    assert len(lines_with(frontier, "| gemma |", "| 91.00 |", "| 18.0 |")) == 1  # causal r=1
    assert "(causal)" not in frontier and "not timed" not in frontier


def test_a_student_with_unlabeled_text_keeps_its_gold_budget(tmp_path: Path) -> None:
    """Trained on 100 gold and 40 unlabeled sentences, a student stands in the budget of 100
    gold sentences beside its plain twin and the teacher (so the Pareto marks compare them),
    its extra text named in its mode."""
    runs = [run_folder(tmp_path, "teacher", "gemma", 1, 11, 0.91),
            run_folder(tmp_path, "minilm-plain", "minilm", 0, None, 0.85),
            run_folder(tmp_path, "minilm-more", "minilm", 0, None, 0.84, teacher=TEACHER,
                       unlabeled=40)]
    md = report(runs, tmp_path / "report", bench_file(tmp_path / "bench.json")).read_text()
    frontier = md.split("### Accuracy against speed")[1]
    (student,) = lines_with(frontier, "distilled from teacher, +40 unlabeled")
    cells = [c.strip() for c in student.strip("|").split("|")]
    assert cells[1:3] == ["100", "50"] and cells[-1] == ""  # the plain twin beats it
    assert lines_with(frontier, "| full |", "| 85.00 |", "| yes |")
    assert "was not timed" not in frontier  # no unmasked setting here
