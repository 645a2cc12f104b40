"""``seqrep train``: fine-tune a labeler on a dataset and keep the best model.

Every :class:`~seqrep.config.LabelerConfig` and :class:`~seqrep.config.TrainConfig` field is an
option, with the field's default and help (``seqrep train --help``).
"""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path
from typing import Any

import typer

from seqrep.cli.options import command, config_params, config_values
from seqrep.config import LabelerConfig, ReaderConfig, TrainConfig
from seqrep.data.tasks import SPANS, TASKS

# LabelerConfig.decoding is what the saved model uses; training sets it from TrainConfig's
SKIP_LABELER = ("decoding",)
SHORT = {"repetitions": "-r"}


def _params() -> list[inspect.Parameter]:
    kw = inspect.Parameter.KEYWORD_ONLY
    def path_option(name: str, help: str) -> inspect.Parameter:
        return inspect.Parameter(name, kw, annotation=str | None,
                                 default=typer.Option(None, f"--{name}", help=help))

    extra = [
        inspect.Parameter("ctx", kw, annotation=typer.Context),
        inspect.Parameter("recipe", kw, annotation=str | None, default=typer.Option(
            None, "--recipe", help="a whole protocol: paper (the paper's QLoRA training, "
                                   "needs bitsandbytes); options you give still win")),
        path_option("train", "training file (sets --dataset)"),
        path_option("validation", "validation file (sets --eval-split)"),
        path_option("test", "test file (sets --test-split)"),
        inspect.Parameter("output", kw, annotation=Path, default=typer.Option(
            ..., "--output", "-o", help="run folder to create")),
        inspect.Parameter("resume", kw, annotation=bool, default=typer.Option(
            False, "--resume", help="continue the run in --output")),
        inspect.Parameter("overwrite", kw, annotation=bool, default=typer.Option(
            False, "--overwrite", help="replace an existing --output")),
        inspect.Parameter("quiet", kw, annotation=bool, default=typer.Option(
            False, "--quiet", "-q", help="no progress output")),
        inspect.Parameter("as_json", kw, annotation=bool, default=typer.Option(
            False, "--json", help="end with a JSON summary (scores 0..1) instead of the "
                                  "summary line")),
    ]
    return (config_params(LabelerConfig, SKIP_LABELER, SHORT) + config_params(TrainConfig)
            + config_params(ReaderConfig, ("format",)) + extra)


def train_command(values: dict[str, Any]) -> None:
    """Train a sequence labeler; the best model by validation F1 lands in OUTPUT/best."""
    import torch

    from seqrep.train import train

    labeler, cfg, reader = configs(values)
    if values.get("recipe"):
        from typer._click.core import ParameterSource

        from seqrep.train.recipes import apply_recipe

        ctx = values["ctx"]
        given = {name for name in values if name != "ctx" and ctx.get_parameter_source(name)
                 in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)}
        labeler, cfg = apply_recipe(values["recipe"], labeler, cfg, given)
    torch.set_num_threads(cfg.threads or os.cpu_count() or 1)
    metrics = train(labeler, cfg, values["output"], overwrite=values["overwrite"],
                    resume=values["resume"], quiet=values["quiet"],
                    reader_options=reader.options())
    typer.echo(outcome(metrics, values))


def configs(values: dict[str, Any]) -> tuple[LabelerConfig, TrainConfig, ReaderConfig]:
    """The configs a training command's options give (``--train``, ``--validation`` and
    ``--test`` set the dataset and splits they name)."""
    from seqrep.errors import ConfigError

    ctx = values.get("ctx")
    for name, field in (("train", "dataset"), ("validation", "eval_split"),
                        ("test", "test_split")):
        if values.get(name):
            flag = f"--{field.replace('_', '-')}"
            if _given(ctx, field) and values.get(field) != values[name]:
                raise ConfigError(f"--{name} {values[name]} and {flag} {values[field]} name "
                                  f"two {'datasets' if name == 'train' else 'splits'}; give "
                                  f"one of them (--{name} sets {flag})")
            values[field] = values[name]
    from seqrep.model.packaged import check_model_name

    check_model_name(values.get("model") or "")  # a typo of an alias: not a Hub look-up
    return (LabelerConfig(**config_values(LabelerConfig, values, SKIP_LABELER)),
            TrainConfig(**config_values(TrainConfig, values)),
            ReaderConfig(**config_values(ReaderConfig, values, ("format",))))


def _given(ctx: Any, name: str) -> bool:
    """Whether option ``name`` was given (on the command line or by its environment
    variable), not left at its default."""
    if ctx is None:
        return False
    from typer._click.core import ParameterSource

    return ctx.get_parameter_source(name) in (ParameterSource.COMMANDLINE,
                                              ParameterSource.ENVIRONMENT)


def outcome(metrics: dict[str, Any], values: dict[str, Any]) -> str:
    """What a training command prints last: the JSON summary with ``--json``, else
    :func:`summary_line`."""
    if values.get("as_json"):  # scores are fractions (0..1) in every JSON seqrep writes
        summary = {k: metrics.get(k) for k in ("status", "task", "decoding", "train_seconds")}
        if metrics.get("validation"):
            summary["validation_f1"] = metrics["validation"]["f1"]
        if metrics.get("test"):
            summary["test_f1"] = metrics["test"]["f1"]
        return json.dumps(summary)
    return summary_line(metrics, values["output"])


def summary_line(metrics: dict[str, Any], output: Path) -> str:
    """The run's outcome in one line, scores in percent as on every table and bar."""
    if metrics.get("status") != "finished":
        return (f"{output}: interrupted at step {metrics.get('step')}; continue with --resume "
                f"--output {output}")
    score = TASKS.get(metrics.get("task"), SPANS).metric
    parts = []
    if metrics.get("validation"):
        parts.append(f"best validation {score} {metrics['validation']['f1'] * 100:.2f}%")
    if metrics.get("test"):
        parts.append(f"test {score} {metrics['test']['f1'] * 100:.2f}%")
    parts.append(f"{metrics.get('train_seconds', 0):.0f} s of training steps")
    return f"{output}: " + ", ".join(parts) + f" (in {output / 'metrics.json'})"


train = command(train_command, _params(), train_command.__doc__ or "")
