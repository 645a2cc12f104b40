"""The sentences a run uses: its training, validation and test splits, and their tag set.

:func:`load_data` reads the splits a :class:`~seqrep.config.TrainConfig` names (a dataset
name, a file, or a file per split), takes the fixed random subsets it asks for, and drops empty
sentences. :func:`tag_inventory` is the model's tag set as found in the data.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seqrep.data.types import Corpus, Sentence

if TYPE_CHECKING:
    from seqrep.config import TrainConfig


@dataclass
class TrainData:
    """The sentences a run uses."""

    train: list[Sentence]
    eval: list[Sentence]
    test: list[Sentence] = field(default_factory=list)


def load_data(cfg: TrainConfig, reader_options: dict[str, Any] | None = None) -> TrainData:
    """Read the configured splits, subsampled with ``subset_seed`` if asked.

    A split setting may also be a path to a file of its own. When ``dataset`` is a single
    file (one split), a random 10 % of it becomes the validation split, and there is no test
    split unless ``test_split`` names a file.
    """
    from seqrep.data import load_corpus

    single_file = Path(cfg.dataset).is_file()
    opts = reader_options or {}

    def read(split: str) -> list[Sentence]:
        if Path(split).is_file():
            corpus: Corpus = load_corpus(split, "train", cfg.format, **opts)
        else:
            corpus = load_corpus(cfg.dataset, split, None if not single_file else cfg.format,
                                 **opts)
        return [s for s in corpus.sentences if len(s)]

    def subset(sents: list[Sentence], limit: int | None) -> list[Sentence]:
        if limit is None or limit >= len(sents):
            return sents
        keep = sorted(random.Random(cfg.subset_seed).sample(range(len(sents)), limit))
        return [sents[i] for i in keep]

    train = read(cfg.train_split)
    if single_file and not Path(cfg.eval_split).is_file():
        rng = random.Random(cfg.subset_seed)
        held = set(rng.sample(range(len(train)), max(1, len(train) // 10)))
        evals = [s for i, s in enumerate(train) if i in held]
        train = [s for i, s in enumerate(train) if i not in held]
    else:
        evals = read(cfg.eval_split)
    test: list[Sentence] = []
    if cfg.test_split and (not single_file or Path(cfg.test_split).is_file()):
        test = read(cfg.test_split)[: cfg.max_test_sentences]
    return TrainData(subset(train, cfg.max_train_sentences),
                     subset(evals, cfg.max_eval_sentences), test)


def tag_inventory(sentences: list[Sentence]) -> list[str]:
    """``O`` then ``B-X``, ``I-X`` for every span label X seen in training, sorted."""
    types = sorted({t[2:] for s in sentences for t in s.tags if t != "O"})
    return ["O"] + [f"{p}-{x}" for x in types for p in ("B", "I")]
