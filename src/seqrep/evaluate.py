"""Span-level evaluation: seqeval strict IOB2 micro precision, recall and F1, per label too."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seqeval.metrics import classification_report, f1_score, precision_score, recall_score
from seqeval.scheme import IOB2

from seqrep.data.types import Sentence
from seqrep.errors import ConfigError

if TYPE_CHECKING:
    from seqrep.model.labeler import SequenceLabeler


def score(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict[str, Any]:
    """seqeval strict-mode IOB2 scores of predicted against gold tag sequences.

    Returns:
        ``precision``, ``recall``, ``f1`` (micro, 0..1) and ``per_label``
        (``{label: {precision, recall, f1, support}}``).
    """
    gold, pred = [list(g) for g in gold], [list(p) for p in pred]
    kw = {"mode": "strict", "scheme": IOB2, "zero_division": 0}
    report = classification_report(gold, pred, output_dict=True, **kw) if any(
        t != "O" for s in gold + pred for t in s) else {}
    per_label = {k: {"precision": v["precision"], "recall": v["recall"], "f1": v["f1-score"],
                     "support": int(v["support"])}
                 for k, v in report.items() if not k.endswith(" avg")}
    return {"precision": float(precision_score(gold, pred, **kw)),
            "recall": float(recall_score(gold, pred, **kw)),
            "f1": float(f1_score(gold, pred, **kw)), "per_label": per_label}


def score_file(path: str | Path) -> dict[str, Any]:
    """Score a prediction file as conlleval does: CoNLL columns ``word ... gold predicted``.

    Gold tags are read like any CoNLL file (scheme detected, converted to IOB2); predicted tags
    are scored exactly as written, so an ``I-`` without its ``B-`` counts as seqeval's strict
    mode counts it. Returns :func:`score`'s result plus ``sentences``.
    """
    from seqrep.data.conll import read_conll
    from seqrep.data.sources import read_text

    gold = read_conll(path, tag_column=-2).sentences  # checks the columns, names bad lines
    lines = read_text(Path(path)).split("\n")
    pred = [[lines[s.meta["line"] - 1 + j].split()[-1] for j in range(len(s))] for s in gold]
    result = score([s.tags for s in gold], pred)
    return {**result, "sentences": len(gold)}


def check_labels(sentences: Sequence[Sentence], labels: Sequence[str], source: str = "",
                 mapping: dict[str, str] | None = None) -> list[Sentence]:
    """Make gold tags fit the model's tag set.

    Args:
        sentences: gold sentences.
        labels: the model's IOB2 tags.
        source: dataset name, for the error message.
        mapping: span label renames (``{"PERSON": "PER"}``) applied first.

    Raises:
        ConfigError: gold labels the model does not know, listing both sets.
    """
    import dataclasses

    if mapping:
        def rename(tag: str) -> str:
            return tag if tag == "O" else tag[:2] + mapping.get(tag[2:], tag[2:])
        sentences = [dataclasses.replace(s, tags=tuple(rename(t) for t in s.tags))
                     for s in sentences]
    known = set(labels)
    unknown = sorted({t for s in sentences for t in s.tags if t not in known})
    if unknown:
        model_types = sorted({t[2:] for t in labels if t != "O"})
        raise ConfigError(f"{source or 'the dataset'} has labels the model does not know: "
                          f"{', '.join(unknown)} (model labels: {', '.join(model_types)}); "
                          f"map them with --label-map OLD=NEW")
    return list(sentences)


def evaluate(labeler: SequenceLabeler, sentences: Sequence[Sentence], decoding: str | None = None,
             batch_size: int = 32) -> dict[str, Any]:
    """Predict ``sentences`` and score them against their gold tags.

    Returns:
        :func:`score`'s keys plus ``sentences`` and ``seconds`` (prediction time).
    """
    from seqrep.predict import predict_tags

    start = time.perf_counter()
    pred = [tags for tags, _ in predict_tags(labeler, [s.words for s in sentences], decoding,
                                             batch_size)]
    seconds = time.perf_counter() - start
    result = score([s.tags for s in sentences], pred)
    result.update(sentences=len(sentences), seconds=round(seconds, 3))
    return result
