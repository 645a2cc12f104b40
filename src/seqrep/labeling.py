"""What a labeler's own methods do (:class:`seqrep.core.labeler_methods.LabelerMethods`): their
arguments checked here, in one line naming the argument, and the work done by the routes the
commands take, so ``labeler.predict`` prints what ``seqrep predict`` prints
(:func:`seqrep.predict.tagger.predict_text`) and ``labeler.evaluate`` scores what ``seqrep
evaluate`` scores (:func:`seqrep.evaluate.evaluate`, after the same label checks).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from seqrep.core.contexts import labeler_context
from seqrep.data.quote import cut
from seqrep.data.types import Corpus
from seqrep.encode import BATCH_SENTENCES
from seqrep.predict.labeler import Labeler
from seqrep.predict.tagger import predict_tags, predict_text, word_spans


def _shown(value: Any) -> str:
    return cut(repr(value))


def _sequence(value: Any, name: str, what: str) -> list[Any]:
    """``value`` as a list, where it is a list, tuple or other iterable of items (not a str,
    bytes or mapping); else a TypeError naming ``name``."""
    if isinstance(value, (str, bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} is {_shown(value)}; expected {what}")
    return list(value)


def _strings(items: Sequence[Any], name: str, what: str = "a str") -> None:
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise TypeError(f"{name}[{i}] is {_shown(item)}; expected {what}")


def _docs(docs: Any, count: int, of: str) -> list[Hashable | None] | None:
    """``docs`` checked: None, or one hashable id (or None) per item of ``of``."""
    if docs is None:
        return None
    ids = _sequence(docs, "docs", f"a list of document ids, one per item of {of}")
    if len(ids) != count:
        raise ValueError(f"docs has {len(ids)} ids for {count} {of}; expected one per item")
    for i, x in enumerate(ids):
        if not isinstance(x, Hashable):
            raise TypeError(f"docs[{i}] is {_shown(x)}; expected a str, an int or None")
    return ids


def _batch_size(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"batch_size is {_shown(value)}; expected an int")
    if value < 1:
        raise ValueError(f"batch_size is {value}; expected 1 or more")
    return value


def predict(labeler: Labeler, text_or_texts: str | Sequence[str], *,
            docs: Sequence[Hashable | None] | None = None, decoding: str | None = None,
            batch_size: int = BATCH_SENTENCES, pretokenized: bool | Sequence[bool] = False
            ) -> dict[str, Any] | list[dict[str, Any]]:
    """:meth:`~seqrep.core.labeler_methods.LabelerMethods.predict`."""
    one = isinstance(text_or_texts, str)
    texts = [text_or_texts] if one else _sequence(
        text_or_texts, "text_or_texts", "a str or a list of str")
    _strings(texts, "text_or_texts")
    ids = _docs(docs, len(texts), "texts") if not one or docs is not None else None
    if not isinstance(pretokenized, bool):
        flags = _sequence(pretokenized, "pretokenized", "a bool or one per text")
        if len(flags) != len(texts) or not all(isinstance(f, bool) for f in flags):
            raise ValueError(f"pretokenized is {_shown(pretokenized)}; expected a bool, or "
                             f"one bool per text ({len(texts)})")
        pretokenized = flags
    records = predict_text(labeler, texts, decoding, _batch_size(batch_size), pretokenized,
                           docs=ids) if texts else []
    return records[0] if one else records


def predict_words(labeler: Labeler, sentences: Sequence[Sequence[str]],
                  docs: Sequence[Hashable | None] | None = None, *,
                  decoding: str | None = None, batch_size: int = BATCH_SENTENCES
                  ) -> list[dict[str, Any]]:
    """:meth:`~seqrep.core.labeler_methods.LabelerMethods.predict_words`."""
    expected = "a list of sentences, each a list of words"
    sents = _sequence(sentences, "sentences", expected)
    words = []
    for i, s in enumerate(sents):
        words.append(_sequence(s, f"sentences[{i}]", "a list of words (for one sentence: "
                                                     "predict_words([words]))"))
        _strings(words[-1], f"sentences[{i}]")
    ids = _docs(docs, len(words), "sentences")
    # the context reads the ids where its rows hold documents (else each sentence alone)
    in_docs = labeler_context(labeler).docs(ids) if ids is not None else None
    tagged = predict_tags(labeler, words, decoding, _batch_size(batch_size), docs=in_docs)
    return [{"words": w, "tags": tags, "spans": _word_spans(w, tags, probs, labeler)}
            for w, (tags, probs) in zip(words, tagged)]


def _word_spans(words: list[str], tags: list[str], probs: list[float],
                labeler: Labeler) -> list[dict[str, Any]]:
    """A sentence's spans as :func:`~seqrep.predict.tagger.predict_text` writes them, by word."""
    return [{"label": label, "score": round(sum(probs[s:e]) / (e - s), 4),
             "text": " ".join(words[s:e]), "words": [s, e]}
            for s, e, label in word_spans(tags, labeler.config.task)]


def evaluate(labeler: Labeler, dataset: Any, split: str | None = None, *,
             decoding: str | None = None, batch_size: int = BATCH_SENTENCES,
             label_map: dict[str, str] | None = None, **reader: Any) -> dict[str, Any]:
    """:meth:`~seqrep.core.labeler_methods.LabelerMethods.evaluate`: the sentences of ``dataset``
    checked and scored as ``seqrep evaluate`` checks and scores them."""
    from seqrep.evaluate import check_scored_labels
    from seqrep.evaluate import evaluate as run_eval
    from seqrep.model.device import ran_on

    corpus, name = _corpus(dataset, split, reader)
    if label_map is not None and not isinstance(label_map, Mapping):
        raise TypeError(f"label_map is {_shown(label_map)}; expected a dict OLD -> NEW")
    gold = check_scored_labels([s for s in corpus.sentences if len(s)], labeler.config.labels,
                               name, dict(label_map or {}), labeler.config.task)
    result = run_eval(labeler, gold, decoding, _batch_size(batch_size))
    result["ran_on"] = ran_on(labeler)
    return result


def _corpus(dataset: Any, split: str | None, reader: dict[str, Any]) -> tuple[Corpus, str]:
    """``dataset`` read as ``seqrep evaluate --dataset`` reads it (a name, folder or file:
    ``split`` default test, or the whole of a file), or as ``train_labeler`` reads sentences
    in memory; with the name its label checks give."""
    from seqrep.data import load_corpus
    from seqrep.data.datasets import holds_one_split
    from seqrep.data.hf import is_dataset

    fmt = reader.pop("format", None)
    if isinstance(dataset, (str, Path)):
        if split is None:
            split = "train" if holds_one_split(dataset) else "test"
        corpus = load_corpus(dataset, split, fmt, **reader)
        return corpus, corpus.name or str(dataset)
    if is_dataset(dataset):
        corpus = load_corpus(dataset, split or "train", fmt, **reader)
        return corpus, corpus.name or "the dataset"
    if split is not None or fmt is not None:
        raise ValueError(f"{'split' if split is not None else 'format'}= applies to a dataset "
                         "named by name or path; dataset holds sentences in memory")
    if isinstance(dataset, Corpus):
        return dataset, dataset.name or "the dataset"
    from seqrep.train.fit import corpus_file

    items = _sequence(dataset, "dataset", "a dataset name or path, a datasets.Dataset, a "
                                          "Corpus, or a list of sentences")
    return load_corpus(corpus_file(items, "dataset"), format="jsonl", **reader), "the dataset"
