"""Training: :func:`train` over config objects (run folder, selection, test, resume).

- :mod:`seqrep.train.run`: :func:`train`, the run folder and the final report.
- :mod:`seqrep.train.loop`: :class:`Trainer`, the epoch loop, evaluation and selection.
- :mod:`seqrep.train.state`: :class:`TrainState`, the optimizer and the learning-rate schedule.
- :mod:`seqrep.train.checkpoint`: resumable checkpoints (safetensors and JSON).
"""

from seqrep.train.run import train

__all__ = ["train"]
