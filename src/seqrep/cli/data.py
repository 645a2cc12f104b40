"""``seqrep data``: inspect datasets and labeled files.

``seqrep data stats NAME_OR_PATH`` wraps :func:`seqrep.data.load_corpus` and
:meth:`seqrep.data.types.Corpus.stats`.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import typer

from seqrep.data import load_corpus
from seqrep.data.datasets import DATASETS, SPLITS
from seqrep.data.readers import READERS
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


@app.command()
def stats(
    name_or_path: str = typer.Argument(
        ..., help=f"a dataset name ({', '.join(DATASETS)}) or a path"),
    split: str = typer.Option("train", help=f"one of {', '.join(SPLITS)} (dev = validation)"),
    format: str | None = typer.Option(
        None, help=f"reader for a path: {', '.join(READERS)} (default: from the file)"),
    as_json: bool = typer.Option(False, "--json", help="print the figures as JSON"),
    tag_column: int | None = typer.Option(
        None, help="conll: index of the tag column (negative counts from the end)"),
    scheme: str | None = typer.Option(
        None, help="tag scheme: IOB1, IOB2/BIO, BIOES/BILOU, IO, TOKEN (default: detected)"),
    strict: bool = typer.Option(False, "--strict", help="fail on invalid tag sequences"),
    polarity: bool = typer.Option(False, "--polarity", help="ABSA: label terms by polarity"),
    label_column: str | None = typer.Option(None, help="conllu: label column name or index"),
    domain: list[str] | None = typer.Option(None, help="nlupp: a domain to read (repeatable)"),
    fold: list[int] | None = typer.Option(None, help="nlupp: a fold to read (repeatable)"),
    alignment: str | None = typer.Option(
        None, help="character spans: expand, contract or strict"),
) -> None:
    """Count sentences, words and spans (per label), and report repaired tags and notes."""
    corpus = load_corpus(name_or_path, split, format, tag_column=tag_column, scheme=scheme,
                         strict=strict or None, polarity=polarity or None,
                         label_column=label_column, domains=domain or None,
                         folds=fold or None, alignment=alignment)
    summary = corpus_summary(corpus)
    if as_json:
        typer.echo(json.dumps(summary, indent=2, ensure_ascii=False))
    else:
        _print_table(summary, corpus.name)
