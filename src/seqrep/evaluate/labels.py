"""Gold labels against a model's classes: renamed, written as the task scores them, and checked
(an unknown label is an error, or in a split that is only scored a miss with one notice)."""

from __future__ import annotations

from collections.abc import Sequence

from seqrep.data.tasks import task_of, unknown_labels_message
from seqrep.data.types import Sentence
from seqrep.errors import ConfigError


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
    sentences = _renamed(sentences, mapping, task)
    known = set(labels)
    unknown = sorted({t for s in sentences for t in s.tags if t not in known})
    if unknown:
        raise ConfigError(unknown_labels_message(source, unknown, labels, task))
    return list(sentences)


def _renamed(sentences: Sequence[Sentence], mapping: dict[str, str] | None,
             task: str) -> list[Sentence]:
    """Gold sentences with ``mapping``'s span label renames applied and, for ``tokens``, their
    tags written as plain tags."""
    import dataclasses

    if mapping:
        def rename(tag: str) -> str:
            return tag if tag == "O" else tag[:2] + mapping.get(tag[2:], tag[2:])
        sentences = [dataclasses.replace(s, tags=tuple(rename(t) for t in s.tags))
                     for s in sentences]
    kind = task_of(task)
    return [dataclasses.replace(s, tags=kind.gold(s.tags)) for s in sentences]


def check_scored_labels(sentences: Sequence[Sentence], labels: Sequence[str], source: str = "",
                        mapping: dict[str, str] | None = None,
                        task: str = "spans") -> list[Sentence]:
    """Gold labels for ``seqrep evaluate``: scored as a run's own test split is
    (:func:`check_test_labels`: a label the model cannot produce counts as missed, with one
    notice), unless the model knows none of the gold's labels; then the names differ
    (``PERSON`` against ``PER``) and :func:`check_labels`' error says to map them."""
    renamed = _renamed(sentences, mapping, task)
    gold = task_of(task).types(t for s in renamed for t in s.tags)
    model = task_of(task).types(labels)
    if gold and not gold & model:
        return check_labels(renamed, labels, source, task=task)  # raises, naming both sets
    return check_test_labels(renamed, labels, source or "the dataset", task=task)


def check_test_labels(sentences: Sequence[Sentence], labels: Sequence[str],
                      source: str = "the test split", task: str = "spans") -> list[Sentence]:
    """:func:`check_labels` for sentences that are only scored (a test split), where gold
    labels the model cannot produce are no error: they stay in the gold, so each of their
    spans (or words) counts as missed, and one notice line on stderr names them with their
    counts. The model's labels come from training and validation data only."""
    import sys

    kind = task_of(task)
    tags = {t for s in sentences for t in kind.gold(s.tags)}
    out = check_labels(sentences, sorted(set(labels) | tags), source, task=task)
    unknown = sorted(kind.types(tags - set(labels)))
    if unknown:
        unit = kind.unit
        counts = {x: sum(t == kind.unit_tag(x) for s in out for t in s.tags) for x in unknown}
        print(f"notice: {source} has labels the model cannot produce (in no training or "
              "validation sentence), counted as missed: "
              + ", ".join(f"{x} ({n} {unit}{'s' if n != 1 else ''})" for x, n in counts.items()),
              file=sys.stderr, flush=True)
    return out
