"""The one path from sentences to model batches, for training and for every kind of inference.

:class:`Encoder` owns a tokenizer's word boundaries, the repetition layout and the padding::

    words --WordTokenizer--> subtoken ids --encode_sentence--> segments (k copies, windows)
          --length_batches--> index lists --collate--> Batch (B, T) (+ label ids)

Training, evaluation, prediction, probes and the benchmark all call :meth:`Encoder.items`,
:meth:`Encoder.plan` and :meth:`Encoder.collate` (or :meth:`Encoder.batches`, the three in a
row), so their batches cannot drift apart.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from seqrep.encode.align import WordTokenizer, label_ids
from seqrep.encode.batch import MAX_TOKENS, Batch, collate, length_batches
from seqrep.encode.repeat import RepeatSpec, Segment, encode_sentence
from seqrep.errors import ConfigError

if TYPE_CHECKING:
    from seqrep.config import LabelerConfig


@dataclass(frozen=True)
class Item:
    """One model row of one sentence: its segment and, when training, the words' label ids."""

    sentence: int
    segment: Segment
    labels: tuple[int, ...] | None = None


def repeat_spec(tokenizer: Any, words: WordTokenizer, config: LabelerConfig) -> RepeatSpec:
    """The repetition layout a labeler config asks for, in this tokenizer's ids."""
    prefix, suffix = list(words.prefix), list(words.suffix)
    if config.bos == "no":
        prefix, suffix = [], []
    elif (config.bos == "yes" and tokenizer.bos_token_id is not None
          and tokenizer.bos_token_id not in prefix):
        prefix = [tokenizer.bos_token_id] + prefix
    if config.separator == "none":
        sep: list[int] = []
    elif config.separator == "bos":
        if tokenizer.bos_token_id is None:
            raise ConfigError(f"separator='bos' but {config.model} has no BOS token")
        sep = [tokenizer.bos_token_id]
    else:
        sep = tokenizer(config.separator, add_special_tokens=False)["input_ids"]
    return RepeatSpec(config.repetitions, tuple(prefix), tuple(suffix), tuple(sep),
                      config.subtoken, config.read, config.max_subtokens)


def fit_positions(config: LabelerConfig, spec: RepeatSpec, max_positions: int | None
                  ) -> LabelerConfig:
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
    return config if config.max_subtokens <= room else config.replace(max_subtokens=room)


class Encoder:
    """Sentences -> model rows -> padded batches for one tokenizer and labeler config.

    Args:
        tokenizer: the backbone's Hugging Face tokenizer.
        config: the labeler config (repetition, read, subtoken, BOS, separator, padding).
        pad_id: id put on padding (masked, so any valid id is correct).

    Safe to call from several threads (the word cache is guarded by a lock).
    """

    def __init__(self, tokenizer: Any, config: LabelerConfig, pad_id: int) -> None:
        self.words = WordTokenizer(tokenizer)
        self.spec = repeat_spec(tokenizer, self.words, config)
        # a word longer than a copy's window is cut to it, so no window outgrows the window
        self.words.max_word_subtokens = min(self.words.max_word_subtokens,
                                            self.spec.max_subtokens)
        self.pad_id = pad_id
        self.padding_side = config.padding_side
        self.label2id = {t: i for i, t in enumerate(config.labels)}
        self._lock = threading.Lock()

    def segments(self, words: Sequence[str]) -> list[Segment]:
        """The model rows of one sentence (several windows when it is long)."""
        with self._lock:
            ids, leads = self.words(words), self.words.leads(words)
        return encode_sentence(ids, self.spec, leads=leads)

    def items(self, sentences: Sequence[Sequence[str]],
              tags: Sequence[Sequence[str]] | None = None) -> list[Item]:
        """Every row of every sentence, with the label ids of the words it owns if ``tags``."""
        out = []
        for i, words in enumerate(sentences):
            ids = label_ids(tags[i], self.label2id) if tags is not None else None
            out += [Item(i, seg, None if ids is None else tuple(ids[w] for w in seg.words))
                    for seg in self.segments(words)]
        return out

    def plan(self, items: Sequence[Item], batch_size: int, max_tokens: int | None = None,
             shuffle: bool = False, seed: int = 0) -> list[list[int]]:
        """Index lists of length-sorted batches: at most ``batch_size`` rows and
        ``max_tokens`` padded tokens each (see :func:`~seqrep.encode.batch.length_batches`)."""
        return length_batches([len(it.segment) for it in items], batch_size, shuffle=shuffle,
                              seed=seed, max_tokens=max_tokens)

    def collate(self, items: Sequence[Item]) -> Batch:
        """Pad ``items`` into one batch (with labels when every item has them)."""
        labels = [it.labels for it in items]
        return collate([it.segment for it in items], self.pad_id, self.padding_side,
                       None if any(x is None for x in labels) else labels)

    def batches(self, sentences: Sequence[Sequence[str]], batch_size: int = 32,
                max_tokens: int | None = None) -> Iterator[tuple[Batch, list[Item]]]:
        """Inference batches over all rows of ``sentences``, with the items of each."""
        items = self.items(sentences)
        for idx in self.plan(items, batch_size, max_tokens):
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
            words = it.segment.words
            if out[it.sentence] is None:
                out[it.sentence] = rows.new_zeros((len(sentences[it.sentence]),)
                                                  + rows.shape[1:])
            out[it.sentence][list(words)] = rows[k : k + len(words)]
            k += len(words)
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

    def batches(self, sentences: Sequence[Sequence[str]], batch_size: int = 32,
                max_tokens: int | None = MAX_TOKENS) -> Iterator[tuple[Batch, list[Item]]]:
        """Length-sorted batches over all segments of ``sentences``: at most ``batch_size``
        rows and ``max_tokens`` padded tokens each, so little compute goes to padding.

        Yields:
            ``(batch, items)``: the items (sentence index, segment) in row order.
        """
        return self.encoder.batches(sentences, batch_size, max_tokens)
