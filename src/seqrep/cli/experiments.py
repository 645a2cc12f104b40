"""``seqrep grid``, ``seqrep report`` and ``seqrep bench`` (layer probes run inside ``grid``
and ``train --exit-layer auto``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from seqrep.cli.options import command
from seqrep.lab.bench import BenchConfig


def grid(config: Path = typer.Argument(..., help="grid file (YAML)"),
         dry_run: bool = typer.Option(False, "--dry-run", help="list the runs, run nothing"),
         max_runs: int | None = typer.Option(None, "--max-runs", min=1,
                                             help="run at most N unfinished runs (a piece of "
                                                  "the grid; the next call goes on)")
         ) -> None:
    """Run every model x dataset x strategy x seed of a grid not yet in its results store."""
    from seqrep.core.extras import require

    require("lab", "seqrep grid")
    from seqrep.lab.grid import run_grid

    statuses = run_grid(config, dry_run=dry_run, echo=typer.echo, max_runs=max_runs)
    done = sum(s["status"] == "done" for s in statuses)
    typer.echo(f"{done} run(s) finished now, "
               f"{sum(s['status'] == 'skipped' for s in statuses)} skipped")


def report(results: list[Path] = typer.Argument(..., help="results stores (JSONL) or finished "
                                                          "run folders, read together"),
           out: Path = typer.Option(Path("report"), "--out", help="folder for results.md and "
                                                                  "plots"),
           bench: list[Path] | None = typer.Option(None, "--bench",
                                                   help="bench JSON to plot and place settings "
                                                        "on the frontier (repeatable)"),
           notes: Path | None = typer.Option(None, "--notes",
                                             help="Markdown put at the top of results.md")
           ) -> None:
    """Write results.md (tables over seeds and the best settings) and its PNG plots.

    Each cell gives the mean, the standard deviation and a confidence interval over seeds."""
    from seqrep.core.extras import require

    require("lab", "seqrep report")
    from seqrep.lab.report import report as make

    path = make(results, out, bench or None, notes)
    typer.echo(f"wrote {path}")


def _bench_params() -> list:
    import inspect

    from seqrep.cli.options import config_params

    def p(name: str, annotation: Any, default: Any) -> inspect.Parameter:
        return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation,
                                 default=default)

    return [*config_params(BenchConfig, names={"exit_layers": "--exit-layer",
                                               "precisions": "--precision"}),
            p("output", Path | None, typer.Option(None, "--output", "-o",
                                                  help="write JSON here")),
            p("as_json", bool, typer.Option(False, "--json", help="print JSON"))]


def bench_command(values: dict[str, Any]) -> None:
    """Throughput, latency, padding waste, FLOPs and memory of the labeler's forward pass."""
    from seqrep.cli.options import config_values
    from seqrep.files.atomic import write_json
    from seqrep.lab import bench as lab

    cfg = BenchConfig(**config_values(BenchConfig, values))
    as_json = values["as_json"]
    result = lab.run_bench(cfg, echo=(lambda *_: None) if as_json else typer.echo)
    if values["output"]:
        write_json(values["output"], result)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
    else:
        for s in result["speedups"]:
            typer.echo(json.dumps(s))


bench = command(bench_command, _bench_params(), bench_command.__doc__ or "")
