"""Training: :func:`train` over config objects (run folder, selection, test, resume).

- :mod:`seqrep.train.run`: :func:`train`: plan the run, fit it, test it.
- :mod:`seqrep.train.plan`: :class:`RunPlan`, the run resolved once before anything trains.
- :mod:`seqrep.train.objective`: what a run trains toward (gold labels; distillation's soft
  targets), its data, loss and record.
- :mod:`seqrep.train.folder`: the run folder: replacing, resuming, cleaning up, the report.
- :mod:`seqrep.train.loop`: :class:`Trainer`, the epoch loop, evaluation, selection and test.
- :mod:`seqrep.train.state`: :class:`TrainState`, the optimizer and the learning-rate schedule.
- :mod:`seqrep.train.checkpoint`: resumable checkpoints (safetensors and JSON).
"""

from seqrep.train.run import train

__all__ = ["train"]
