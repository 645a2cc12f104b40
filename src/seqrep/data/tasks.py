"""Tasks and decodings as tables of small objects: what the rest of seqrep asks of them.

A task is what a labeler's tags mean and how they are scored:

- ``spans``: IOB2 tags (``O``, ``B-X``, ``I-X``), scored by seqeval's strict IOB2 micro F1
  over spans (NER, slots, chunks);
- ``tokens``: one plain tag per word (POS), scored by accuracy over words.

A decoding turns per-word log-probabilities into tags (:meth:`Decoding.decode`): ``greedy``
(argmax per word) or ``constrained`` (Viterbi over valid IOB2 transitions); the algorithms
are in :mod:`seqrep.data.decode`, named by reference. Training may ask for ``auto``:
constrained unless greedy scores clearly higher on validation
(:func:`seqrep.evaluate.choose_decoding`). Predicted tags are written as the task reads them
(:meth:`Task.written`), so every output of a prediction holds the spans evaluation scores.

Both families are :class:`~seqrep.core.table.Table` s: callers look an object up by the name a
config stores (:func:`task_of`, :data:`DECODINGS`) and ask it; adding a decoding is one entry
(``DECODINGS.register(Decoding(name, help, function))``) and its function, from inside seqrep
or outside it. Light on purpose: the configs validate against these tables, so nothing here
imports torch; seqeval is imported when a span score is computed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from seqrep.core.table import AUTO, Table, resolve
from seqrep.data.tags import spans_to_tags, strict_spans, tags_to_spans
from seqrep.errors import ConfigError

if TYPE_CHECKING:
    from seqrep.data.types import Sentence

# AUTO, a config's "decide from the data": the task from the tags, the decoding on validation


# ---------------------------------------------------------------------------- decodings
@dataclass(frozen=True)
class Decoding:
    """One way from per-word logits to tags.

    Attributes:
        name: the ``decoding`` setting's value.
        help: what it does, as help texts say.
        algorithm: ``(log_probs (n, L) tensor, labels) -> n tag ids``, or its
            ``"module:function"`` reference, imported on first use (the algorithms need
            torch; this table must not).
    """

    name: str
    help: str
    algorithm: str | Callable[[Any, Sequence[str]], list[int]]

    def decode(self, log_probs: Any, labels: Sequence[str]) -> list[int]:
        """The tag ids of one sentence's ``(n, L)`` per-word log-probabilities (a CPU float
        tensor), ``labels`` naming the L classes."""
        return list(resolve(self.algorithm)(log_probs, labels))

    def __repr__(self) -> str:
        return f"<decoding {self.name}>"


GREEDY = Decoding("greedy", "argmax per word", "seqrep.data.decode:greedy")
CONSTRAINED = Decoding("constrained", "Viterbi over valid IOB2 transitions",
                       "seqrep.data.decode:constrained")
DECODINGS: Table[Decoding] = Table("decoding", (GREEDY, CONSTRAINED))


# ---------------------------------------------------------------------------- tasks
class Task:
    """What callers ask of a task; one instance per task in :data:`TASKS`."""

    name: str
    help: str  #: what it is, as help texts say
    unit: str  #: what one gold occurrence of a label is, in messages: span or word
    metric: str  #: the headline score's name in summaries
    decodings: tuple[Decoding, ...]  #: those that apply, preferred first (wins a tie)

    def gold(self, tags: Iterable[str]) -> tuple[str, ...]:
        """Gold tags as readers give them (IOB2) written the way this task scores them."""
        return tuple(tags)

    def inventory(self, sentences: Iterable[Sentence]) -> list[str]:
        """The model's classes as found in ``sentences``, sorted."""
        raise NotImplementedError

    def type_name(self, tag: str) -> str:
        """A (non-``O``) tag's label type: what messages list and users map."""
        return tag

    def unit_tag(self, type_name: str) -> str:
        """The tag that marks one occurrence (a span's start, a word) of a label type."""
        return type_name

    def types(self, tags: Iterable[str]) -> set[str]:
        """The label types among ``tags`` (``O`` is none)."""
        return {self.type_name(t) for t in tags if t != "O"}

    def decoding(self, requested: str) -> str:
        """The decoding used when ``requested`` is asked for: the task's only one where it
        has one (token tagging: greedy, there are no transitions to constrain), else
        ``requested`` itself (which :data:`DECODINGS` checks)."""
        return self.decodings[0].name if len(self.decodings) == 1 else requested

    def check_labels(self, labels: Sequence[str]) -> None:
        """Refuse a class list this task cannot use (ConfigError)."""

    def score(self, gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]
              ) -> dict[str, Any]:
        """Scores of predicted against gold tag sequences (fractions 0..1): ``precision``,
        ``recall``, ``f1`` (micro) and ``per_label`` (``{label: {precision, recall, f1,
        support}}``), plus this task's own keys."""
        raise NotImplementedError

    def counts(self, result: dict[str, Any]) -> dict[str, Any]:
        """The entries of a :meth:`score` result a training log records beside the F1."""
        return {}

    def spans(self, tags: Sequence[str]) -> list[tuple[int, int, str]]:
        """The ``(start, end, label)`` word spans of predicted tags (``end`` exclusive), by the
        rule evaluation scores them."""
        raise NotImplementedError

    def written(self, tags: Sequence[str]) -> list[str]:
        """Predicted tags as outputs write them: tags whose spans every reader finds alike,
        and are exactly :meth:`spans` (token tagging: as they are)."""
        return list(tags)

    def __repr__(self) -> str:
        return f"<task {self.name}>"


class SpanTask(Task):
    """Span labeling: IOB2 tags, seqeval strict IOB2 scores, Viterbi-constrained decoding."""

    name, unit, metric = "spans", "span", "F1"
    help = "IOB2 spans (NER, slots, chunks), scored by span F1"
    decodings = (CONSTRAINED, GREEDY)

    def inventory(self, sentences: Iterable[Sentence]) -> list[str]:
        """``O`` then ``B-X``, ``I-X`` for every span label X."""
        types = sorted({t[2:] for s in sentences for t in s.tags if t != "O"})
        return ["O"] + [f"{p}-{x}" for x in types for p in ("B", "I")]

    def type_name(self, tag: str) -> str:
        return tag[2:]

    def unit_tag(self, type_name: str) -> str:
        return f"B-{type_name}"

    def check_labels(self, labels: Sequence[str]) -> None:
        if labels and labels[0] != "O" and "O" in labels:
            raise ConfigError("labels must list 'O' first")

    def score(self, gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]
              ) -> dict[str, Any]:
        """seqeval strict IOB2, plus ``predicted_spans`` and ``gold_spans`` (spans as strict
        IOB2 reads them: an ``I-`` that continues no span is in none)."""
        from seqeval.metrics import classification_report, f1_score, precision_score, recall_score
        from seqeval.scheme import IOB2

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

    def counts(self, result: dict[str, Any]) -> dict[str, Any]:
        return {"predicted_spans": result["predicted_spans"],
                "gold_spans": result["gold_spans"]}

    def spans(self, tags: Sequence[str]) -> list[tuple[int, int, str]]:
        """Strict IOB2: an ``I-`` that continues no span belongs to none."""
        return strict_spans(tags)

    def written(self, tags: Sequence[str]) -> list[str]:
        """The spans evaluation scores (strict IOB2) as clean IOB2: an ``I-`` that continues
        no span (greedy decoding's) is written ``O``. Left as it was, conlleval and seqeval's
        default mode would start a span there that the JSON spans and the score do not have;
        written ``O``, JSON spans, CoNLL columns and the F1 all read one set of spans. Tags
        that are not IOB2 (a labeler given plain labels) stay as they are."""
        if not all(t == "O" or t[:2] in ("B-", "I-") for t in tags):
            return list(tags)
        return spans_to_tags(strict_spans(tags), len(tags), "IOB2")


class TokenTask(Task):
    """Token tagging: one plain tag per word, accuracy, greedy decoding only."""

    name, unit, metric = "tokens", "word", "accuracy"
    help = "one plain tag per word (POS), scored by accuracy"
    decodings = (GREEDY,)

    def gold(self, tags: Iterable[str]) -> tuple[str, ...]:
        """Plain tags: ``B-NOUN`` -> ``NOUN`` (readers store a plain tag X as ``B-X``)."""
        return tuple(t[2:] if t[:2] in ("B-", "I-") else t for t in tags)

    def inventory(self, sentences: Iterable[Sentence]) -> list[str]:
        """Every plain tag seen."""
        return sorted({t for s in sentences for t in self.gold(s.tags)})

    def score(self, gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]
              ) -> dict[str, Any]:
        """``accuracy`` over words (= micro precision, recall and F1, since every word has one
        tag), per-tag precision, recall and F1 over words, and ``words``."""
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

    def spans(self, tags: Sequence[str]) -> list[tuple[int, int, str]]:
        """One span per word that is not ``O``."""
        return tags_to_spans(tags, "TOKEN")[0]


SPANS, TOKENS = SpanTask(), TokenTask()


def unknown_labels_message(source: str, unknown: Iterable[str], labels: Sequence[str],
                           task: str | Task = "spans") -> str:
    """The error for gold ``unknown`` tags a model with ``labels`` does not know, saying what
    ``--label-map OLD=NEW`` maps: label names (``PERSON=PER``), never the ``B-``/``I-`` tags
    the gold is listed in, with an example pairing an unknown name with the model's closest
    (one that starts the other, else the most alike)."""
    import difflib

    kind = task_of(task)
    tags = sorted(set(unknown))
    names, known = sorted(kind.types(tags)), sorted(kind.types(labels))
    what = "map them" if names == tags else "map label names, not B-/I- tags,"
    example = ""

    def prefix(a: str, b: str) -> bool:  # PER of PERSON; not IN of INTJ (too short to tell)
        short, long = sorted((a, b), key=len)
        return len(short) >= 3 and long.startswith(short)

    if names and known:
        old, new = max(((u, m) for u in names for m in known), key=lambda pair: (
            prefix(*pair), difflib.SequenceMatcher(None, *pair).ratio()))
        if prefix(old, new) or difflib.SequenceMatcher(None, old, new).ratio() >= 0.75:
            example = f", e.g. --label-map {old}={new}"
        else:  # no model label looks like any of them: no pairing is guessed
            example = f", e.g. --label-map {names[0]}=NEW with NEW one of the model labels"
    return (f"{source or 'the dataset'} has labels the model does not know: "
            f"{', '.join(tags)} (model labels: {', '.join(known)}); {what} with "
            f"--label-map OLD=NEW{example}")


# ``auto`` is resolved from the training data (:func:`resolve_task`); a labeler built from
# given labels without training keeps it and is read as span labeling, as its config checks
# its labels
TASKS: Table[Task] = Table("task", (SPANS, TOKENS), aliases={AUTO: SPANS.name})
task_of = TASKS.of  # the task a config names (a task object is returned as it is)


def resolve_task(name: str, sentences: Sequence[Sentence]) -> Task:
    """The task a ``task`` setting means for training data: ``auto`` is ``tokens`` when every
    word has its own plain tag (readers store a plain tag X as ``B-X``: no word is ``O`` or
    ``I-``), as in POS tagging, else ``spans``."""
    if name == TOKENS.name:  # readers store a plain tag X as B-X: an I- tag is a span's
        inside = next((t for s in sentences for t in s.tags if t.startswith("I-")), None)
        if inside is not None:
            raise ConfigError(f"--task tokens (task='tokens'), but the training data has span "
                              f"tags ({inside}: IOB tags); pass --task spans (or leave the "
                              "task auto) to label spans")
    if name != AUTO:
        return task_of(name)
    plain = all(t.startswith("B-") for s in sentences for t in s.tags)
    return TOKENS if plain and any(len(s) for s in sentences) else SPANS
