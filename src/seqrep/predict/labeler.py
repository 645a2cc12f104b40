"""What prediction needs from a labeler, named as a ``typing.Protocol`` so that code typed
against it imports no labeler class (and no import circle forms around one).

:class:`Labeler` is what :func:`seqrep.predict.tagger.predict_text`, the server's batcher and the
spaCy component use. :class:`~seqrep.model.labeler.SequenceLabeler`,
:class:`~seqrep.export.runtime.OnnxLabeler` both provide it. (What :mod:`seqrep.model.io` saves and
rebuilds is its own :class:`~seqrep.model.io.SavedLabeler`: the model package refers to
nothing above it.)
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from seqrep.encode import BATCH_SENTENCES

if TYPE_CHECKING:
    import torch

    from seqrep.config import LabelerConfig
    from seqrep.encode.pipeline import Encoder
    from seqrep.encode.rows import Item


@runtime_checkable
class Labeler(Protocol):
    """A labeler as prediction uses it: its config (labels, task, decoding), the encoder that
    lays out its inputs, and per-sentence word logits."""

    @property
    def config(self) -> LabelerConfig: ...

    @property
    def encoder(self) -> Encoder: ...

    def word_logits(self, sentences: Sequence[Sequence[str]], batch_size: int = BATCH_SENTENCES,
                    batch_tokens: int | None = ..., *,
                    docs: Sequence[Hashable | None] | None = None,
                    items: Sequence[Item] | None = None) -> list[torch.Tensor]:
        """One ``(words, num_labels)`` tensor of logits per sentence; ``docs``: each
        sentence's document id, read where the labeler's rows hold documents (None, the
        default: each sentence alone;
        :class:`seqrep.encode.grouped.Grouped` carries words and ids together);
        ``items``: the sentences' rows already built by ``encoder.items``, not built again."""
        ...
