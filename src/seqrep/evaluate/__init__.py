"""Evaluation, in one place for training, ``seqrep evaluate`` and the lab: label checks, logits
computed in shards over processes, decoding them, choosing the decoding on validation, and
scoring by the task's metric (:mod:`seqrep.tasks`). Span labeling: seqeval strict IOB2 micro
precision, recall and F1, per label too, with predicted and gold span counts. Token tagging
(POS): token accuracy, and per-tag precision, recall and F1 over words. Scores are fractions
(0..1) everywhere in the API and in JSON; the command line's tables print them as
percentages.

- :mod:`seqrep.evaluate.labels`: gold labels against the model's classes;
- :mod:`seqrep.evaluate.logits`: sharded logits, scores per decoding, the decoding chosen on
  validation, probe heads scored per layer;
- :mod:`seqrep.evaluate.files`: a prediction file scored as conlleval scores it;
- here: :func:`score` and the evaluation of a labeler on sentences (:func:`evaluate`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from seqrep.contexts import labeler_context
from seqrep.data.types import Sentence
from seqrep.evaluate.files import score_file
from seqrep.evaluate.labels import check_labels, check_scored_labels, check_test_labels
from seqrep.evaluate.logits import (
    choose_decoding,
    layer_scores,
    score_logits,
    scores_by_decoding,
    shard_indices,
    sharded_logits,
)
from seqrep.tasks import task_of

if TYPE_CHECKING:
    from seqrep.model.labeler import SequenceLabeler

__all__ = ["check_labels", "check_scored_labels", "check_test_labels", "choose_decoding",
           "evaluate", "evaluate_logits", "layer_scores", "score", "score_file", "score_logits",
           "scores_by_decoding", "shard_indices", "sharded_logits"]


def score(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]],
          task: str = "spans") -> dict[str, Any]:
    """Scores of predicted against gold tag sequences, by the task's metric
    (:meth:`seqrep.tasks.Task.score`): seqeval strict IOB2 for ``spans``, with
    ``predicted_spans`` / ``gold_spans``; accuracy over words for ``tokens``, with ``words``.

    Returns:
        ``precision``, ``recall``, ``f1`` (micro, 0..1) and ``per_label``
        (``{label: {precision, recall, f1, support}}``), plus the task's own keys.
    """
    return task_of(task).score(gold, pred)


def evaluate_logits(labeler: SequenceLabeler, sentences: Sequence[Sentence],
                    logits: Sequence[Any], decoding: str | None = None,
                    keep: list[list[str]] | None = None) -> dict[str, Any]:
    """Decode given logits of ``sentences`` the labeler's way and score them (``sentences``
    is included; no timing); the predicted tags are appended to ``keep`` if given."""
    from seqrep.predict import decode_logits

    pred = [tags for tags, _ in decode_logits(labeler, sentences, logits, decoding)]
    if keep is not None:
        keep += pred
    result = score([s.tags for s in sentences], pred, labeler.config.task)
    result["sentences"] = len(sentences)
    return result


def evaluate(labeler: SequenceLabeler, sentences: Sequence[Sentence], decoding: str | None = None,
             batch_size: int = 32, progress: Callable[[int], None] | None = None,
             keep: list[list[str]] | None = None) -> dict[str, Any]:
    """Predict ``sentences`` and score them against their gold tags.

    Args:
        labeler: the trained labeler.
        sentences: gold sentences (tags as the labeler's task scores them).
        decoding: ``greedy`` or ``constrained``; default the labeler's.
        batch_size: sentences per forward pass.
        progress: called with the number of sentences done after each chunk.
        keep: a list the predicted tags are appended to (one list per sentence).

    Returns:
        :func:`score`'s keys plus ``sentences`` and ``seconds`` (prediction time).
    """
    from seqrep.encode.document import chunk_spans
    from seqrep.predict import predict_tags

    start = time.perf_counter()
    words = [s.words for s in sentences]
    docs = labeler_context(labeler).doc_ids(sentences)
    chunk = max(batch_size * 8, 256) if progress else max(len(words), 1)
    pred: list[list[str]] = []
    for i, j in chunk_spans(len(words), chunk, docs):
        pred += [tags for tags, _ in predict_tags(labeler, words[i:j], decoding, batch_size,
                                                  None if docs is None else docs[i:j])]
        if progress:
            progress(len(pred))
    seconds = time.perf_counter() - start
    if keep is not None:
        keep += pred
    result = score([s.tags for s in sentences], pred, labeler.config.task)
    result.update(sentences=len(sentences), seconds=round(seconds, 3))
    return result
