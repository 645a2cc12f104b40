"""Evaluation, in one place for training, ``seqrep evaluate`` and the lab: label checks, logits
computed in shards over processes, decoding them, choosing the decoding on validation, and
scoring by the task's metric (:mod:`seqrep.data.tasks`). Span labeling: seqeval strict IOB2 micro
precision, recall and F1, per label too, with predicted and gold span counts. Token tagging
(POS): token accuracy, and per-tag precision, recall and F1 over words. Scores are fractions
(0..1) everywhere in the API and in JSON; the command line's tables print them as
percentages.

- :mod:`seqrep.evaluate.labels`: gold labels against the model's classes;
- :mod:`seqrep.evaluate.logits`: sharded logits, scores per decoding, the decoding chosen on
  validation, probe heads scored per layer;
- :mod:`seqrep.evaluate.files`: a prediction file scored as conlleval scores it;
- here: :func:`score`, the evaluation of a labeler on sentences (:func:`evaluate`) and the
  progress every evaluation shows (:func:`progress_bar`, :func:`chunked_logits`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from seqrep.data.tasks import task_of
from seqrep.data.types import Sentence
from seqrep.encode import BATCH_SENTENCES
from seqrep.encode.grouped import Grouped
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

if TYPE_CHECKING:
    from seqrep.model.labeler import SequenceLabeler

__all__ = ["check_labels", "check_scored_labels", "check_test_labels", "choose_decoding",
           "chunked_logits", "evaluate", "evaluate_logits", "layer_scores",
           "progress_bar", "progress_chunk", "score", "score_file", "score_logits",
           "scores_by_decoding", "shard_indices", "sharded_logits"]


def score(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]],
          task: str = "spans") -> dict[str, Any]:
    """Scores of predicted against gold tag sequences, by the task's metric
    (:meth:`seqrep.data.tasks.Task.score`): seqeval strict IOB2 for ``spans``, with
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
    from seqrep.predict.tagger import decode_logits

    pred = [tags for tags, _ in decode_logits(labeler, sentences, logits, decoding)]
    if keep is not None:
        keep += pred
    result = score([s.tags for s in sentences], pred, labeler.config.task)
    result["sentences"] = len(sentences)
    return result


def progress_chunk(batch_size: int, total: int) -> int:
    """Sentences per progress update: about 20 updates, so the ETA moves (a validation of
    300 sentences can take a minute or more), and at least two batches."""
    return max(batch_size * 2, -(-total // 20), 1)


def progress_bar(total: int, what: str | None = None, leave: bool = True
                 ) -> Callable[[int], None]:
    """A progress callback: sentences done, sentences/s and ETA on stderr, as ``seqrep
    evaluate`` and the validations and test inside ``train`` show them. ``leave``: keep
    the bar and end with a line of the rate (off inside training, whose own lines follow)."""
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc=what, unit="sent", file=sys.stderr, dynamic_ncols=True,
               mininterval=1.0, leave=leave)
    start = time.perf_counter()

    def update(done: int) -> None:
        bar.update(done - bar.n)
        if done >= total:
            bar.close()
            if leave:
                rate = done / max(time.perf_counter() - start, 1e-9)
                print(f"{done} sentences, {rate:.1f} sentences/s", file=sys.stderr)

    if not total:
        update(0)
    return update


def chunked_logits(labeler: SequenceLabeler, sentences: Sequence[Sentence], batch_size: int,
                   accelerator: object | None = None,
                   progress: Callable[[int], None] | None = None,
                   chunk: int | None = None) -> list[Any]:
    """:func:`sharded_logits` of ``sentences`` (in input order) computed in the chunks of
    :meth:`~seqrep.encode.grouped.Grouped.chunks` (``chunk`` sentences each, default
    :func:`progress_chunk`), with ``progress`` called with the sentences done after each.
    Every process must chunk alike (each chunk is one gather), so the chunks never depend on
    whether progress is shown."""
    grouped = Grouped.of(sentences, labeler)  # each chunk keeps its sentences' documents
    out: list[Any] = [None] * len(grouped)
    done = 0
    for idx in grouped.chunks(chunk or progress_chunk(batch_size, len(grouped))):
        logits = sharded_logits(labeler, grouped.part(idx), batch_size, accelerator)
        for i, x in zip(idx, logits, strict=True):
            out[i] = x
        done += len(idx)
        if progress:
            progress(done)
    return out


def evaluate(labeler: SequenceLabeler, sentences: Sequence[Sentence], decoding: str | None = None,
             batch_size: int = BATCH_SENTENCES, progress: Callable[[int], None] | None = None,
             keep: list[list[str]] | None = None, chunk: int | None = None) -> dict[str, Any]:
    """Predict ``sentences`` and score them against their gold tags.

    Args:
        labeler: the trained labeler.
        sentences: gold sentences (tags as the labeler's task scores them).
        decoding: ``greedy`` or ``constrained``; default the labeler's.
        batch_size: sentences per forward pass.
        progress: called with the number of sentences done after each chunk.
        keep: a list the predicted tags are appended to (one list per sentence).
        chunk: with ``progress``, sentences per chunk (default :func:`progress_chunk`;
            see :meth:`seqrep.encode.grouped.Grouped.chunks`): the tags never depend on it.

    Returns:
        :func:`score`'s keys plus ``sentences`` and ``seconds`` (prediction time).
    """
    from seqrep.predict.tagger import decode_logits

    start = time.perf_counter()
    grouped = Grouped.of(sentences, labeler)  # each chunk keeps its sentences' documents
    chunks = grouped.chunks(chunk or progress_chunk(batch_size, len(grouped))) \
        if progress else [list(range(len(grouped)))] * bool(len(grouped))
    pred: list[list[str]] = [[] for _ in sentences]
    done = 0
    for idx in chunks:
        part = grouped.part(idx)
        tags = decode_logits(labeler, part.words, part.logits(labeler, batch_size), decoding)
        for i, (t, _) in zip(idx, tags, strict=True):
            pred[i] = t
        done += len(idx)
        if progress:
            progress(done)
    seconds = time.perf_counter() - start
    if keep is not None:
        keep += pred
    result = score([s.tags for s in sentences], pred, labeler.config.task)
    result.update(sentences=len(sentences), seconds=round(seconds, 3))
    return result
