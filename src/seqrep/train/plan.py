"""One step resolves a training run before anything trains: :func:`plan_run` turns the
caller's configurations and folder into a :class:`RunPlan` (the configuration a resumed run
continues with, the placement, the fine-tuning mode, the task and labels, the checked data,
the exit layer, the objective), each resolved and checked once, in the order that fails
cheapest first: the folder, the device and mode, the exit layer (the model's config alone),
then the data, before any weights load. The trainer (:class:`~seqrep.train.loop.Trainer`)
fits and tests the plan; nothing downstream resolves any of it again.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from seqrep.config import LabelerConfig, TrainConfig
from seqrep.core.contexts import context_of
from seqrep.data.splits import TrainData, load_data
from seqrep.data.tasks import Task, resolve_task
from seqrep.evaluate import check_labels, check_test_labels
from seqrep.model.device import Placement
from seqrep.model.tuning import Mode
from seqrep.train.folder import check_output, resumed_config
from seqrep.train.objective import BatchLoss, GoldLabels, Objective
from seqrep.train.probes import check_exit_layer


@dataclass
class RunPlan:
    """A training run, resolved: what the trainer builds, fits, records and tests.

    Attributes:
        labeler: the labeler configuration with its task, labels and exit layer resolved.
        train: the training configuration with the mode's learning rates filled in.
        output: the run folder (absolute).
        data: the checked splits; ``train`` holds the objective's extra sentences too.
        placement: the device and precision training runs at.
        mode: the fine-tuning mode (checked to run here).
        task: the task the data resolved to.
        objective: what the run trains toward; ``loss`` is its loss over ``data.train``.
        resume: continue the run in ``output`` from its checkpoint.
        exit_search: the ``--exit-layer auto`` sweep, for ``run.json``.
    """

    labeler: LabelerConfig
    train: TrainConfig
    output: Path
    data: TrainData
    placement: Placement
    mode: Mode
    task: Task
    objective: Objective
    loss: BatchLoss
    resume: bool = False
    quiet: bool = False
    reader_options: dict[str, Any] | None = None
    exit_search: dict[str, Any] | None = None

    @property
    def keeps_folder(self) -> bool:
        """What the folder holds stays when the run starts: a resumed run's own files, or
        what the objective's caller prepared (see :class:`~seqrep.train.objective.Objective`)."""
        return self.resume or self.objective.keeps_folder

    def run_record(self, processes: int) -> dict[str, Any]:
        """What ``run.json`` says of the run: the resolved configurations, the reader options,
        the data and processes it trains on, the objective's entries and the exit sweep."""
        data = self.data
        return {"labeler": self.labeler.to_dict(), "train": self.train.to_dict(),
                "reader_options": self.reader_options or {},
                "train_sentences": len(data.train), "eval_sentences": len(data.eval),
                "validation_source": data.validation_source, "processes": processes,
                **self.objective.record,
                **({"exit_search": self.exit_search} if self.exit_search else {})}


def plan_run(labeler_config: LabelerConfig, train_config: TrainConfig, output: str | Path,
             *, overwrite: bool = False, resume: bool = False, quiet: bool = False,
             reader_options: dict[str, Any] | None = None, expect_model: str | None = None,
             objective: Objective | None = None) -> RunPlan:
    """Resolve a run (see :func:`seqrep.train.train` for the arguments); nothing is written.
    ``objective``: what the run trains toward (default: the gold labels)."""
    objective = objective or GoldLabels()
    output = Path(output).resolve()
    if not objective.keeps_folder:  # a prepared folder was checked before it was prepared
        check_output(output, overwrite, resume)
    if resume:
        labeler_config, train_config, reader_options = resumed_config(
            output, labeler_config, train_config, expect_model)
    mode = labeler_config.mode
    train_config = train_config.resolved(mode)
    # fail before reading data
    placement = Placement.resolve(train_config.device, train_config.precision, training=True)
    mode.check()
    labeler_config = check_exit_layer(labeler_config)  # a fraction of the depth: its layer
    labeler_config, task, data = checked_data(labeler_config, train_config, reader_options)
    sweep = None
    if labeler_config.exit_layer == "auto":
        labeler_config, sweep = auto_exit_layer(labeler_config, train_config, data, quiet)
    if not quiet:
        print(f"training {labeler_config.model} (r={labeler_config.repetitions}, "
              f"unmask={labeler_config.unmask}, exit_layer={labeler_config.exit_layer}, "
              f"finetune={labeler_config.finetune}, task={labeler_config.task}) on "
              f"{len(data.train)} sentences of {train_config.dataset}; validation: "
              f"{data.validation_source} -> {output}", flush=True)
    data.train, loss = objective.bind(data.train, labeler_config.labels)
    return RunPlan(labeler_config, train_config, output, data, placement, mode, task,
                   objective, loss, resume, quiet, reader_options, sweep)


def checked_data(labeler_config: LabelerConfig, train_config: TrainConfig,
                 reader_options: dict[str, Any] | None
                 ) -> tuple[LabelerConfig, Task, TrainData]:
    """The run's data with every tag checked, its task, and the labeler configuration with
    the task and labels resolved from it (the inventory comes from the training and
    validation splits, never from test). With document context, the notice about sentences
    without a document is printed once per launch."""
    data = load_data(train_config, reader_options)
    kind = resolve_task(labeler_config.task, data.train)
    task = kind.name
    if not labeler_config.labels:
        labeler_config = labeler_config.replace(
            labels=kind.inventory(data.train + data.eval))  # never from test
    labeler_config = labeler_config.replace(task=task)
    data.train = check_labels(data.train, labeler_config.labels, "the training split",
                              task=task)
    data.eval = check_labels(data.eval, labeler_config.labels, "the validation split", task=task)
    data.test = check_test_labels(data.test, labeler_config.labels, task=task)
    notice = context_of(labeler_config.context).notice({
        "the training split": data.train, data.validation_source: data.eval,
        "the test split": data.test})
    if notice and os.environ.get("RANK", "0") == "0":  # once per launch, as say_notes
        print(notice, file=sys.stderr, flush=True)
    return labeler_config, kind, data


def auto_exit_layer(labeler_config: LabelerConfig, train_config: TrainConfig, data: Any,
                    quiet: bool) -> tuple[LabelerConfig, dict[str, Any]]:
    """``--exit-layer auto``: the layer whose frozen probe scores best on validation, and the
    sweep (with ``chosen``) that ``run.json`` records."""
    from seqrep.train.probes import choose_exit_layer

    with seeded(train_config.seed):
        layer, sweep = choose_exit_layer(labeler_config, data,
                                         train_config.exit_search_sentences,
                                         seed=train_config.subset_seed,
                                         unit=train_config.subset_unit,
                                         batch_size=train_config.eval_batch_size)
    sweep["chosen"] = layer
    if not quiet:
        print(f"exit layer {layer}: the best frozen probe on validation (F1 "
              f"{max(sweep['f1']) * 100:.2f}%)", flush=True)
    return labeler_config.replace(exit_layer=layer), sweep


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Seed torch's default generator for the block and give the caller's state back after,
    so a run is reproducible without changing the random state of the program around it."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield
