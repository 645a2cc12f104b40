"""Evaluation. Span labeling: seqeval strict IOB2 micro precision, recall and F1, per label too,
with predicted and gold span counts. Token tagging (POS): token accuracy, and per-tag
precision, recall and F1 over words. Scores are fractions (0..1) everywhere in the API and in
JSON; the command line's tables print them as percentages."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seqeval.metrics import classification_report, f1_score, precision_score, recall_score
from seqeval.scheme import IOB2

from seqrep.data.splits import task_tags
from seqrep.data.tags import strict_spans
from seqrep.data.types import Sentence
from seqrep.errors import ConfigError

if TYPE_CHECKING:
    from seqrep.model.labeler import SequenceLabeler


def score(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]],
          task: str = "spans") -> dict[str, Any]:
    """Scores of predicted against gold tag sequences.

    Args:
        gold, pred: one tag sequence per sentence.
        task: ``spans`` (seqeval strict IOB2) or ``tokens`` (see :func:`token_scores`).

    Returns:
        ``precision``, ``recall``, ``f1`` (micro, 0..1), ``per_label``
        (``{label: {precision, recall, f1, support}}``) and ``predicted_spans`` /
        ``gold_spans`` (spans as strict IOB2 reads them).
    """
    if task == "tokens":
        return token_scores(gold, pred)
    gold, pred = [list(g) for g in gold], [list(p) for p in pred]
    kw = {"mode": "strict", "scheme": IOB2, "zero_division": 0}
    report = classification_report(gold, pred, output_dict=True, **kw) if any(
        t != "O" for s in gold + pred for t in s) else {}
    per_label = {k: {"precision": v["precision"], "recall": v["recall"], "f1": v["f1-score"],
                     "support": int(v["support"])}
                 for k, v in report.items() if not k.endswith(" avg")}
    return {"precision": float(precision_score(gold, pred, **kw)),
            "recall": float(recall_score(gold, pred, **kw)),
            "f1": float(f1_score(gold, pred, **kw)), "per_label": per_label,
            "predicted_spans": sum(len(strict_spans(p)) for p in pred),
            "gold_spans": sum(len(strict_spans(g)) for g in gold)}


def token_scores(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]
                 ) -> dict[str, Any]:
    """Token tagging: ``accuracy`` over words (= micro precision, recall and F1, since every
    word has one tag) and per-tag precision, recall and F1 over words."""
    pairs = [(g, p) for gs, ps in zip(gold, pred) for g, p in zip(gs, ps)]
    right = sum(g == p for g, p in pairs)
    acc = right / len(pairs) if pairs else 0.0
    per_label = {}
    for tag in sorted({g for g, _ in pairs} | {p for _, p in pairs}):
        tp = sum(g == p == tag for g, p in pairs)
        n_pred, n_gold = sum(p == tag for _, p in pairs), sum(g == tag for g, _ in pairs)
        prec, rec = (tp / n_pred if n_pred else 0.0), (tp / n_gold if n_gold else 0.0)
        per_label[tag] = {"precision": prec, "recall": rec, "support": n_gold,
                          "f1": 2 * prec * rec / (prec + rec) if prec + rec else 0.0}
    return {"accuracy": acc, "precision": acc, "recall": acc, "f1": acc,
            "per_label": per_label, "words": len(pairs)}


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
                 mapping: dict[str, str] | None = None, task: str = "spans") -> list[Sentence]:
    """Make gold tags fit the model's tag set.

    Args:
        sentences: gold sentences (tags as readers give them: IOB2).
        labels: the model's classes (IOB2 tags, or plain tags for ``task="tokens"``).
        source: dataset name, for the error message.
        mapping: span label renames (``{"PERSON": "PER"}``) applied first.
        task: ``tokens`` writes the gold tags as plain tags (``B-NOUN`` -> ``NOUN``).

    Raises:
        ConfigError: gold labels the model does not know, listing both sets.
    """
    import dataclasses

    if mapping:
        def rename(tag: str) -> str:
            return tag if tag == "O" else tag[:2] + mapping.get(tag[2:], tag[2:])
        sentences = [dataclasses.replace(s, tags=tuple(rename(t) for t in s.tags))
                     for s in sentences]
    if task == "tokens":
        sentences = [dataclasses.replace(s, tags=task_tags(s.tags, task)) for s in sentences]
    known = set(labels)
    unknown = sorted({t for s in sentences for t in s.tags if t not in known})
    if unknown:
        model_types = sorted({t[2:] if task == "spans" else t for t in labels if t != "O"})
        raise ConfigError(f"{source or 'the dataset'} has labels the model does not know: "
                          f"{', '.join(unknown)} (model labels: {', '.join(model_types)}); "
                          f"map them with --label-map OLD=NEW")
    return list(sentences)


def evaluate_logits(labeler: SequenceLabeler, sentences: Sequence[Sentence],
                    logits: Sequence[Any], decoding: str | None = None) -> dict[str, Any]:
    """Decode given logits of ``sentences`` the labeler's way and score them (``sentences``
    is included; no timing)."""
    from seqrep.predict import decode_logits

    pred = [tags for tags, _ in decode_logits(labeler, sentences, logits, decoding)]
    result = score([s.tags for s in sentences], pred, labeler.config.task)
    result["sentences"] = len(sentences)
    return result


def evaluate(labeler: SequenceLabeler, sentences: Sequence[Sentence], decoding: str | None = None,
             batch_size: int = 32, progress: Callable[[int], None] | None = None
             ) -> dict[str, Any]:
    """Predict ``sentences`` and score them against their gold tags.

    Args:
        labeler: the trained labeler.
        sentences: gold sentences (tags as the labeler's task scores them).
        decoding: ``greedy`` or ``constrained``; default the labeler's.
        batch_size: sentences per forward pass.
        progress: called with the number of sentences done after each chunk.

    Returns:
        :func:`score`'s keys plus ``sentences`` and ``seconds`` (prediction time).
    """
    from seqrep.predict import predict_tags

    start = time.perf_counter()
    words = [s.words for s in sentences]
    chunk = max(batch_size * 8, 256) if progress else max(len(words), 1)
    pred: list[list[str]] = []
    for i in range(0, len(words), chunk):
        pred += [tags for tags, _ in predict_tags(labeler, words[i : i + chunk], decoding,
                                                  batch_size)]
        if progress:
            progress(len(pred))
    seconds = time.perf_counter() - start
    result = score([s.tags for s in sentences], pred, labeler.config.task)
    result.update(sentences=len(sentences), seconds=round(seconds, 3))
    return result
