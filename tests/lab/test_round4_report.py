"""``seqrep report --out DIR`` writes only into a new or empty folder, or one a report wrote
before (its ``.seqrep-files.json`` lists what it wrote), and never over a file it did not
write (issue 37, item 4); every JSON it reads (a run folder's ``run.json`` and
``metrics.json``, a ``--bench`` file) and the ``--notes`` file go through one bounded reader,
so a link to ``/dev/zero`` or a FIFO is one line, not a hang (issue 37, item 5)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from seqrep.lab.results import append_record
from tests.inprocess import seqrep

MARKER = ".seqrep-files.json"  # the owner's list, seqrep.files.owner


def _record(dataset: str = "conll2003", seed: int = 1, f1: float = 0.8) -> dict:
    return {"run_id": f"{dataset}-{seed}", "kind": "run",
            "config": {"labeler": {"model": "smollm2-135m", "repetitions": 1, "unmask": "none",
                                   "exit_layer": 20, "finetune": "full"},
                       "train": {"dataset": dataset, "seed": seed, "epochs": 2, "lr": 5e-5}},
            "metrics": {"status": "finished", "validation": {"f1": f1}, "test": {"f1": f1},
                        "train_seconds": 60, "train_sentences": 1000}}


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "results.jsonl"
    append_record(path, _record())
    return path


def _refused(ran, *words: str) -> str:
    assert ran.returncode == 2 and "Traceback" not in ran.stderr, ran.stderr
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), ran.stderr
    for w in words:
        assert w in lines[0], ran.stderr
    return lines[0]


def _contents(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_folder_of_the_users_own_files_is_refused(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "thesis"
    out.mkdir()
    (out / "results.md").write_text("my own results, years of work")
    (out / "conll2003_f1_vs_r.png").write_bytes(b"my own plot")
    before = _contents(out)
    _refused(seqrep("report", str(store), "--out", str(out)), "--out", str(out))
    assert _contents(out) == before


def test_an_existing_file_as_out_is_refused(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "notes.txt"
    out.write_text("mine")
    _refused(seqrep("report", str(store), "--out", str(out)), "--out", "folder")
    assert out.read_text() == "mine"


def test_a_new_or_empty_folder_is_written_and_marked(store: Path, tmp_path: Path) -> None:
    for out in (tmp_path / "new" / "report", tmp_path / "empty"):
        if out.name == "empty":
            out.mkdir()
        ran = seqrep("report", str(store), "--out", str(out))
        assert ran.returncode == 0, ran.stderr
        names = sorted(p.name for p in out.iterdir())
        assert "results.md" in names and "conll2003_f1_vs_r.png" in names
        marker = json.loads((out / MARKER).read_text())
        # the marker lists every file the report wrote, itself apart
        assert sorted(marker["files"]) == [n for n in names if n != MARKER]


def test_a_report_folder_is_written_again_but_a_users_file_in_it_is_not(
        store: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    assert seqrep("report", str(store), "--out", str(out)).returncode == 0
    first = (out / "results.md").read_text()
    (out / "my-notes.txt").write_text("mine")  # no name a report writes: left alone
    append_record(store, _record(seed=2, f1=0.6))
    assert seqrep("report", str(store), "--out", str(out)).returncode == 0
    assert (out / "results.md").read_text() != first  # the report's own file, replaced
    assert (out / "my-notes.txt").read_text() == "mine"
    # the user's plot under a name this report would now write for a new dataset: refused
    (out / "rest14_f1_vs_r.png").write_bytes(b"my own plot")
    append_record(store, _record("rest14"))
    before = _contents(out)
    _refused(seqrep("report", str(store), "--out", str(out)), "rest14_f1_vs_r.png")
    assert _contents(out) == before


@pytest.mark.parametrize("content", ["[]", "not json", '{"files": "results.md"}',
                                     '{"files": ["../escape.md"]}',
                                     '{"format": "seqrep-files", "kind": "report", '
                                     '"files": ["../escape.md"]}',
                                     '{"format": "seqrep-files", "kind": "run", '
                                     '"files": ["results.md"]}'])
def test_a_marker_that_is_no_report_record_is_refused(store: Path, tmp_path: Path,
                                                      content: str) -> None:
    out = tmp_path / "report"
    out.mkdir()
    (out / MARKER).write_text(content)
    (out / "results.md").write_text("mine")
    _refused(seqrep("report", str(store), "--out", str(out)), MARKER)
    assert (out / "results.md").read_text() == "mine"


def test_the_docs_folder_is_a_report_folder() -> None:
    """docs/results.md is regenerated with ``--out docs`` (tests/lab/test_results_doc.py):
    the folder ships the marker naming the report's files, and not the README's screenshot
    or the notes the report reads."""
    docs = Path(__file__).resolve().parents[2] / "docs"
    files = json.loads((docs / MARKER).read_text())["files"]
    assert "results.md" in files and "throughput_vs_layer.png" in files
    assert "serve.png" not in files and "results-notes.md" not in files


def _run_folder(root: Path) -> Path:
    run = root / "run"
    run.mkdir()
    record = _record()
    (run / "run.json").write_text(json.dumps({"labeler": record["config"]["labeler"],
                                              "train": record["config"]["train"]}))
    (run / "metrics.json").write_text(json.dumps(record["metrics"]))
    return run


def _report_process(args: list[str]) -> subprocess.CompletedProcess:
    """``seqrep report`` in a child with a time and memory limit: a reader that does not
    bound what it reads hangs on a FIFO or fills memory from /dev/zero."""
    code = "import sys; from seqrep.cli.app import main; main(sys.argv[1:])"

    def limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    return subprocess.run([sys.executable, "-c", code, "report", *args], capture_output=True,
                          text=True, timeout=60, preexec_fn=limit)


@pytest.mark.parametrize("target", ["run/metrics.json", "run/run.json", "bench.json",
                                    "notes.md"])
@pytest.mark.parametrize("kind", ["/dev/zero", "fifo"])
def test_unbounded_files_are_one_line(tmp_path: Path, target: str, kind: str) -> None:
    run = _run_folder(tmp_path)
    bench, notes = tmp_path / "bench.json", tmp_path / "notes.md"
    bench.write_text(json.dumps({"kind": "bench", "rows": []}))
    notes.write_text("# notes\n")
    path = tmp_path / target
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(kind)
    try:
        ran = _report_process([str(run), "--bench", str(bench), "--notes", str(notes),
                               "--out", str(tmp_path / "out")])
    except subprocess.TimeoutExpired:
        pytest.fail(f"report hung reading {target} ({kind})")
    _refused(ran, path.name)
    assert not (tmp_path / "out").exists()  # refused before anything was written


@pytest.mark.parametrize("content", ["[]", '{"rows": 3}', '{"rows": [1]}',
                                     "[" * 100000 + "]" * 100000])
def test_a_bench_file_that_is_no_bench_record_is_one_line(store: Path, tmp_path: Path,
                                                          content: str) -> None:
    bench = tmp_path / "bench.json"
    bench.write_text(content)
    _refused(seqrep("report", str(store), "--bench", str(bench), "--out",
                    str(tmp_path / "out")), "bench.json")
    assert not (tmp_path / "out").exists()


def test_an_older_reports_list_is_carried_over(store: Path, tmp_path: Path) -> None:
    """A folder an older seqrep's report wrote keeps .seqrep-report.json: its files are still
    the report's to replace, and the list moves into the owner's manifest."""
    out = tmp_path / "report"
    out.mkdir()
    (out / "results.md").write_text("old report")
    (out / ".seqrep-report.json").write_text(json.dumps({"written_by": "seqrep report",
                                                         "files": ["results.md"]}))
    (out / "mine.txt").write_text("mine")
    assert seqrep("report", str(store), "--out", str(out)).returncode == 0
    assert (out / "results.md").read_text() != "old report"
    assert (out / "mine.txt").read_text() == "mine"
    assert not (out / ".seqrep-report.json").exists()
    assert "results.md" in json.loads((out / MARKER).read_text())["files"]
