"""Prediction: tags for word lists, and spans with character offsets for raw text.

Raw text is cut into sentences and words by :mod:`seqrep.data.tokenize` (the same rule the
character-offset readers use), so every span's ``text[start:end]`` is exactly its ``text``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any

from seqrep.core.contexts import labeler_context
from seqrep.data.decode import decode
from seqrep.data.tasks import task_of
from seqrep.data.tokenize import split_sentences, split_words
from seqrep.encode import BATCH_SENTENCES
from seqrep.encode.document import text_documents
from seqrep.predict.labeler import Labeler


def predict_tags(labeler: Labeler, sentences: Sequence[Sequence[str]],
                 decoding: str | None = None, batch_size: int = BATCH_SENTENCES, *,
                 docs: Sequence[Any] | None = None) -> list[tuple[list[str], list[float]]]:
    """Tags and per-word probabilities for each word list.

    Args:
        labeler: a trained labeler.
        sentences: lists of words (an empty list gives an empty result).
        decoding: ``greedy`` or ``constrained``; default: the labeler's own setting.
        batch_size: sentences per forward pass.
        docs: each sentence's document id (read with ``context="document"``), or None
            (the default) for each sentence alone.
    """
    logits = labeler.word_logits(sentences, batch_size, docs=docs) if sentences else []
    return decode_logits(labeler, sentences, logits, decoding)


def decode_logits(labeler: Labeler, sentences: Sequence[Any], logits: Sequence[Any],
                  decoding: str | None = None) -> list[tuple[list[str], list[float]]]:
    """Tags and probabilities from per-sentence logits, decoded as the labeler decodes and
    written as its task writes them (:meth:`~seqrep.data.tasks.Task.written`: an ``I-`` that
    continues no span becomes ``O``, with ``O``'s probability), so that every output of a
    prediction, and the score of an evaluation, reads the same spans."""
    kind = task_of(labeler.config.task)
    method = kind.decoding(decoding or labeler.config.decoding)
    labels = labeler.config.labels
    out: list[tuple[list[str], list[float]]] = []
    for s, x in zip(sentences, logits):
        if not len(s):
            out.append(([], []))
            continue
        tags, probs = decode(x, labels, method)
        written = kind.written(tags)
        if written != tags:
            probs = _probabilities(x, labels, written, tags, probs)
        out.append((written, probs))
    return out


def _probabilities(logits: Any, labels: Sequence[str], written: list[str], decoded: list[str],
                   probs: list[float]) -> list[float]:
    """``probs`` with each rewritten word's probability that of the tag written for it."""
    import torch

    soft = torch.softmax(torch.as_tensor(logits).detach().float().cpu(), dim=-1)
    index = {tag: i for i, tag in enumerate(labels)}
    return [float(soft[i, index[w]]) if w != d and w in index else p
            for i, (w, d, p) in enumerate(zip(written, decoded, probs))]


def word_spans(tags: Sequence[str], task: str = "spans") -> list[tuple[int, int, str]]:
    """The spans of predicted tags, by the rule evaluation scores them: strict IOB2 for span
    labeling (an ``I-`` that continues no span belongs to none; :func:`decode_logits` writes
    it ``O``), one span per word for token tagging."""
    return task_of(task).spans(tags)


def _spans(tags: list[str], probs: list[float], offsets: Sequence[tuple[int, int]],
           text: str, task: str) -> list[dict[str, Any]]:
    out = []
    for s, e, label in word_spans(tags, task):
        start, end = offsets[s][0], offsets[e - 1][1]
        out.append({"start": start, "end": end, "label": label,
                    "score": round(sum(probs[s:e]) / (e - s), 4), "text": text[start:end],
                    "words": [s, e]})
    return out


def predict_text(labeler: Labeler, texts: Iterable[str], decoding: str | None = None,
                 batch_size: int = BATCH_SENTENCES, pretokenized: bool | Sequence[bool] = False,
                 docs: Sequence[Hashable | None] | None = None) -> list[dict[str, Any]]:
    """Label raw texts.

    Args:
        labeler: a trained labeler.
        texts: one document per entry; empty ones give empty results.
        decoding: see :func:`predict_tags`.
        batch_size: sentences per forward pass.
        pretokenized: each text is one sentence of whitespace-separated words (one flag for
            all texts, or one per text).
        docs: a document id per text (None: none): with ``context="document"``, consecutive
            texts with the same id are labeled as one document; each text is one anyway.

    Returns:
        One record per text: ``text``, ``sentences`` (each with ``start``, ``end``, ``words``
        and ``tags``) and ``spans`` (``start``, ``end``, ``label``, ``score``, ``text``), with
        character offsets into ``text``.
    """
    texts = list(texts)
    pre = [pretokenized] * len(texts) if isinstance(pretokenized, bool) else list(pretokenized)
    items = [(i, span, words) for i, text in enumerate(texts)
             for span, words in split_text(text, pre[i])]
    # the context reads them where its rows hold documents (else None: each sentence alone)
    in_docs = labeler_context(labeler).docs(text_documents([i for i, _, _ in items],
                                                           len(texts), docs))
    tagged = predict_tags(labeler, [[texts[i][s:e] for s, e in w] for i, _, w in items],
                          decoding, batch_size, docs=in_docs)
    return text_records(labeler, texts, items, tagged)


def text_records(labeler: Labeler, texts: Sequence[str],
                 items: Sequence[tuple[int, tuple[int, int], Sequence[tuple[int, int]]]],
                 tagged: Sequence[tuple[list[str], list[float]]]) -> list[dict[str, Any]]:
    """:func:`predict_text`'s records from its sentences' tags: ``items`` gives each
    sentence's text index, span and word offsets (as :func:`split_text` cuts them), in
    order; ``tagged``, its :func:`decode_logits` result. Shared with the server's batcher,
    which computes a batch's logits in one pass, so the two cannot disagree."""
    records: list[dict[str, Any]] = [{"text": t, "sentences": [], "spans": []} for t in texts]
    for (i, (a, b), words), (tags, probs) in zip(items, tagged):
        text = texts[i]
        records[i]["sentences"].append({"start": a, "end": b, "tags": tags,
                                        "words": [text[s:e] for s, e in words]})
        records[i]["spans"].extend(_spans(tags, probs, words, text, labeler.config.task))
    return records


def split_text(text: str, pretokenized: bool = False
               ) -> list[tuple[tuple[int, int], list[tuple[int, int]]]]:
    """The sentences :func:`predict_text` labels in ``text``: ``((start, end), word offsets)``
    per sentence with words (character offsets into ``text``)."""
    sents = [(0, len(text))] if pretokenized and text.strip() else split_sentences(text)
    out = []
    for a, b in sents:
        if pretokenized:
            words = _whitespace_words(text[a:b], a)
        else:
            words = [(a + s, a + e) for s, e in split_words(text[a:b])]
        if words:
            out.append(((a, b), words))
    return out


def _whitespace_words(text: str, base: int) -> list[tuple[int, int]]:
    out, pos = [], 0
    for word in text.split():
        start = text.index(word, pos)
        out.append((base + start, base + start + len(word)))
        pos = start + len(word)
    return out


def to_conll(record: dict[str, Any]) -> str:
    """A prediction record as CoNLL columns (word TAB tag, blank line between sentences)."""
    blocks = ["\n".join(f"{w}\t{t}" for w, t in zip(s["words"], s["tags"]))
              for s in record["sentences"]]
    return "".join(b + "\n\n" for b in blocks)
