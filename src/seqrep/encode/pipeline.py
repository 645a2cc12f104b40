"""The one path from sentences to model batches, for training and for every kind of inference.

:class:`Encoder` owns a tokenizer's word boundaries, the repetition layout and the padding::

    words --WordTokenizer--> subtoken ids --encode_sentence--> segments (k copies, windows)
          --length_batches--> index lists --collate--> Batch (B, T) (+ label ids)

The rows are the context's (:meth:`seqrep.core.contexts.Context.build_rows`: each sentence alone,
or with ``context="document"`` and the sentences' document ids, several sentences of a
document per row, :mod:`seqrep.encode.document`); everything after the rows is the same.

Training, evaluation, prediction, probes and the benchmark all call :meth:`Encoder.items`,
:meth:`Encoder.plan` and :meth:`Encoder.collate` (or :meth:`Encoder.batches`, the three in a
row), so their batches cannot drift apart.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

import torch

from seqrep.core.contexts import context_of
from seqrep.encode import BATCH_SENTENCES, BATCH_TOKENS
from seqrep.encode.align import WordTokenizer
from seqrep.encode.batch import Batch, collate, length_batches
from seqrep.encode.repeat import RepeatSpec, Segment, encode_sentence
from seqrep.encode.rows import Item
from seqrep.errors import ConfigError


class EncodeConfig(Protocol):
    """What the encoder reads of a :class:`~seqrep.model.labeler_config.LabelerConfig` (named
    structurally: the labeler config lives in the model package, above this one)."""

    model: str
    labels: list[str]
    repetitions: int
    subtoken: str
    read: str
    separator: str
    bos: str
    max_subtokens: int
    context: str
    context_tokens: int
    context_overlap: float
    context_separator: str
    padding_side: str

    def replace(self, **changes: Any) -> Any: ...


C = TypeVar("C", bound=EncodeConfig)

def repeat_spec(tokenizer: Any, words: WordTokenizer, config: EncodeConfig) -> RepeatSpec:
    """The repetition layout a labeler config asks for, in this tokenizer's ids."""
    prefix, suffix = list(words.prefix), list(words.suffix)
    if config.bos == "no":
        prefix, suffix = [], []
    elif (config.bos == "yes" and tokenizer.bos_token_id is not None
          and tokenizer.bos_token_id not in prefix):
        prefix = [tokenizer.bos_token_id] + prefix
    sep = separator_ids(tokenizer, config.separator, config)
    return RepeatSpec(config.repetitions, tuple(prefix), tuple(suffix), tuple(sep),
                      config.subtoken, config.read, config.max_subtokens)


def separator_ids(tokenizer: Any, value: str, config: EncodeConfig,
                  name: str = "separator") -> list[int]:
    """The ids of a separator setting: ``none`` (no ids), ``bos`` or a literal string (its
    ids without special tokens; a string the tokenizer reads as nothing gives none)."""
    if value == "none":
        return []
    if value == "bos":
        if tokenizer.bos_token_id is None:
            raise ConfigError(f"{name}='bos' but {config.model} has no BOS token")
        return [tokenizer.bos_token_id]
    return list(tokenizer(value, add_special_tokens=False)["input_ids"])


def context_separator_ids(tokenizer: Any, config: EncodeConfig) -> list[int]:
    """The ids put between the sentences of a document window. A literal separator the
    tokenizer reads as nothing (the default newline, for BERT's WordPiece, which drops
    whitespace) becomes the tokenizer's own separator token ([SEP]), so an encoder still
    sees where a sentence ends, as in a BERT sentence pair; ``none`` stays nothing."""
    ids = separator_ids(tokenizer, config.context_separator, config, "context_separator")
    if not ids and config.context_separator not in ("none", "bos") and \
            getattr(tokenizer, "sep_token_id", None) is not None:
        return [tokenizer.sep_token_id]
    return ids


def check_context_separator(size: int, config: EncodeConfig, spec: RepeatSpec) -> None:
    """Refuse a context separator of ``size`` ids that leaves no room in a window.

    The separator is glued before the first word of each sentence but a document's first,
    and that word must fit one copy of a window (``context_tokens``) and one word's bound
    (``max_subtokens``), both as cut to the model's positions; the separator plus one
    subtoken of the word must therefore fit the smaller. A longer one made the k copies
    outgrow the model's positions (an index error deep in the forward pass) or a window hold
    nothing but separator.

    Raises:
        ConfigError: naming ``context_separator``, its size and the limit.
    """
    window = min(config.context_tokens, spec.max_subtokens)
    if size and size >= window:
        raise ConfigError(
            f"context_separator: {size} subtokens in {config.model}'s tokenizer; expected at "
            f"most {window - 1}, so that it and a sentence's first word fit one copy of a "
            f"window ({window} subtokens: context_tokens={config.context_tokens}, "
            f"max_subtokens={spec.max_subtokens}, with {spec.copies} copies in the model's "
            f"positions)")


def fit_positions(config: C, spec: RepeatSpec, max_positions: int | None) -> C:
    """``config`` with its per-copy window (``max_subtokens``) cut so that ``k`` copies, the
    separators and the special tokens fit the model's ``max_positions`` (unchanged when they
    fit already, or when the model states no limit).

    Raises:
        ConfigError: not even 8 subtokens per copy fit (r too large for the model).
    """
    if not max_positions:
        return config
    fixed = len(spec.prefix) + len(spec.suffix) + (spec.copies - 1) * len(spec.separator)
    room = (int(max_positions) - fixed) // spec.copies
    if room < 8:
        raise ConfigError(f"repetitions={config.repetitions}: {spec.copies} copies of even 8 "
                          f"subtokens do not fit the {max_positions} positions of "
                          f"{config.model}; use a smaller r")
    changes: dict[str, int] = {}
    if config.max_subtokens > room:
        changes["max_subtokens"] = room
    if context_of(config.context).documents and config.context_tokens > room:
        changes["context_tokens"] = room
    return config.replace(**changes) if changes else config


class Encoder:
    """Sentences -> model rows -> padded batches for one tokenizer and labeler config.

    Args:
        tokenizer: the backbone's Hugging Face tokenizer.
        config: the labeler config (repetition, read, subtoken, BOS, separator, padding).
        pad_id: id put on padding (masked, so any valid id is correct).

    Safe to call from several threads (the word cache is guarded by a lock).
    """

    def __init__(self, tokenizer: Any, config: EncodeConfig, pad_id: int) -> None:
        self.words = WordTokenizer(tokenizer)
        self.spec = repeat_spec(tokenizer, self.words, config)
        # a word longer than a copy's window is cut to it, so no window outgrows the window
        self.words.max_word_subtokens = min(self.words.max_word_subtokens,
                                            self.spec.max_subtokens)
        self.pad_id = pad_id
        self.padding_side = config.padding_side
        self.label2id = {t: i for i, t in enumerate(config.labels)}
        self.context = context_of(config.context)
        self.context_tokens = config.context_tokens
        self.context_overlap = config.context_overlap
        # tokenized only when used: sentence context asks the tokenizer nothing new
        self.context_separator = tuple(context_separator_ids(tokenizer, config)
                                       if self.context.documents else ())
        check_context_separator(len(self.context_separator), config, self.spec)
        self._lock = threading.Lock()

    def word_ids(self, words: Sequence[str]) -> tuple[list[list[int]], list[int]]:
        """The subtoken ids of each word of one word list, and its leading space-only
        tokens (what a row builder lays out)."""
        with self._lock:
            return self.words(words), self.words.leads(words)

    def segments(self, words: Sequence[str]) -> list[Segment]:
        """The model rows of one sentence (several windows when it is long)."""
        ids, leads = self.word_ids(words)
        return encode_sentence(ids, self.spec, leads=leads)

    def items(self, sentences: Sequence[Sequence[str]],
              tags: Sequence[Sequence[str]] | None = None,
              docs: Sequence[Any] | None = None) -> list[Item]:
        """Every row of every sentence, with the label ids of the words it reads if ``tags``:
        the rows the context builds (:meth:`~seqrep.core.contexts.Context.build_rows`).

        ``docs`` (one document id per sentence, None for none) matters with document
        context only: runs of consecutive sentences of one document share rows (see
        :mod:`seqrep.encode.document`); without it every sentence is its own document.
        """
        return self.context.build_rows(self, sentences, tags, docs)

    def plan(self, items: Sequence[Item], batch_size: int, batch_tokens: int | None = None,
             shuffle: bool = False, seed: int = 0, sentences: bool = False
             ) -> list[list[int]]:
        """Index lists of length-sorted batches: at most ``batch_size`` rows (with
        ``sentences``, rows reading at most ``batch_size`` sentences together, each row
        counting the sentences it reads words of) and ``batch_tokens`` padded tokens each (see
        :func:`~seqrep.encode.batch.length_batches`)."""
        sizes = [len({s for s, _ in it.targets()}) or 1 for it in items] if sentences else None
        return length_batches([len(it.segment) for it in items], batch_size, shuffle=shuffle,
                              seed=seed, batch_tokens=batch_tokens, sizes=sizes)

    def collate(self, items: Sequence[Item]) -> Batch:
        """Pad ``items`` into one batch (with labels when every item has them)."""
        labels = [it.labels for it in items]
        return collate([it.segment for it in items], self.pad_id, self.padding_side,
                       None if any(x is None for x in labels) else labels)

    def batches(self, sentences: Sequence[Sequence[str]], batch_size: int = BATCH_SENTENCES,
                batch_tokens: int | None = None, docs: Sequence[Any] | None = None,
                items: Sequence[Item] | None = None) -> Iterator[tuple[Batch, list[Item]]]:
        """Inference batches over all rows of ``sentences``, with the items of each: at most
        ``batch_size`` sentences each, as in training (with document context a row labels
        several sentences and counts them all; a row alone may label more). ``items``: the
        rows of ``sentences`` already built (:meth:`items`), so none is encoded twice."""
        if items is None:
            items = self.items(sentences, docs=docs)
        for idx in self.plan(items, batch_size, batch_tokens, sentences=self.context.documents):
            members = [items[j] for j in idx]
            yield self.collate(members), members


def per_sentence(sentences: Sequence[Sequence[str]],
                 outputs: Iterable[tuple[torch.Tensor, Sequence[Item]]]) -> list[torch.Tensor]:
    """Reassemble per-batch ``(W, ...)`` word rows into one ``(words, ...)`` tensor per
    sentence, in input order (a sentence with no words gets an empty tensor).

    Args:
        sentences: the sentences the batches were built from.
        outputs: ``(rows, items)`` per batch: the rows of its words, in item order.
    """
    out: list[torch.Tensor | None] = [None] * len(sentences)
    for rows, items in outputs:
        k = 0
        for it in items:
            if it.places is None:  # one sentence's words: one slice
                words = it.segment.words
                if out[it.sentence] is None:
                    out[it.sentence] = rows.new_zeros((len(sentences[it.sentence]),)
                                                      + rows.shape[1:])
                out[it.sentence][list(words)] = rows[k : k + len(words)]
                k += len(words)
                continue
            for s, w in it.places:
                if out[s] is None:
                    out[s] = rows.new_zeros((len(sentences[s]),) + rows.shape[1:])
                out[s][w] = rows[k]
                k += 1
    shape = next((o.shape[1:] for o in out if o is not None), ())
    return [o if o is not None else torch.zeros((0, *shape)) for o in out]


class EncodesSentences:
    """What every labeler derives from its ``config`` and :class:`Encoder` (the PyTorch one
    and the ONNX Runtime one alike): label ids, the repetition layout, segments and batches."""

    config: Any
    encoder: Encoder

    @property
    def label2id(self) -> dict[str, int]:
        return {t: i for i, t in enumerate(self.config.labels)}

    @property
    def spec(self) -> RepeatSpec:
        """The repetition layout (k copies, what is read)."""
        return self.encoder.spec

    def encode(self, sentence: Sequence[str]) -> list[Segment]:
        """The segments (model rows) of one sentence."""
        return self.encoder.segments(sentence)

    def batches(self, sentences: Sequence[Sequence[str]], batch_size: int = BATCH_SENTENCES,
                batch_tokens: int | None = BATCH_TOKENS, docs: Sequence[Any] | None = None,
                items: Sequence[Item] | None = None) -> Iterator[tuple[Batch, list[Item]]]:
        """Length-sorted batches over all segments of ``sentences``: at most ``batch_size``
        rows and ``batch_tokens`` padded tokens each, so little compute goes to padding.
        ``docs``: document ids per sentence (document context, see :meth:`Encoder.items`);
        ``items``: the rows already built (then nothing is encoded again).

        Yields:
            ``(batch, items)``: the items (sentence index, segment) in row order.
        """
        return self.encoder.batches(sentences, batch_size, batch_tokens, docs, items)
