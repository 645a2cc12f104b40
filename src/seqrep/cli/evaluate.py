"""``seqrep evaluate``: score a trained labeler on a dataset split or file; ``seqrep score``:
score a prediction file. Spans: seqeval strict IOB2; token tagging: accuracy.

JSON (``--json``) holds fractions (0..1), as every JSON seqrep writes; the tables print the same
scores as percentages (columns marked %).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from seqrep.cli.options import (
    command,
    config_params,
    config_values,
    inference_config,
    inference_option,
    parse_label_map,
    revision_option,
    with_revision,
)
from seqrep.config import ReaderConfig
from seqrep.core.contexts import labeler_context


def _params() -> list:
    import inspect

    kw = inspect.Parameter.KEYWORD_ONLY

    def p(name: str, annotation: Any, default: Any) -> inspect.Parameter:
        return inspect.Parameter(name, kw, annotation=annotation, default=default)

    return [
        inspect.Parameter("run", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Path,
                          default=typer.Argument(..., help="run folder (or a saved labeler "
                                                           "folder)")),
        p("dataset", str, typer.Option(..., "--dataset", help="named dataset, dataset folder "
                                                              "or a data file")),
        p("split", str | None, typer.Option(None, "--split", help="train, validation or test "
                                            "(default: test, or the whole of a file)")),
        p("revision", str | None, revision_option()),
        p("decoding", str | None, inference_option("decoding")),
        p("label_map", list[str] | None, typer.Option(None, "--label-map",
                                                      help="rename dataset labels, OLD=NEW")),
        *(p(name, kind, inference_option(name)) for name, kind in (
            ("batch_size", int), ("trust_remote_code", bool), ("device", str),
            ("precision", str), ("runtime", str), ("context_overlap", float | None))),
        p("max_sentences", int | None, typer.Option(
            None, "--max-sentences", help="score only the first N sentences (a quick check)")),
        p("predictions", Path | None, typer.Option(
            None, "--predictions", help="write 'word gold predicted' lines here (conlleval's "
            "format, read by seqrep score)")),
        p("overwrite", bool, typer.Option(
            False, "--overwrite", help="replace an existing --predictions file")),
        p("as_json", bool, typer.Option(False, "--json", help="print JSON (fractions 0..1); "
                                        "progress stays on stderr")),
        p("quiet", bool, typer.Option(False, "--quiet", "-q", help="no progress bar")),
    ] + config_params(ReaderConfig)


def evaluate_command(values: dict[str, Any]) -> None:
    """Score a trained labeler on a dataset split or a labeled file.

    Precision, recall and F1 (micro, strict IOB2 spans; accuracy for token tagging), a
    per-label table, and predicted and gold span counts."""
    from seqrep.data import load_corpus
    from seqrep.data.datasets import holds_one_split
    from seqrep.data.splits import say_notes
    from seqrep.errors import ConfigError
    from seqrep.evaluate import check_scored_labels
    from seqrep.evaluate import evaluate as run_eval
    from seqrep.export import load

    settings = inference_config(values)  # checked once, before the data or the model
    run = with_revision(values["run"], values["revision"])
    reader = ReaderConfig(**config_values(ReaderConfig, values))
    dataset, split, limit = values["dataset"], values["split"], values["max_sentences"]
    if limit is not None and limit < 1:
        raise ConfigError(f"--max-sentences {limit}; expected a positive number")
    if split is None:
        split = "train" if holds_one_split(dataset) else "test"
    if values["predictions"] is not None:
        _check_predictions(values["predictions"], dataset, values["overwrite"])
    corpus = load_corpus(dataset, split, reader.format, **reader.options())  # before the model
    say_notes(corpus)
    labeler = load(run, settings)
    gold = check_scored_labels([s for s in corpus.sentences if len(s)][:limit],
                               labeler.config.labels, corpus.name or dataset,
                               parse_label_map(values["label_map"]), labeler.config.task)
    notice = labeler_context(labeler).notice({corpus.name or dataset: gold})
    if notice:
        typer.echo(notice, err=True)
    pred: list[list[str]] = []
    from accelerate import PartialState

    from seqrep.model.device import ran_on, ran_on_line

    state = PartialState(cpu=labeler.placement.device.type == "cpu")
    if state.is_main_process:  # what produces the score, where a user sees it (also --json)
        typer.echo(ran_on_line(labeler), err=True)
    if state.num_processes > 1:  # under torchrun / accelerate launch: shard the sentences
        from seqrep.encode.grouped import Grouped
        from seqrep.evaluate import evaluate_logits, sharded_logits

        start = time.perf_counter()
        logits = sharded_logits(labeler, Grouped.of(gold, labeler), settings.batch_size, state)
        result = evaluate_logits(labeler, gold, logits, settings.decoding, pred)
        result["seconds"] = round(time.perf_counter() - start, 3)
        if not state.is_main_process:
            return
    else:
        from seqrep.evaluate import progress_bar

        progress = None if values["quiet"] else progress_bar(len(gold))
        result = run_eval(labeler, gold, settings.decoding, settings.batch_size, progress,
                          pred)
    if values["predictions"] is not None:
        write_predictions(values["predictions"], gold, pred)
    result["ran_on"] = ran_on(labeler)
    show(result, f"{corpus.name or dataset}: {result['sentences']} sentences, "
                 f"{result['seconds']:.1f} s ({', '.join(map(str, result['ran_on'].values()))})",
         values["as_json"])


evaluate = command(evaluate_command, _params(), evaluate_command.__doc__ or "")


def _check_predictions(path: Path, dataset: str, overwrite: bool = False) -> None:
    """``--predictions``: never the dataset itself, a folder or a missing folder; an existing
    file only with ``overwrite``."""
    import os

    from seqrep.errors import ConfigError
    from seqrep.files.outputs import check_paths

    check_paths(None, path, overwrite, option="--predictions",
                replaceable=lambda p: p.is_file())
    if Path(path).exists() and Path(dataset).exists() and os.path.samefile(path, dataset):
        raise ConfigError(f"--predictions {path} is the dataset file; expected another path")


def write_predictions(path: Path, gold: list, pred: list[list[str]]) -> None:
    """conlleval's input: ``word gold predicted`` per word (one space between columns, a
    space inside a word written as ``_``), a blank line after each sentence; written
    atomically."""
    from seqrep.data.tags import spans_to_tags, split_tag, strict_spans
    from seqrep.files.atomic import write_text

    def word(w: str) -> str:
        return "_".join(w.split()) or "_"

    def as_scored(tags: list[str]) -> list[str]:
        # the spans evaluation scored (seqeval strict IOB2: an I- that continues no span is in
        # none) written as clean IOB2, so `score` reads back exactly those spans
        if all(t == "O" or split_tag(t)[0] in ("B", "I") for t in tags):
            return spans_to_tags(strict_spans(tags), len(tags), "IOB2")
        return list(tags)  # plain tags (token tasks)

    write_text(path, "".join("".join(f"{word(w)} {g} {p}\n" for w, g, p in
                                     zip(s.words, s.tags, as_scored(tags), strict=True)) + "\n"
                             for s, tags in zip(gold, pred, strict=True)))


def score(
    predictions: Path = typer.Argument(..., help="CoNLL columns: word ... gold predicted"),
    as_json: bool = typer.Option(False, "--json", help="print JSON (fractions 0..1)"),
) -> None:
    """Score a prediction file as conlleval does (seqeval strict IOB2).

    The last column is the prediction, the one before it the gold tag. Each column's scheme
    (IOB1, IOB2, BIOES/BILOU, IO, plain labels; prefixes in either case) is detected on its
    own and converted to IOB2; IOB2 predictions are scored as written (an I- that continues no
    span is in none). A label's support is its number of gold spans (conlleval's per-type
    count is predicted spans)."""
    from seqrep.evaluate import score_file

    result = score_file(predictions)
    show(result, f"{predictions}: {result['sentences']} sentences", as_json)


def show(result: dict, title: str, as_json: bool) -> None:
    """Print a score as JSON (fractions) or as a per-label table in percent."""
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    table = Table(title=title)
    for col in ("label", "precision %", "recall %", "f1 %", "support"):
        table.add_column(col, justify="left" if col == "label" else "right")
    for label, r in sorted(result["per_label"].items()):
        table.add_row(label, f"{r['precision'] * 100:.2f}", f"{r['recall'] * 100:.2f}",
                      f"{r['f1'] * 100:.2f}", str(r["support"]))
    micro = "accuracy" if "accuracy" in result else "micro"
    table.add_row(micro, f"{result['precision'] * 100:.2f}", f"{result['recall'] * 100:.2f}",
                  f"{result['f1'] * 100:.2f}", "", style="bold")
    console = Console()
    console.print(table)
    if "predicted_spans" in result:
        console.print(f"spans: {result['predicted_spans']} predicted, {result['gold_spans']} "
                      f"gold" + (" (the model predicts no span: F1 is 0)"
                                 if not result["predicted_spans"] else ""), highlight=False)
