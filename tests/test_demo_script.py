"""The demo as a new user runs it (issue 27), on a tiny model and a tiny CoNLL-2003 layout:
its training command leaves the test score in the run folder's metrics.json, and the
command-line examples of the CLI reference's overview run as written against the folder the demo
leaves."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from support import write_corpus
from typer.testing import CliRunner

from seqrep.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def _commands(text: str, program: str = "seqrep") -> list[list[str]]:
    """Every ``seqrep ...`` command line of a shell text, continuation lines joined."""
    joined = re.sub(r"\\\n\s*", " ", text)
    return [shlex.split(re.sub(r"\s+#.*$", "", line))
            for line in (x.strip() for x in joined.splitlines())
            if line.startswith(program + " ")]


def _readme_examples() -> list[list[str]]:
    page = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    section = page.split("## The commands at a glance", 1)[1]
    block = section.split("```bash", 1)[1].split("```", 1)[0]
    return _commands(block)


def _option(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


@pytest.fixture(scope="module")
def demo(tiny, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's `seqrep train` line with only the model made tiny, run in a fresh folder
    (cwd) with SEQREP_DATA pointing at a tiny copy of the CoNLL-2003 layout."""
    root = tmp_path_factory.mktemp("demo")
    data = root / "data" / "conll2003"
    data.mkdir(parents=True)
    write_corpus(data / "eng.train", 24)
    write_corpus(data / "eng.testa", 8, seed=1)
    write_corpus(data / "eng.testb", 7, seed=2)
    (train,) = [c for c in _commands((ROOT / "scripts" / "demo.sh").read_text())
                if c[1] == "train"]
    args = train[1:]
    args[args.index("--model") + 1] = tiny("llama", int(_option(args, "--exit-layer")))
    mp = pytest.MonkeyPatch()
    mp.setenv("SEQREP_DATA", str(root / "data"))
    mp.chdir(root)
    result = runner.invoke(app, [*args, "--quiet", "--threads", "1"])
    assert result.exit_code == 0, result.output
    yield root / _option(args, "--output")
    mp.undo()


def test_demo_run_folder_holds_the_test_score(demo: Path) -> None:
    metrics = json.loads((demo / "metrics.json").read_text())
    assert metrics["test"]["sentences"] == 7  # the whole tiny eng.testb
    assert 0 <= metrics["test"]["f1"] <= 1


def test_readme_examples_name_the_demo_run_folder(demo: Path) -> None:
    """A run folder an example reads is the demo's, or one made by an earlier example a
    user can run at once: an export of it, or a run on their own files (`--train`), not a
    run of a 40-minute recipe they have not trained."""
    made = {f"runs/{demo.name}"}
    for args in _readme_examples():
        if args[1] == "train" and "--train" in args:
            made.add(_option(args, "--output" if "--output" in args else "-o"))
        elif args[1] in ("evaluate", "predict", "serve", "export"):
            assert args[2] in made, f"{' '.join(args)}: {args[2]} is not made by the demo"
            if "--onnx" in args:
                made.add(_option(args, "--onnx"))


def test_readme_examples_run_after_the_demo(demo: Path, monkeypatch, tmp_path: Path) -> None:
    """The evaluate and predict examples, as written, on the demo's (tiny) run folder."""
    monkeypatch.chdir(demo.parent.parent)
    monkeypatch.setenv("SEQREP_DATA", str(demo.parent.parent / "data"))
    ran = 0
    for args in _readme_examples():
        if args[1] not in ("evaluate", "predict") or args[2] != f"runs/{demo.name}":
            continue
        if "--input" in args or "[--json]" in args:
            args = [a for a in args if a != "[--json]"]
        if "--input" in args:
            Path(_option(args, "--input")).write_text(
                '{"text": "Obama visited Paris."}\n' if args[args.index("--input") + 1]
                .endswith(".jsonl") else "Obama visited Paris.\n", encoding="utf-8")
        result = runner.invoke(app, args[1:])
        assert result.exit_code == 0, (args, result.output)
        ran += 1
    assert ran >= 3
