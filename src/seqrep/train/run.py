"""``train``: one function over config objects that trains, selects and tests a labeler.

Run folder (``output``)::

    run.json      the resolved configuration (labeler + training)
    best/         the best model by validation micro-F1 (``SequenceLabeler.from_pretrained``)
    checkpoint/   the latest resumable state (see :mod:`seqrep.train.checkpoint`)
    log.jsonl     one line per evaluation
    metrics.json  the final report: best validation scores, test scores, times

A run is resolved once into a plan (:mod:`seqrep.train.plan`), which the trainer
(:class:`~seqrep.train.loop.Trainer`) fits and tests; what the folder may hold and how it is
resumed is :mod:`seqrep.train.folder`'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seqrep.config import LabelerConfig, TrainConfig
from seqrep.train.folder import finished_metrics
from seqrep.train.loop import Trainer
from seqrep.train.objective import Objective
from seqrep.train.plan import RunPlan, plan_run, seeded


def train(labeler_config: LabelerConfig, train_config: TrainConfig, output: str | Path,
          overwrite: bool = False, resume: bool = False, quiet: bool = False,
          reader_options: dict[str, Any] | None = None, expect_model: str | None = None,
          objective: Objective | None = None) -> dict[str, Any]:
    """Train a labeler, keep the best model by validation F1, evaluate it on the test split.

    Args:
        labeler_config: the model to build (``labels`` empty: taken from the data).
        train_config: data and optimisation settings.
        output: the run folder.
        overwrite: replace an existing run folder.
        resume: continue the run in ``output`` from its checkpoint (its saved configuration
            wins over the given one, except ``trust_remote_code``: see
            :func:`~seqrep.train.folder.resumed_config`).
        quiet: no progress bar or evaluation lines.
        reader_options: options for the dataset reader (``tag_column`` ...).
        expect_model: with ``resume``, refuse a folder whose ``run.json`` names another
            model (a grid knows which model each of its folders holds).
        objective: what the run trains toward (:class:`~seqrep.train.objective.Objective`:
            its extra sentences, its loss, its ``run.json`` entries); default the gold
            labels. ``seqrep distill`` passes its teacher's soft targets.

    Returns:
        The metrics written to ``metrics.json`` (``status`` is ``interrupted`` when
        ``max_steps`` stopped the run early).
    """
    output = Path(output).resolve()  # a symlinked folder is worked on where it points
    done = output / "metrics.json"
    if resume and (done.exists() or done.is_symlink()):
        return finished_metrics(output)  # the run is finished already
    return fit(plan_run(labeler_config, train_config, output, overwrite=overwrite,
                        resume=resume, quiet=quiet, reader_options=reader_options,
                        expect_model=expect_model, objective=objective))


def fit(plan: RunPlan) -> dict[str, Any]:
    """Fit the plan and, once it has run to its end, test it (seeded by the run's seed);
    the metrics of ``metrics.json``, or ``interrupted`` at ``max_steps``."""
    with seeded(plan.train.seed):
        trainer = Trainer(plan.labeler, plan.train, plan.output, plan.data, plan.quiet,
                          plan.loss, plan.placement)  # the model
        trainer.start(plan)
        state = trainer.run()
        if not trainer.finished:
            return {"status": "interrupted", "step": state.step}
        return trainer.test()
