"""The methods every labeler offers, whatever runs it: ``predict`` (raw text),
``predict_words`` (words already split) and ``evaluate`` (a dataset), in one class that
:class:`~seqrep.model.labeler.SequenceLabeler` and :class:`~seqrep.export.runtime.OnnxLabeler`
both inherit, so one object serves everywhere and no runtime has its own copy.

The work is done above the model layer (:mod:`seqrep.labeling`, with
:func:`seqrep.predict.tagger.predict_text` and :func:`seqrep.evaluate.evaluate`), which this module
names by reference (:func:`seqrep.core.table.resolve`), as the runtimes name their loaders: the
model package imports this module, and nothing here imports a layer above it.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from seqrep.core.table import resolve

_HERE = "seqrep.labeling"
# seqrep.encode.BATCH_SENTENCES (core sits below encode; a test holds them equal)
BATCH_SENTENCES = 64


class LabelerMethods:
    """``predict``, ``predict_words`` and ``evaluate`` on any labeler that has ``config``,
    ``encoder`` and ``word_logits`` (the :class:`~seqrep.predict.labeler.Labeler`
    protocol)."""

    def predict(self, text_or_texts: str | Sequence[str], *,
                docs: Sequence[Hashable | None] | None = None, decoding: str | None = None,
                batch_size: int = BATCH_SENTENCES, pretokenized: bool | Sequence[bool] = False
                ) -> dict[str, Any] | list[dict[str, Any]]:
        """Label raw text: the records ``seqrep predict`` prints.

        Args:
            text_or_texts: one text, or a list of texts (each one document).
            docs: a document id per text (None: each text is its own document); with
                ``context="document"``, consecutive texts with the same id are read as one.
            decoding: ``greedy`` or ``constrained``; default: the labeler's own.
            batch_size: sentences per forward pass.
            pretokenized: each text is one sentence of whitespace-separated words (as
                ``seqrep predict --words``).

        Returns:
            For a str, one record: ``text``, ``sentences`` (``start``, ``end``, ``words``,
            ``tags``) and ``spans`` (``start``, ``end``, ``label``, ``score``, ``text``,
            ``words``: the span's word range), offsets in characters; for a list, a list of
            them (an empty list for an empty list).

        Raises:
            TypeError, ValueError: an argument of the wrong type or value, in one line naming
                it.
        """
        return resolve(f"{_HERE}:predict")(self, text_or_texts, docs=docs, decoding=decoding,
                                          batch_size=batch_size, pretokenized=pretokenized)

    def predict_words(self, sentences: Sequence[Sequence[str]],
                      docs: Sequence[Hashable | None] | None = None, *,
                      decoding: str | None = None, batch_size: int = BATCH_SENTENCES
                      ) -> list[dict[str, Any]]:
        """Label sentences already split into words.

        Args:
            sentences: a list of word lists (``[["Ada", "Lovelace", "wrote"]]`` for one).
            docs: each sentence's document id (None: each sentence alone); with
                ``context="document"``, consecutive sentences with the same id are read as
                one document.
            decoding, batch_size: as for :meth:`predict`.

        Returns:
            One record per sentence, as :meth:`predict`'s sentences and spans read: ``words``,
            ``tags`` and ``spans`` (``label``, ``score``, ``text``: its words joined by
            spaces, ``words``: its ``[start, end)`` word range).
        """
        return resolve(f"{_HERE}:predict_words")(self, sentences, docs, decoding=decoding,
                                                batch_size=batch_size)

    def evaluate(self, dataset: Any, split: str | None = None, *, decoding: str | None = None,
                 batch_size: int = BATCH_SENTENCES, label_map: dict[str, str] | None = None,
                 **reader: Any) -> dict[str, Any]:
        """Score the labeler on a dataset: the scores ``seqrep evaluate --json`` prints.

        Args:
            dataset: a dataset name (``conll2003``), folder or file, ``hf:ORG/NAME``, a
                ``datasets.Dataset``, a :class:`~seqrep.data.types.Corpus`, or sentences in
                memory (:class:`~seqrep.data.types.Sentence` or ``(words, tags)`` pairs, in
                any tag scheme), as ``train_labeler`` takes them.
            split: ``train``, ``validation`` or ``test`` of a named dataset or folder
                (default: ``test``, or the whole of a file).
            decoding, batch_size: as for :meth:`predict`.
            label_map: dataset labels renamed, ``{"PERSON": "PER"}`` (``--label-map``).
            **reader: reader options (``tag_column``, ``scheme``, ``format`` ...).

        Returns:
            ``precision``, ``recall``, ``f1`` (fractions), ``per_label``, the task's counts,
            ``sentences``, ``seconds`` and ``ran_on``.
        """
        return resolve(f"{_HERE}:evaluate")(self, dataset, split, decoding=decoding,
                                           batch_size=batch_size, label_map=label_map,
                                           **reader)
