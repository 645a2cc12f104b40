"""scripts/distill_conll.sh (issue 25's experiment, prepared for a later session): its step
logic at its real settings with a stand-in for the seqrep command (the teacher, a distilled and
a plain student per line of STUDENTS through one label cache, one bench run, the report and the
summary; finished pieces skipped, an interrupted one resumed, ONLY=NAME), every command it
issues parsed by the real command line; and, marked slow, end to end on tiny models."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import write_corpus

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "distill_conll.sh"


def run_script(env: dict[str, str], *steps: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *steps], env=env, capture_output=True,
                          text=True, timeout=900)


@pytest.mark.slow  # every step a real seqrep process: minutes when the machine is loaded
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
           # one student: the stand-in test above checks every student's commands
           "STUDENTS": f"enc {tiny('bert')} 0 - none 1e-3 1",
           "BENCH_MODEL": tiny("qwen2"), "BENCH_REPETITIONS": "0", "BENCH_LAYERS": "3",
           "BENCH_ENCODERS": tiny("bert"), "BENCH_DATASET": str(data["test"]),
           "BENCH_SPLIT": "train", "BENCH_SENTENCES": "4", "BENCH_CONTEXT": "sentence"}
    done = run_script(env)
    assert done.returncode == 0, done.stderr[-3000:]
    for name in ("teacher", "enc-distilled", "enc-plain"):
        assert json.loads((runs / name / "metrics.json").read_text())["status"] == "finished"
    distilled = json.loads((runs / "enc-distilled" / "run.json").read_text())
    assert distilled["distill"]["teacher"] == str((runs / "teacher").resolve())
    assert "distill" not in json.loads((runs / "enc-plain" / "run.json").read_text())
    assert distilled["distill"]["cache"] == str((runs / "teacher-labels").resolve())
    md = (runs / "report" / "results.md").read_text()
    assert md.count("distilled from teacher") >= 1 and "Accuracy against speed" in md
    summary = (runs / "summary.md").read_text().splitlines()
    assert [line.split(" | ")[0] for line in summary if line.startswith("| enc")] == ["| enc"]
    # everything is skipped the second time; a removed metrics.json makes a resume
    (runs / "enc-plain" / "metrics.json").unlink()
    shutil.rmtree(runs / "enc-plain" / "best")
    again = run_script(env, "teacher", "students")
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stderr.count("done already") == 2
    assert "resuming: " + str(runs / "enc-plain") in again.stderr


# A stand-in for the seqrep command: it records each call and writes what the real one leaves
# behind (a run folder's run.json and metrics.json, bench.json, report/results.md), so the
# script's own logic runs in a second, at its real settings (no model is loaded)
STUB = """
import json, os, sys
from pathlib import Path
args = sys.argv[1:]
with open(os.environ["STUB_LOG"], "a", encoding="utf-8") as f:
    f.write(json.dumps(args) + "\\n")
opt = lambda name: args[args.index(name) + 1]
if args[0] in ("train", "distill"):
    out = Path(opt("--output"))
    out.mkdir(parents=True, exist_ok=True)
    if out.name == os.environ.get("STUB_INTERRUPT"):
        sys.exit(1)  # killed: the folder is there, its metrics.json is not
    layer = opt("--exit-layer") if "--exit-layer" in args else "all"
    layer = None if layer == "all" else int(layer)  # run.json holds all as null
    model = opt("--model" if args[0] == "train" else "--student")
    (out / "run.json").write_text(json.dumps({"labeler": {
        "model": model, "repetitions": int(opt("-r")), "exit_layer": layer,
        "unmask": opt("--unmask") if "--unmask" in args else "none"}}))
    metrics = {"status": "finished", "test": {"f1": json.loads(os.environ["STUB_F1"])[out.name]}}
    if args[0] == "distill":
        metrics["distill"] = {"teacher_sentences_per_second": 20.0, "work_seconds": 100.0}
    (out / "metrics.json").write_text(json.dumps(metrics))
elif args[0] == "bench":
    Path(opt("--output")).write_text(os.environ["STUB_BENCH"])
elif args[0] == "report":
    Path(opt("--out")).mkdir(parents=True, exist_ok=True)
    (Path(opt("--out")) / "results.md").write_text("the report\\n")
"""
F1 = {"teacher": 0.9125, "minilm-distilled": 0.89, "minilm-plain": 0.8554,
      "mpnet-distilled": 0.905, "mpnet-plain": 0.88, "gemma-r0-full-distilled": 0.90,
      "gemma-r0-full-plain": 0.86, "gemma-r1-L6-distilled": 0.88, "gemma-r1-L6-plain": 0.87}
BENCH = {"rows": [
    {"model": "gemma3-270m", "mode": "cut", "repetitions": 1, "exit_layer": 11,
     "sentences_per_second": 18.5},
    {"model": "gemma3-270m", "mode": "cut", "repetitions": 1, "exit_layer": 6,
     "sentences_per_second": 37.0},
    {"model": "gemma3-270m", "mode": "cut", "repetitions": 0, "exit_layer": 6,
     "sentences_per_second": 111.0},
    {"model": "minilm-l6", "mode": "encoder", "repetitions": 0, "exit_layer": None,
     "sentences_per_second": 170.9},
    {"model": "mpnet-base", "mode": "encoder", "repetitions": 0, "exit_layer": None,
     "sentences_per_second": 40.0}]}


@pytest.fixture()
def stubbed(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """The script and its summary copied into a checkout without .venv (whose activation
    would put the real seqrep first on PATH), the stand-in first on PATH instead."""
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    for name in ("distill_conll.sh", "distill_summary.py"):
        shutil.copy(ROOT / "scripts" / name, root / "scripts" / name)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "seqrep").write_text(f"#!{sys.executable}\n{STUB}", encoding="utf-8")
    (bin_dir / "seqrep").chmod(0o755)
    # a wrapper, not a symlink: Python finds its virtual environment from the path it is
    # started by, so a link outside .venv would run the base interpreter without its packages
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n',
                                    encoding="utf-8")
    (bin_dir / "python").chmod(0o755)
    log = tmp_path / "calls.jsonl"
    env = {**{k: v for k, v in os.environ.items() if k not in ("STUDENTS", "COMMON")},
           "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "STUB_LOG": str(log),
           "PYTHONPATH": str(ROOT / "src"),
           "RUNS": str(tmp_path / "runs"), "STUB_F1": json.dumps(F1),
           "STUB_BENCH": json.dumps(BENCH)}
    return env, root / "scripts" / "distill_conll.sh"


def _run(script: Path, env: dict[str, str], *steps: str, **extra: str
         ) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(script), *steps], env={**env, **extra},
                          capture_output=True, text=True, timeout=120)


def _calls(env: dict[str, str]) -> list[list[str]]:
    path = Path(env["STUB_LOG"])
    calls = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    path.unlink(missing_ok=True)
    return calls


def _without(args: list[str], *options: str) -> list[str]:
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in options:
            skip = True
        else:
            out.append(a)
    return out


def test_the_script_skips_resumes_shares_one_label_cache_and_summarises(stubbed) -> None:
    """The script's steps at its real settings (the four students), every command it issues
    parsed by the real seqrep command line; the real run on tiny models is the slow test
    below."""
    from typer.main import get_command

    from seqrep.cli.app import app

    env, script = stubbed
    runs = Path(env["RUNS"])
    teacher = str(runs / "teacher")
    commands = get_command(app).commands
    # a kill in mpnet's plain twin: the script stops there
    first = _run(script, env, "teacher", "students", STUB_INTERRUPT="mpnet-plain")
    assert first.returncode != 0
    calls = _calls(env)
    for call in calls:  # the real seqrep would accept each: options, their values and types
        commands[call[0]].make_context(call[0], list(call[1:]))
    assert [(c[0], c[c.index("--output") + 1]) for c in calls] == [
        ("train", teacher), ("distill", str(runs / "minilm-distilled")),
        ("train", str(runs / "minilm-plain")), ("distill", str(runs / "mpnet-distilled")),
        ("train", str(runs / "mpnet-plain"))]
    # the teacher: recipe (4) (r=1, lr 5e-5, one epoch) with its layer fixed, default seed
    assert calls[0][1:8] == ["--model", "gemma3-270m", "--dataset", "conll2003", "-r", "1",
                             "--exit-layer"] and calls[0][8] == "11"
    assert ["--lr", "5e-5", "--epochs", "1"] == calls[0][9:13]
    # the encoders ran whole: a student line's "-" names every layer, whatever the default
    assert [c[c.index("--exit-layer") + 1] for c in calls[1:]] == ["all"] * 4
    assert not any("--seed" in c for c in calls)
    # ONLY=NAME: that student alone, the interrupted one left as it is
    only = _run(script, env, "students", ONLY="gemma-r0-full")
    assert only.returncode == 0, only.stderr
    calls += (gemma := _calls(env))
    assert [c[c.index("--output") + 1] for c in gemma] == [
        str(runs / "gemma-r0-full-distilled"), str(runs / "gemma-r0-full-plain")]
    assert "done already" not in only.stderr and "resuming" not in only.stderr
    # no step named: finished folders skipped, the interrupted one resumed, the rest run
    whole = _run(script, env)
    assert whole.returncode == 0, whole.stderr
    rest = _calls(env)
    for call in rest:
        commands[call[0]].make_context(call[0], list(call[1:]))
    assert whole.stderr.count("done already") == 6  # the teacher and five student folders
    assert f"resuming: {runs / 'mpnet-plain'}" in whole.stderr
    assert [c[0] for c in rest] == ["train", "distill", "train", "bench", "report"]
    assert rest[0][-3:] == ["--resume", "--output", str(runs / "mpnet-plain")]
    calls += rest[:3]
    # every student distilled from the one teacher through one label cache, at T=2 and a
    # gold weight of 0.5, beside a plain twin with the same options and text
    distilled = {c[c.index("--output") + 1]: c for c in calls if c[0] == "distill"}
    plain: dict[str, list[str]] = {}
    for c in calls:  # the first call of each (mpnet's twin was resumed)
        if c[0] == "train" and c[c.index("--output") + 1].endswith("-plain"):
            plain.setdefault(c[c.index("--output") + 1], c)
    assert sorted(Path(d).name for d in distilled) == [
        "gemma-r0-full-distilled", "gemma-r1-L6-distilled", "minilm-distilled",
        "mpnet-distilled"]
    for out, call in distilled.items():
        assert call[1] == teacher
        assert call[call.index("--teacher-labels") + 1] == str(runs / "teacher-labels")
        assert call[call.index("--temperature") + 1] == "2"
        assert call[call.index("--gold-weight") + 1] == "0.5"
        twin = out.removesuffix("-distilled") + "-plain"
        assert twin in plain
        student = _without(call[2:], "--temperature", "--gold-weight", "--teacher-labels",
                           "--output")
        assert ["--model", *student[1:]] == _without(plain[twin][1:], "--output")
    gemma_r0 = distilled[str(runs / "gemma-r0-full-distilled")]
    assert gemma_r0[gemma_r0.index("--unmask") + 1] == "full"
    # one bench run: the teacher's and the students' cuts and both encoders
    bench = rest[3]
    for option, value in (("--repetitions", "0,1"), ("--exit-layer", "6,11,18"),
                          ("--encoder", "minilm-l6,mpnet-base"), ("--dataset", "conll2003"),
                          ("--split", "test"), ("--context", "sentence,document"),
                          ("--context-tokens", "256"), ("--unmask", "none,full")):
        assert bench[bench.index(option) + 1] == value
    assert "--no-baseline" in bench
    # the report of every finished folder, with the bench
    assert sorted(Path(p).name for p in rest[4][1:rest[4].index("--bench")]) == sorted(F1)
    assert rest[4][rest[4].index("--bench") + 1] == str(runs / "bench.json")
    # the summary: F1 distilled and plain, the gap, the speed against the teacher's
    # (hand-computed from F1 and BENCH above)
    summary = (runs / "summary.md").read_text()
    assert f"Teacher {teacher}: test F1 91.25, 18.5 sentences/s." in summary
    rows = [line for line in summary.splitlines() if line.startswith("| ") and
            not line.startswith(("| student", "|---"))]
    assert rows == [
        "| gemma-r0-full | 1 | 90.00 | 86.00 | +4.00 | 1.25 | 111.0 | 6.0 | 20.0 | 100 | yes |",
        "| gemma-r1-L6 | 1 | 88.00 | 87.00 | +1.00 | 3.25 | 37.0 | 2.0 | 20.0 | 100 | no |",
        "| minilm | 1 | 89.00 | 85.54 | +3.46 | 2.25 | 170.9 | 9.2 | 20.0 | 100 | no |",
        "| mpnet | 1 | 90.50 | 88.00 | +2.50 | 0.75 | 40.0 | 2.2 | 20.0 | 100 | no |"]
    assert ("Not timed unmasked (gemma-r0-full): the sentences/s is that of the same model, "
            "r and exit layer without unmasking") in summary
    # a finished bench is not run again
    again = _run(script, env, "bench")
    assert again.returncode == 0 and "done already" in again.stderr and not _calls(env)


def test_a_given_teacher_is_used_and_bad_steps_are_refused(stubbed, tmp_path: Path) -> None:
    env, script = stubbed
    given = tmp_path / "given"
    no_teacher = _run(script, env, "students", TEACHER=str(given))
    assert no_teacher.returncode == 2 and f"no finished teacher in {given}" in no_teacher.stderr
    assert not _calls(env)
    given.mkdir()
    (given / "metrics.json").write_text("{}")
    done = _run(script, env, "teacher", "students", TEACHER=str(given), ONLY="minilm")
    assert done.returncode == 0, done.stderr
    assert f"done already: {given}" in done.stderr
    assert [c[:2] for c in _calls(env)] == [["distill", str(given)], ["train", "--model"]]
    unknown = _run(script, env, "train")
    assert unknown.returncode == 2 and "unknown step train" in unknown.stderr


def test_seeds_run_beside_the_default_and_the_summary_pairs_them(stubbed) -> None:
    """SEEDS="7 8": each student also at seeds 7 and 8, into -s7 / -s8 folders with --seed;
    the summary averages a student's seeds and pairs distilled with plain by seed."""
    env, script = stubbed
    runs = Path(env["RUNS"])
    f1 = {**F1, "gemma-r0-full-distilled-s7": 0.91, "gemma-r0-full-distilled-s8": 0.89,
          "gemma-r0-full-plain-s7": 0.865, "gemma-r0-full-plain-s8": 0.87}
    done = _run(script, env, "teacher", "students", "bench", "report", ONLY="gemma-r0-full",
                SEEDS="7 8", STUB_F1=json.dumps(f1))
    assert done.returncode == 0, done.stderr
    calls = _calls(env)
    students = [(c[c.index("--output") + 1], c[c.index("--seed") + 1] if "--seed" in c
                 else None) for c in calls if c[0] in ("train", "distill")][1:]
    assert students == [
        (str(runs / "gemma-r0-full-distilled"), None), (str(runs / "gemma-r0-full-plain"), None),
        (str(runs / "gemma-r0-full-distilled-s7"), "7"),
        (str(runs / "gemma-r0-full-plain-s7"), "7"),
        (str(runs / "gemma-r0-full-distilled-s8"), "8"),
        (str(runs / "gemma-r0-full-plain-s8"), "8")]
    report = next(c for c in calls if c[0] == "report")
    assert sum(Path(p).name.startswith("gemma-r0-full") for p in report) == 6
    # by hand: distilled 90, 91, 89 (mean 90, sd 1); plain 86, 86.5, 87 (mean 86.5, sd 0.5);
    # differences 4, 4.5, 2: mean 3.5, sd sqrt(3.5 / 2) = 1.3229, 95 % CI half-width
    # t(0.975, 2) 4.3027 x 1.3229 / sqrt(3) = 3.2862; gap 91.25 - 90 = 1.25; 111 / 18.5 = 6.0
    row = next(line for line in (runs / "summary.md").read_text().splitlines()
               if line.startswith("| gemma-r0-full"))
    assert row == ("| gemma-r0-full | 3 | 90.00 ± 1.00 | 86.50 ± 0.50 | +3.50 [+0.21, +6.79] | "
                   "1.25 | 111.0 | 6.0 | 20.0 | 100 | yes |")


def test_the_summary_refuses_students_of_two_teacher_models(tmp_path: Path) -> None:
    """A teacher retrained into its folder between two students: their teacher keys differ,
    and the summary says which folder, exit 2, rather than average them as seeds of one."""
    teacher, runs = tmp_path / "teacher", tmp_path / "runs"
    teacher.mkdir()
    (teacher / "metrics.json").write_text(json.dumps({"test": {"f1": 0.92}}))
    for name, key in (("r0-distilled", "aaaa1111"), ("r0-distilled-s1", None),
                      ("r0-distilled-s2", "bbbb2222"), ("r0-plain", None)):
        (runs / name).mkdir(parents=True)
        d = {} if key is None else {"teacher_key": key}
        (runs / name / "run.json").write_text(json.dumps({"labeler": {"model": "m"},
                                                          "distill": d}))
        (runs / name / "metrics.json").write_text(json.dumps({"test": {"f1": 0.9}}))
    cmd = [sys.executable, str(ROOT / "scripts" / "distill_summary.py"), str(teacher), str(runs)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    mixed = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert mixed.returncode == 2 and mixed.stdout == ""
    assert "r0-distilled-s2" in mixed.stderr and len(mixed.stderr.strip().splitlines()) == 1
    shutil.rmtree(runs / "r0-distilled-s2")
    one = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert one.returncode == 0, one.stderr
    assert "| r0 | 2 | 90.00 ± 0.00 |" in one.stdout


def test_a_document_student_takes_the_speed_of_its_own_window(tmp_path: Path) -> None:
    """A student reading 128-subtoken document windows: no speed from a bench that timed only
    256-subtoken rows, and the 128 row's speed where the bench timed one (by hand:
    60 / 12 = 5.0 times the teacher)."""
    teacher, runs = tmp_path / "teacher", tmp_path / "runs"
    teacher.mkdir()
    (teacher / "run.json").write_text(json.dumps({"labeler": {
        "model": "/m/g", "repetitions": 1, "exit_layer": 11, "unmask": "none",
        "context": "document", "context_tokens": 256}}))
    (teacher / "metrics.json").write_text(json.dumps({"test": {"f1": 0.92}}))
    for name in ("doc-distilled", "doc-plain"):
        (runs / name).mkdir(parents=True)
        (runs / name / "run.json").write_text(json.dumps({"labeler": {
            "model": "/m/g", "repetitions": 0, "exit_layer": 6, "unmask": "full",
            "context": "document", "context_tokens": 128}, "distill": {}}))
        (runs / name / "metrics.json").write_text(json.dumps({"test": {"f1": 0.91}}))

    def row(r: int, layer: int, unmask: str, window: int, speed: float) -> dict:
        return {"model": "g", "mode": "cut", "precision": "fp32", "repetitions": r,
                "exit_layer": layer, "unmask": unmask, "context": "document",
                "context_tokens": window, "sentences_per_second": speed}

    cmd = [sys.executable, str(ROOT / "scripts" / "distill_summary.py"), str(teacher), str(runs)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    for rows, cells in (([row(1, 11, "none", 256, 12.0), row(0, 6, "full", 256, 48.0)],
                         "| 1.00 | - | - |"),
                        ([row(1, 11, "none", 256, 12.0), row(0, 6, "full", 256, 48.0),
                          row(0, 6, "full", 128, 60.0), row(1, 11, "none", 128, 20.0)],
                         "| 1.00 | 60.0 | 5.0 |")):
        (runs / "bench.json").write_text(json.dumps({"rows": rows}))
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "Teacher" in done.stdout and "12.0 sentences/s" in done.stdout
        assert f"| doc | 1 | 91.00 | 91.00 | +0.00 {cells}" in done.stdout


def test_teacher_agreement_on_a_hand_made_cache(tmp_path: Path) -> None:
    """Three training words, the teacher's probabilities written by hand: its top label is
    gold on 2 of 3 words and on the 1 entity word; gold's mean probability (0.8 + 0.6 + 0.3)
    / 3; at temperature 2 each word's top probability is sqrt(p_top) / sum(sqrt(p)):
    (0.58578 + 0.46410 + 0.47273) / 3."""
    import torch
    from safetensors.torch import save_file

    (tmp_path / "train.txt").write_text("A B-PER\nB O\n\nC O\n", encoding="utf-8")
    student, cache = tmp_path / "student", tmp_path / "cache"
    student.mkdir(), cache.mkdir()
    probs = torch.tensor([[0.1, 0.8, 0.1], [0.6, 0.2, 0.2], [0.3, 0.6, 0.1]])
    save_file({"logp": probs.log(), "lengths": torch.tensor([2, 1])},
              str(cache / "00000.safetensors"))
    (student / "run.json").write_text(json.dumps({
        "labeler": {"labels": ["O", "B-PER", "I-PER"]},
        "train": {"dataset": str(tmp_path / "train.txt"), "train_split": "train"},
        "distill": {"teacher": "t", "cache": str(cache), "temperature": 2.0}}))
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "teacher_agreement.py"),
                           str(student)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert (out["words"], out["entity_words"]) == (3, 1)
    assert out["top_is_gold"] == 0.6667 and out["top_is_gold_on_entity_words"] == 1.0
    assert out["mean_gold_probability"] == pytest.approx(0.5667, abs=1e-4)
    assert out["mean_top_probability_at_temperature"] == pytest.approx(0.5075, abs=1e-4)
