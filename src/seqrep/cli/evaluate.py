"""``seqrep evaluate``: score a trained labeler on a dataset split; ``seqrep score``: score a
prediction file. Both seqeval strict IOB2."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from seqrep.cli.options import parse_label_map


def evaluate(
    run: Path = typer.Argument(..., help="run folder (or a saved labeler folder)"),
    dataset: str = typer.Option(..., "--dataset", help="named dataset or path to a data file"),
    split: str = typer.Option("test", "--split", help="train, validation or test"),
    format: str | None = typer.Option(None, "--format", help="file format of a path"),
    decoding: str | None = typer.Option(None, "--decoding",
                                        help="greedy or constrained (default: the run's)"),
    label_map: list[str] | None = typer.Option(None, "--label-map",
                                               help="rename dataset labels, OLD=NEW"),
    batch_size: int = typer.Option(64, "--batch-size"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
) -> None:
    """Precision, recall and F1 (micro, strict IOB2 spans) and a per-label table."""
    from seqrep.data import load_corpus
    from seqrep.evaluate import check_labels
    from seqrep.evaluate import evaluate as run_eval
    from seqrep.model.labeler import SequenceLabeler

    labeler = SequenceLabeler.from_pretrained(run)
    corpus = load_corpus(dataset, split, format)
    gold = check_labels([s for s in corpus.sentences if len(s)], labeler.config.labels,
                        corpus.name or dataset, parse_label_map(label_map))
    result = run_eval(labeler, gold, decoding, batch_size)
    show(result, f"{corpus.name or dataset}: {result['sentences']} sentences, "
                 f"{result['seconds']:.1f} s", as_json)


def score(
    predictions: Path = typer.Argument(..., help="CoNLL columns: word ... gold predicted"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
) -> None:
    """Score a prediction file as conlleval does (seqeval strict IOB2): the last column is the
    prediction, the one before it the gold tag."""
    from seqrep.evaluate import score_file

    result = score_file(predictions)
    show(result, f"{predictions}: {result['sentences']} sentences", as_json)


def show(result: dict, title: str, as_json: bool) -> None:
    """Print a score as JSON or as a per-label table with the micro average."""
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    table = Table(title=title)
    for col in ("label", "precision", "recall", "f1", "support"):
        table.add_column(col, justify="left" if col == "label" else "right")
    for label, r in sorted(result["per_label"].items()):
        table.add_row(label, f"{r['precision'] * 100:.2f}", f"{r['recall'] * 100:.2f}",
                      f"{r['f1'] * 100:.2f}", str(r["support"]))
    table.add_row("micro", f"{result['precision'] * 100:.2f}", f"{result['recall'] * 100:.2f}",
                  f"{result['f1'] * 100:.2f}", "", style="bold")
    Console().print(table)
