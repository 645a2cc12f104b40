"""``seqrep data``: inspect datasets and labeled files.

``seqrep data stats NAME_OR_PATH`` wraps :func:`seqrep.data.load_corpus` and
:meth:`seqrep.data.types.Corpus.stats`.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import typer

from seqrep.cli.options import command, config_params, config_values
from seqrep.config import ReaderConfig
from seqrep.data import load_corpus
from seqrep.data.datasets import DATASETS, SPLITS
from seqrep.data.types import Corpus

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Inspect datasets and labeled files.")

_SHOWN_NOTES = 10


def corpus_summary(corpus: Corpus) -> dict[str, Any]:
    """The ``data stats`` figures: :meth:`Corpus.stats` plus ``notes`` (a list of strings)."""
    return {**corpus.stats(), "notes": list(corpus.notes)}


def _print_table(summary: dict[str, Any], name: str) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(name, highlight=False, markup=False, soft_wrap=True)
    table = Table(show_header=False)
    table.add_column("what")
    table.add_column("count", justify="right")
    for key, label in (("sentences", "sentences"), ("tokens", "words"), ("spans", "spans"),
                       ("repaired", "repaired tags")):
        table.add_row(label, f"{summary[key]:,}")
    for label, count in summary["spans_per_label"].items():
        table.add_row(f"  {label}", f"{count:,}")
    console.print(table)
    console.print(f"labels ({len(summary['labels'])}): {' '.join(summary['labels']) or '-'}",
                  highlight=False, markup=False)
    notes = summary["notes"]
    if notes:
        kinds = Counter(n.split(":", 1)[0] for n in notes)
        console.print(f"notes ({len(notes)}): "
                      + ", ".join(f"{k} {v}" for k, v in kinds.most_common()),
                      highlight=False, markup=False)
        for note in notes[:_SHOWN_NOTES]:
            console.print(f"  {note}", highlight=False, markup=False, soft_wrap=True)
        if len(notes) > _SHOWN_NOTES:
            console.print(f"  ... {len(notes) - _SHOWN_NOTES} more (see --json)", markup=False)


def _stats_params() -> list:
    import inspect

    kw = inspect.Parameter.KEYWORD_ONLY
    return [
        inspect.Parameter("name_or_path", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                          annotation=str, default=typer.Argument(
                              ..., help=f"a dataset name ({', '.join(DATASETS)}) or a path")),
        inspect.Parameter("split", kw, annotation=str, default=typer.Option(
            "train", help=f"one of {', '.join(SPLITS)} (dev = validation)")),
        inspect.Parameter("as_json", kw, annotation=bool, default=typer.Option(
            False, "--json", help="print the figures as JSON")),
    ] + config_params(ReaderConfig, short={"domains": "--domain", "folds": "--fold"})


def stats_command(values: dict[str, Any]) -> None:
    """Count sentences, words and spans (per label), and report repaired tags and notes."""
    reader = ReaderConfig(**config_values(ReaderConfig, values))
    corpus = load_corpus(values["name_or_path"], values["split"], reader.format,
                         **reader.options())
    summary = corpus_summary(corpus)
    if values["as_json"]:
        typer.echo(json.dumps(summary, indent=2, ensure_ascii=False))
    else:
        _print_table(summary, corpus.name)


app.command("stats")(command(stats_command, _stats_params(), stats_command.__doc__ or ""))
