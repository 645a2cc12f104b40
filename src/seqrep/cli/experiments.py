"""``seqrep grid``, ``seqrep report`` and ``seqrep bench`` (layer probes run inside ``grid``
and ``train --exit-layer auto``)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from seqrep.lab.bench import BenchConfig


def grid(config: Path = typer.Argument(..., help="grid file (YAML)"),
         dry_run: bool = typer.Option(False, "--dry-run", help="list the runs, run nothing"),
         max_runs: int | None = typer.Option(None, "--max-runs", min=1,
                                             help="run at most N unfinished runs (a piece of "
                                                  "the grid; the next call goes on)")
         ) -> None:
    """Run every model x dataset x strategy x seed of a grid not yet in its results store."""
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
    """Markdown tables (mean, std, 95% CI over seeds), best settings and PNG plots."""
    from seqrep.lab.report import report as make

    path = make(results, out, bench or None, notes)
    typer.echo(f"wrote {path}")


def bench(model: str = typer.Option(BenchConfig.model, "--model"),
          repetitions: str = typer.Option("0,1,2,4", "--repetitions", help="comma list of r"),
          exit_layer: str = typer.Option("10,20,30", "--exit-layer",
                                         help="comma list of exit layers"),
          dataset: str = typer.Option(BenchConfig.dataset, "--dataset"),
          split: str = typer.Option(BenchConfig.split, "--split"),
          sentences: int = typer.Option(BenchConfig.sentences, "--sentences"),
          batch_size: int = typer.Option(BenchConfig.batch_size, "--batch-size"),
          max_tokens: int = typer.Option(BenchConfig.max_tokens, "--max-tokens",
                                         help="padded tokens per batch (0: no limit)"),
          encoder: str = typer.Option("minilm-l6", "--encoder",
                                      help="encoder baseline ('' for none)"),
          baseline: bool = typer.Option(True, "--baseline/--no-baseline",
                                        help="time the full forward + hidden_states[L] too"),
          threads: int | None = typer.Option(None, "--threads"),
          precision: str = typer.Option("fp32", "--precision",
                                        help="comma list of how the cut model runs, side by "
                                             "side: fp32, bf16 (PyTorch autocast), onnx, "
                                             "onnx-int8 (ONNX Runtime)"),
          repeats: int = typer.Option(BenchConfig.repeats, "--repeats",
                                      help="timed passes per setting; the fastest counts"),
          output: Path | None = typer.Option(None, "--output", "-o", help="write JSON here"),
          as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """Throughput, latency, padding waste, FLOPs and memory of the labeler's forward pass."""
    from seqrep.errors import ConfigError
    from seqrep.fileio import write_json
    from seqrep.lab.bench import run_bench

    def ints(text: str, name: str) -> tuple[int, ...]:
        try:
            return tuple(int(x) for x in text.split(",") if x.strip())
        except ValueError:
            raise ConfigError(f"--{name} {text!r}: expected a comma list of integers") from None

    cfg = BenchConfig(model=model, repetitions=ints(repetitions, "repetitions"),
                      exit_layers=ints(exit_layer, "exit-layer"), dataset=dataset, split=split,
                      sentences=sentences, batch_size=batch_size, max_tokens=max_tokens or None,
                      encoder=encoder or None,
                      baseline=baseline, threads=threads, repeats=repeats,
                      precisions=tuple(p.strip() for p in precision.split(",") if p.strip()))
    result = run_bench(cfg, echo=(lambda *_: None) if as_json else typer.echo)
    if output:
        write_json(output, result)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
    else:
        for s in result["speedups"]:
            typer.echo(json.dumps(s))
