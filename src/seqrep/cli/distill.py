"""``seqrep distill TEACHER_RUN --student MODEL -o OUT``: a finished run labels the training
text (and ``--unlabeled`` text) once; a student trains on its label distributions.

Every option of ``seqrep train`` is an option here too (``--model`` is ``--student``); see
:func:`seqrep.train.distill.distill`.
"""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path
from typing import Any

import typer

from seqrep.cli import train as train_cli
from seqrep.cli.options import command

NOT_HERE = ("model", "recipe", "ctx")


def _params() -> list[inspect.Parameter]:
    kw = inspect.Parameter.KEYWORD_ONLY
    own = [
        inspect.Parameter("teacher", kw, annotation=str, default=typer.Argument(
            ..., help="the teacher: a finished run folder (seqrep train's --output), or a "
                      "labeler on the Hugging Face Hub, org/name or org/name@revision")),
        inspect.Parameter("student", kw, annotation=str, default=typer.Option(
            ..., "--student", help="the student's model: packaged alias, local folder or "
                                   "Hugging Face hub id")),
        inspect.Parameter("unlabeled", kw, annotation=Path | None, default=typer.Option(
            None, "--unlabeled", help="more text for the teacher to label: one text per line, "
                                      "or .jsonl records with \"text\" or \"words\"")),
        inspect.Parameter("teacher_labels", kw, annotation=Path | None, default=typer.Option(
            None, "--teacher-labels", help="folder of the teacher's labels, which the "
                                           "students of one teacher may share (default: "
                                           "OUTPUT/teacher-labels)")),
        inspect.Parameter("temperature", kw, annotation=float, default=typer.Option(
            1.0, "--temperature", help="T: both distributions are softened by T (the loss "
                                       "is scaled by T^2)")),
        inspect.Parameter("gold_weight", kw, annotation=float, default=typer.Option(
            0.0, "--gold-weight", help="share of the gold labels' cross-entropy in the loss "
                                       "of words that have them (0: none)")),
    ]
    rest = [p for p in train_cli._params() if p.name not in NOT_HERE]
    return own + rest


def distill_command(values: dict[str, Any]) -> None:
    """Distil a trained run into a student; the student's run folder is an ordinary run."""
    import torch

    from seqrep.train.distill import distill

    values["model"] = values["student"]
    labeler, cfg, reader = train_cli.configs(values)
    torch.set_num_threads(cfg.threads or os.cpu_count() or 1)
    metrics = distill(values["teacher"], labeler, cfg, values["output"],
                      values["temperature"], values["gold_weight"], values["unlabeled"],
                      overwrite=values["overwrite"], resume=values["resume"],
                      quiet=values["quiet"], reader_options=reader.options(),
                      teacher_labels=values["teacher_labels"])
    typer.echo(_with_speed(train_cli.outcome(metrics, values), metrics.get("distill"),
                           bool(values.get("as_json"))))


def _with_speed(line: str, figures: dict[str, Any] | None, as_json: bool) -> str:
    """The training outcome and, for a finished student, the teacher's measured labeling
    speed and the distillation's time (fields of the ``--json`` summary, or one more line)."""
    if not figures:
        return line
    if as_json:
        summary = json.loads(line)
        summary.update({k: figures.get(k) for k in (
            "teacher_sentences", "teacher_seconds", "teacher_sentences_per_second")},
            distill_seconds=figures.get("seconds"),
            distill_work_seconds=figures.get("work_seconds"))
        return json.dumps(summary)
    rate = figures.get("teacher_sentences_per_second")
    return (f"{line}\nteacher: {figures.get('teacher_sentences')} sentences labeled in "
            f"{figures.get('teacher_seconds')} s ({'-' if rate is None else rate} "
            f"sentences/s); the distillation took {figures.get('seconds')} s"
            f"{' in this session' if figures.get('resumed') else ''} "
            f"({figures.get('work_seconds')} s of labeling, training and evaluation)")


distill = command(distill_command, _params(), distill_command.__doc__ or "")
