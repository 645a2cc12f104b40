"""Evaluation, in one place for training, ``seqrep evaluate`` and the lab: label checks, logits
computed in shards over processes, decoding them, choosing the decoding on validation, and
scoring by the task's metric (:mod:`seqrep.tasks`). Span labeling: seqeval strict IOB2 micro
precision, recall and F1, per label too, with predicted and gold span counts. Token tagging
(POS): token accuracy, and per-tag precision, recall and F1 over words. Scores are fractions
(0..1) everywhere in the API and in JSON; the command line's tables print them as
percentages."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seqrep.data.tags import detect_scheme, split_tag
from seqrep.data.types import Sentence
from seqrep.errors import ConfigError
from seqrep.tasks import AUTO, DECODINGS, TOKENS, task_of

if TYPE_CHECKING:
    from seqrep.model.labeler import SequenceLabeler


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


def score_file(path: str | Path) -> dict[str, Any]:
    """Score a prediction file as conlleval does: CoNLL columns ``word ... gold predicted``.

    Each of the two tag columns is read alike: its scheme is detected on its own (IOB1, IOB2,
    BIOES/BILOU, IO, plain labels; prefixes in either case) and converted to IOB2, so an IOB1
    file (the original CoNLL-2003 layout) or BIOES predictions score as conlleval scores them.
    Predictions detected as IOB2 are scored as written, by seqeval's strict rule: an ``I-``
    that continues no span is in none. Plain labels (``PER``, ``O``) are read as runs (one
    span per run of a label, as IO), except that plain labels in both columns with no gold
    ``O`` are token tagging (accuracy, see :meth:`seqrep.tasks.TokenTask.score`).

    Returns:
        :func:`score`'s result plus ``sentences``; ``per_label`` support counts gold spans
        (conlleval's per-type count is of predicted spans).

    Raises:
        DataError: a column no scheme reads (plain labels mixed with prefixed tags, an empty
            label, two prefixes ...), naming the file, the line and the column.
    """
    from seqrep.data.conll import read_conll
    from seqrep.data.textfile import read_text, split_lines

    # the columns and lines are checked here; the tags are read below, each column alike
    sents = read_conll(path, tag_column=-2, scheme="TOKEN").sentences
    lines = split_lines(read_text(Path(path)))  # as read_conll counts lines (a lone CR too)
    rows = [[lines[s.meta["line"] - 1 + j].split() for j in range(len(s))] for s in sents]
    gold = [[r[-2] for r in rs] for rs in rows]
    pred = [[r[-1] for r in rs] for rs in rows]
    schemes = detect_scheme(gold), detect_scheme(pred)
    if schemes == ("TOKEN", "TOKEN") and not any(t in ("O", "o") for g in gold for t in g):
        for name, column in (("gold", gold), ("predicted", pred)):
            _read_column(column, name, path, sents, as_written=True)  # checks them
        return {**TOKENS.score(gold, pred), "sentences": len(sents)}
    result = score(_read_column(gold, "gold", path, sents, as_written=False),
                   _read_column(pred, "predicted", path, sents, as_written=True))
    return {**result, "sentences": len(sents)}


def _read_column(tags: list[list[str]], name: str, path: str | Path, sents: Sequence[Sentence],
                 as_written: bool) -> list[list[str]]:
    """One tag column of a prediction file as IOB2 (see :func:`score_file`); ``as_written``
    keeps IOB2 tags as they are (prefix case aside) instead of repairing them."""
    from seqrep.data.iob2 import to_iob2
    from seqrep.errors import DataError

    def line_of(i: int, j: int) -> int:
        return sents[i].meta["line"] + j

    try:
        scheme = detect_scheme(tags)
        if scheme == "TOKEN":
            to_iob2(tags, None, False, path, line_of)  # refuses plain labels mixed with tags
            tags, scheme = [[t if t in ("O", "o") else f"I-{t}" for t in s] for s in tags], "IO"
        iob2 = to_iob2(tags, scheme, False, path, line_of)[0]
    except DataError as err:
        where = f"{err.source}:{err.line}" if err.line is not None else err.source
        raise DataError(path, f"{name} column: {str(err).removeprefix(where + ': ')}",
                        err.line) from None
    if as_written and scheme == "IOB2":
        return [[_prefix_upper(t) for t in s] for s in tags]
    return iob2


def _prefix_upper(tag: str) -> str:
    prefix, label = split_tag(tag)
    return "O" if label is None else f"{prefix}-{label}"


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
        model_types = sorted(task_of(task).types(labels))
        raise ConfigError(f"{source or 'the dataset'} has labels the model does not know: "
                          f"{', '.join(unknown)} (model labels: {', '.join(model_types)}); "
                          f"map them with --label-map OLD=NEW")
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
    from seqrep.predict import predict_tags

    start = time.perf_counter()
    words = [s.words for s in sentences]
    docs = ([s.doc_id for s in sentences] if getattr(labeler.config, "context", "sentence")
            == "document" else None)
    chunk = max(batch_size * 8, 256) if progress else max(len(words), 1)
    pred: list[list[str]] = []
    for i, j in _chunks(len(words), chunk, docs):
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


def _chunks(n: int, size: int, docs: Sequence[Any] | None) -> list[tuple[int, int]]:
    """``(start, end)`` runs of about ``size`` sentences; with ``docs`` a run ends only where
    a document does, so document context sees whole documents whatever the chunking."""
    from seqrep.encode.document import documents

    groups = documents(docs) if docs is not None else [[i] for i in range(n)]
    out: list[tuple[int, int]] = []
    start = 0
    for group in groups:
        end = group[-1] + 1
        if end - start >= size:
            out.append((start, end))
            start = end
    if start < n:
        out.append((start, n))
    return out


# ---------------------------------------------------------------------------- from logits
def sharded_logits(labeler: SequenceLabeler, words: list, batch_size: int,
                   accelerator: object | None = None, docs: list | None = None) -> list[Any]:
    """``labeler.word_logits(words, docs=docs)``, each process computing every N-th
    document (with document context; else every N-th sentence), gathered back in input
    order on every process (no sentence lost or counted twice)."""
    world = getattr(accelerator, "num_processes", 1)
    if labeler.config.context != "document":
        docs = None
    if world == 1:
        return labeler.word_logits(words, batch_size, docs=docs)
    from accelerate.utils import gather_object

    rank = accelerator.process_index  # type: ignore[attr-defined]
    mine_idx = shard_indices(len(words), docs, rank, world)
    mine = labeler.word_logits([words[i] for i in mine_idx], batch_size,
                               docs=None if docs is None else [docs[i] for i in mine_idx])
    out: list[Any] = [None] * len(words)
    for idx, logits in gather_object([(mine_idx, mine)]):
        for i, x in zip(idx, logits):
            out[i] = x
    return out


def shard_indices(n: int, docs: list | None, rank: int, world: int) -> list[int]:
    """The sentence indices process ``rank`` of ``world`` computes: every ``world``-th
    sentence, or every ``world``-th document when ``docs`` is given (a document's sentences
    share rows, so they stay in one process)."""
    if docs is None:
        return list(range(rank, n, world))
    from seqrep.encode.document import documents

    return [i for group in documents(docs)[rank::world] for i in group]


def score_logits(logits: Sequence[Any], gold: Sequence[Sentence], labels: Sequence[str],
                 decoding: str, task: str = "spans") -> dict[str, Any]:
    """Score per-sentence logits (``(words, classes)`` each) decoded by ``decoding``."""
    from seqrep.decode import decode

    return score([s.tags for s in gold], [decode(x, labels, decoding)[0] for x in logits],
                 task)


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


def choose_decoding(scores: dict[str, dict[str, Any]], requested: str,
                    task: str = "spans") -> str:
    """The decoding a model keeps after validation: ``requested``, or with ``auto`` the one
    of the task's decodings with the highest F1 in ``scores`` (:func:`scores_by_decoding`),
    a tie going to the task's first (constrained for spans: unless greedy is strictly
    better); token tagging always greedy."""
    kind = task_of(task)
    if requested == AUTO:
        requested = max(kind.decodings, key=lambda d: scores[d.name]["f1"]).name
    return kind.decoding(requested)


def layer_scores(logits: Any, gold: Sequence[Sentence], labels: Sequence[str],
                 task: str = "spans") -> list[dict[str, Any]]:
    """Scores of probe heads, one per layer: ``logits`` is ``(words, layers, classes)`` over
    the words of ``gold`` in order. A probe is scored greedily (argmax per word, what greedy
    decoding picks) and in one batched argmax for all layers: probes select their epochs
    and the exit layer by it."""
    pred = logits.argmax(-1)  # (words, layers)
    sizes = [len(s) for s in gold]
    tags = [s.tags for s in gold]
    return [score(tags, [[labels[i] for i in p.tolist()] for p in pred[:, k].split(sizes)],
                  task) for k in range(pred.shape[1])]
