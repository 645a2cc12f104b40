"""``--help`` reads like the CLIs users compare us with (issue 39, item 4): options grouped
into panels, each help text one plain sentence without measurements or history, a command's
help a page or two at 100 columns, the top-level help one line per command, and an unknown
option still one usage line and the problem.

The panels, the limits and the patterns are written out here, not read from
:mod:`seqrep.cli.options`, so a table that lost an entry or a help text that grew a figure
fails here.
"""

from __future__ import annotations

import re

import pytest
import typer.main
from typer._click.core import Command
from typer.core import TyperArgument as Argument
from typer.core import TyperOption as Option
from typer.testing import CliRunner

from seqrep.cli.app import app
from tests.inprocess import seqrep

PANELS = {"Model", "Repetition and layers", "Data", "Training", "Distillation", "Serving",
          "Benchmark", "Output", "Runtime and devices"}
# help texts built from the strategy tables (seqrep.core.contexts, seqrep.model.tuning): their
# owners keep them; checked for dates and figures like the others, not yet for length
FROM_TABLES = {"--context", "--finetune"}
MEASUREMENT = [re.compile(p) for p in (
    r"20\d\d-\d\d",                 # a date
    r"\d+(\.\d+)?x\b",              # 1.09x faster
    r"\d+(\.\d+)? ?%",              # a share in percent
    r"\d+(\.\d+)? (s|ms|minutes?|hours?)\b",  # a timing
    r"\b(faster|slower) (steps|than)\b", r"\bless time\b", r"\bmore time\b",
    r"\bF1 within\b", r"\bpoints\b", r"\bruns before\b", r"\bas (runs|versions) before\b")]


def _commands() -> list[tuple[str, Command]]:
    """Every leaf command of the ``seqrep`` tree, by its path (``data stats``)."""
    out = []

    def walk(cmd: Command, path: list[str]) -> None:
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, path + [name])
        else:
            out.append((" ".join(path), cmd))

    walk(typer.main.get_command(app), [])
    return out


COMMANDS = _commands()


def _help(*args: str) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    return result.output


def test_the_tree_holds_every_command() -> None:
    names = {name for name, _ in COMMANDS}
    assert names == {"models", "train", "distill", "evaluate", "score", "predict", "export",
                     "grid", "report", "bench", "serve", "push", "card", "data stats"}


@pytest.mark.parametrize(("name", "cmd"), COMMANDS, ids=[n for n, _ in COMMANDS])
def test_every_option_is_in_a_panel(name: str, cmd: Command) -> None:
    missing = [p.opts[0] for p in cmd.params if isinstance(p, Option) and p.name != "help"
               and getattr(p, "rich_help_panel", None) not in PANELS]
    assert missing == [], f"seqrep {name}: options in no panel: {missing}"


def test_train_groups_its_options_by_what_they_set() -> None:
    """A few options whose panel a user looks them up in, written out by hand."""
    cmd = dict(COMMANDS)["train"]
    panel = {p.opts[0]: p.rich_help_panel for p in cmd.params if isinstance(p, Option)}
    expected = {"--model": "Model", "--finetune": "Model", "--repetitions": "Repetition and layers",
                "--exit-layer": "Repetition and layers", "--dataset": "Data", "--train": "Data",
                "--scheme": "Data", "--epochs": "Training", "--lr": "Training",
                "--batch-size": "Training", "--output": "Output", "--json": "Output",
                "--device": "Runtime and devices", "--threads": "Runtime and devices"}
    assert {k: panel[k] for k in expected} == expected
    predict = {p.opts[0]: p.rich_help_panel for p in dict(COMMANDS)["predict"].params
               if isinstance(p, Option)}
    assert predict["--batch-size"] == "Runtime and devices"  # inference, not training


@pytest.mark.parametrize(("name", "cmd"), COMMANDS, ids=[n for n, _ in COMMANDS])
def test_help_texts_are_one_plain_sentence(name: str, cmd: Command) -> None:
    bad = []
    for p in cmd.params:
        if not isinstance(p, (Option, Argument)) or p.name == "help":
            continue
        flag = p.opts[0] if isinstance(p, Option) else p.name.upper()
        text = p.help or ""
        if not text:
            bad.append((flag, "no help"))
        if flag not in FROM_TABLES and len(text) >= 200:
            bad.append((flag, f"{len(text)} characters"))
        if flag not in FROM_TABLES and len(re.findall(r"[.;!?](\s|$)", text)) > 2:
            bad.append((flag, "more than two sentences"))
        bad += [(flag, m.pattern) for m in MEASUREMENT if m.search(text)]
    assert bad == [], f"seqrep {name}: {bad}"


@pytest.mark.parametrize(("name", "cmd"), COMMANDS, ids=[n for n, _ in COMMANDS])
def test_command_descriptions_carry_no_measurements(name: str, cmd: Command) -> None:
    text = cmd.help or ""
    assert [m.pattern for m in MEASUREMENT if m.search(text)] == [], name


def test_train_help_fits_180_lines_at_100_columns() -> None:
    lines = _help("train").splitlines()
    assert len(lines) <= 180, len(lines)
    assert "Repetition and layers" in lines[0] + "".join(lines)


@pytest.mark.parametrize("name", [n for n, _ in COMMANDS])
def test_every_command_help_is_short(name: str) -> None:
    """train and distill hold every labeler and training setting; the others a page."""
    lines = _help(*name.split()).splitlines()
    assert len(lines) <= (180 if name in ("train", "distill") else 80), (name, len(lines))
    assert max(map(len, lines)) <= 100


def test_top_level_help_is_one_line_per_command() -> None:
    text = _help()
    panel = text.split("Commands")[1].split("╰")[0]
    rows = [line.strip("│ ").rstrip() for line in panel.splitlines()[1:] if line.strip("│ ")]
    names = [row.split()[0] for row in rows]
    assert names == ["models", "train", "distill", "evaluate", "score", "predict", "export",
                     "grid", "report", "bench", "serve", "push", "card", "data"], rows


@pytest.mark.parametrize(("args", "unknown", "meant"), [
    (("train", "--exit-layr", "3"), "--exit-layr", "--exit-layer"),
    (("train", "--no-compile"), "--no-compile", "--compile"),  # an off switch has no --no-
    (("predict", "run", "--batchsize", "2"), "--batchsize", "--batch-size")])
def test_an_unknown_option_is_one_usage_line_and_the_problem(args: tuple, unknown: str,
                                                             meant: str) -> None:
    ran = seqrep(*args, env={"COLUMNS": "100"})
    assert ran.returncode == 2 and ran.stdout == ""
    lines = [line for line in ran.stderr.splitlines() if line.strip()]
    assert re.fullmatch(rf"Usage: \S.* {args[0]} \[OPTIONS\].*", lines[0]), lines
    assert lines[-1].startswith(f"Error: No such option: {unknown}")
    assert meant in lines[-1] and len(lines) == 3, lines  # usage, hint, problem
    assert "Traceback" not in ran.stderr and "╭" not in ran.stderr
