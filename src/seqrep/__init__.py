"""seqrep: sequence labeling with decoder-only language models by sequence repetition.

>>> from seqrep import SequenceLabeler
>>> lab = SequenceLabeler.from_model("smollm2-135m", labels=["O", "B-PER", "I-PER"],
...                                  repetitions=2, exit_layer=20)
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["SequenceLabeler", "LabelerConfig", "TrainConfig", "Sentence", "Span", "Corpus",
           "load_corpus", "predict_text", "train_labeler"]

_LAZY = {"SequenceLabeler": "seqrep.model.labeler", "LabelerConfig": "seqrep.config",
         "TrainConfig": "seqrep.config", "Sentence": "seqrep.data.types",
         "Span": "seqrep.data.types", "Corpus": "seqrep.data.types",
         "load_corpus": "seqrep.data", "predict_text": "seqrep.predict.tagger",
         "train_labeler": "seqrep.train.fit"}


def __getattr__(name: str) -> Any:
    # imported on first use, so that `seqrep --help` does not load torch
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'seqrep' has no attribute {name!r}")
