"""Evaluation from logits: computed in shards over processes, decoded, scored per decoding, the
decoding chosen on validation, and probe heads scored per layer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from seqrep.data.tasks import AUTO, DECODINGS, task_of
from seqrep.data.types import Sentence
from seqrep.encode.grouped import Grouped

if TYPE_CHECKING:
    from seqrep.model.labeler import SequenceLabeler


def sharded_logits(labeler: SequenceLabeler, sentences: Grouped, batch_size: int,
                   accelerator: object | None = None) -> list[Any]:
    """The word logits of ``sentences`` (read with their documents), each process computing
    every N-th document (every N-th sentence when each is alone), gathered back in input
    order on every process (no sentence lost or counted twice)."""
    world = getattr(accelerator, "num_processes", 1)
    if world == 1:
        return sentences.logits(labeler, batch_size)
    from accelerate.utils import gather_object

    rank = accelerator.process_index  # type: ignore[attr-defined]
    mine_idx = sentences.shard(rank, world)
    mine = sentences.part(mine_idx).logits(labeler, batch_size)
    out: list[Any] = [None] * len(sentences)
    for idx, logits in gather_object([(mine_idx, mine)]):
        for i, x in zip(idx, logits):
            out[i] = x
    return out


def shard_indices(n: int, docs: Sequence[Any] | None, rank: int, world: int) -> list[int]:
    """The sentence indices process ``rank`` of ``world`` computes of ``n`` sentences with
    document ids ``docs`` (None: each alone); see :meth:`Grouped.shard`."""
    return Grouped([()] * n, None if docs is None else list(docs)).shard(rank, world)


def score_logits(logits: Sequence[Any], gold: Sequence[Sentence], labels: Sequence[str],
                 decoding: str, task: str = "spans") -> dict[str, Any]:
    """Score per-sentence logits (``(words, classes)`` each) decoded by ``decoding``."""
    from seqrep.data.decode import decode

    return task_of(task).score([s.tags for s in gold],
                               [decode(x, labels, decoding)[0] for x in logits])


def scores_by_decoding(logits: Sequence[Any], gold: Sequence[Sentence], labels: Sequence[str],
                       task: str = "spans") -> dict[str, dict[str, Any]]:
    """Scores of every decoding from one set of logits, by name; a decoding the task does not
    use holds the score of the one it uses instead (token tagging: greedy's, twice)."""
    kind = task_of(task)
    out: dict[str, dict[str, Any]] = {}
    for name in DECODINGS:
        used = kind.decoding(name)
        out[name] = out[used] if used in out else score_logits(logits, gold, labels, used, task)
    return out


# How much higher (F1 points, 0..100) another decoding's validation F1 must be for ``auto`` to
# leave the task's preferred one (constrained for spans). Constrained decoding writes only
# valid IOB2; greedy can write an I- that continues no span, which no reader of the output
# counts alike. A difference this small is noise: one span found or missed moves F1 by about
# 2 / (predicted + gold spans), 0.3 points on a validation split of 300 spans (WNUT-17's 300
# sentences: auto took greedy for 0.08 points), and the standard error of F1 over a few
# hundred sentences is a point or more. Half a point asks for more than one span's worth.
AUTO_MARGIN_POINTS = 0.5


def choose_decoding(scores: dict[str, dict[str, Any]], requested: str,
                    task: str = "spans") -> str:
    """The decoding a model keeps after validation: ``requested``, or with ``auto`` the
    task's first (constrained for spans) unless another's F1 in ``scores``
    (:func:`scores_by_decoding`) is higher by more than :data:`AUTO_MARGIN_POINTS`, then the
    highest; token tagging always greedy."""
    kind = task_of(task)
    if requested == AUTO:
        first = kind.decodings[0].name
        best = max(kind.decodings, key=lambda d: scores[d.name]["f1"]).name
        # in points, rounded: 0.455 - 0.450 is 0.5 points, not 0.5000000000000004
        gain = round((scores[best]["f1"] - scores[first]["f1"]) * 100, 9)
        requested = best if gain > AUTO_MARGIN_POINTS else first
    return kind.decoding(requested)


def layer_scores(logits: Any, gold: Sequence[Sentence], labels: Sequence[str],
                 task: str = "spans") -> list[dict[str, Any]]:
    """Scores of probe heads, one per layer: ``logits`` is ``(words, layers, classes)`` over
    the words of ``gold`` in order. A probe is scored greedily (argmax per word, what greedy
    decoding picks) and in one batched argmax for all layers: probes select their epochs
    and the exit layer by it."""
    pred = logits.argmax(-1)  # (words, layers)
    sizes = [len(s) for s in gold]
    tags, kind = [s.tags for s in gold], task_of(task)
    return [kind.score(tags, [[labels[i] for i in p.tolist()] for p in pred[:, k].split(sizes)])
            for k in range(pred.shape[1])]
