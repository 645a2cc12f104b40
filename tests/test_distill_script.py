"""scripts/distill_conll.sh end to end on tiny models (issue 25's experiment, prepared for a
later session): the teacher, a distilled and a plain student per line of STUDENTS, one bench
run, the report and the summary; run again, every finished piece is skipped; an interrupted
student is resumed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support import write_corpus

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "distill_conll.sh"


def run_script(env: dict[str, str], *steps: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *steps], env=env, capture_output=True,
                          text=True, timeout=900)


@pytest.mark.integration
def test_the_experiment_script_runs_resumes_and_summarises(tiny, tmp_path: Path) -> None:
    if shutil.which("seqrep") is None:
        pytest.skip("the seqrep command is not installed")
    data = {name: write_corpus(tmp_path / f"{name}.txt", n, seed=k)
            for k, (name, n) in enumerate((("train", 16), ("dev", 4), ("test", 4)))}
    runs = tmp_path / "runs"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "RUNS": str(runs), "THREADS": "1",
           "DATASET": str(data["train"]), "TEACHER_MODEL": tiny("llama"), "TEACHER_LAYER": "3",
           "COMMON": f"--finetune full --head-lr 1e-2 --batch-size 8 --seed 1 --eval-split "
                     f"{data['dev']} --test-split {data['test']} --quiet",
           "STUDENTS": f"enc {tiny('bert')} 0 - none 1e-3 1\n"
                       f"dec {tiny('qwen2')} 0 3 full 1e-3 1",
           "BENCH_MODEL": tiny("qwen2"), "BENCH_REPETITIONS": "0", "BENCH_LAYERS": "3",
           "BENCH_ENCODERS": tiny("bert"), "BENCH_DATASET": str(data["test"]),
           "BENCH_SPLIT": "train", "BENCH_SENTENCES": "4"}
    done = run_script(env)
    assert done.returncode == 0, done.stderr[-3000:]
    for name in ("teacher", "enc-distilled", "enc-plain", "dec-distilled", "dec-plain"):
        assert json.loads((runs / name / "metrics.json").read_text())["status"] == "finished"
    distilled = json.loads((runs / "dec-distilled" / "run.json").read_text())
    assert distilled["distill"]["teacher"] == str((runs / "teacher").resolve())
    assert distilled["labeler"]["unmask"] == "full"
    assert "distill" not in json.loads((runs / "dec-plain" / "run.json").read_text())
    assert distilled["distill"]["cache"] == str((runs / "teacher-labels").resolve())
    assert distilled["distill"]["teacher_labeled_sentences"] == 0  # the first student's
    md = (runs / "report" / "results.md").read_text()
    assert md.count("distilled from teacher") >= 2 and "Accuracy against speed" in md
    summary = (runs / "summary.md").read_text().splitlines()
    assert [line.split(" | ")[0] for line in summary if line.startswith("| enc")] == ["| enc"]
    # everything is skipped the second time; a removed metrics.json makes a resume
    (runs / "enc-plain" / "metrics.json").unlink()
    shutil.rmtree(runs / "enc-plain" / "best")
    again = run_script(env, "teacher", "students")
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stderr.count("done already") == 4
    assert "resuming: " + str(runs / "enc-plain") in again.stderr
