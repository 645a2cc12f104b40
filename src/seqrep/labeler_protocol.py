"""What the rest of seqrep needs from a labeler, named as ``typing.Protocol`` classes, so that
code typed against them imports no labeler class (and no import circle forms around one).

- :class:`Labeler`: what prediction needs (:func:`seqrep.predict.predict_text`, the server's
  batcher, the spaCy component). :class:`~seqrep.model.labeler.SequenceLabeler`,
  :class:`~seqrep.export.runtime.OnnxLabeler` and the batcher's proxy of a labeler with the
  batch's logits already computed all provide it.
- :class:`SavedLabeler`: what :mod:`seqrep.model.io` writes and rebuilds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import torch

    from seqrep.config import LabelerConfig
    from seqrep.encode.pipeline import Encoder
    from seqrep.model.backbone import Backbone, BackboneInfo


@runtime_checkable
class Labeler(Protocol):
    """A labeler as prediction uses it: its config (labels, task, decoding), the encoder that
    lays out its inputs, and per-sentence word logits."""

    @property
    def config(self) -> LabelerConfig: ...

    @property
    def encoder(self) -> Encoder: ...

    def word_logits(self, sentences: Sequence[Sequence[str]], batch_size: int = 32,
                    max_tokens: int | None = ...) -> list[torch.Tensor]:
        """One ``(words, num_labels)`` tensor of logits per sentence. (SequenceLabeler and
        OnnxLabeler also take ``docs=``, each sentence's document id, for
        ``context="document"``; prediction passes it only when it has documents.)"""
        ...


class SavedLabeler(Protocol):
    """A labeler as :mod:`seqrep.model.io` saves and rebuilds it."""

    config: LabelerConfig
    backbone_info: BackboneInfo
    backbone: Any  # the (possibly adapted) transformers model
    tokenizer: Any
    head: torch.nn.Module

    def __init__(self, config: LabelerConfig, backbone: Backbone) -> None: ...

    @staticmethod
    def _load_backbone(config: LabelerConfig, source: str | None = None, cut: bool = True,
                       tokenizer: str | None = None) -> Backbone: ...

    def eval(self) -> Any: ...
