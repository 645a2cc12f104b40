"""The sentences a run uses: its training, validation and test splits, and their tag set.

:func:`load_data` reads the splits a :class:`~seqrep.config.TrainConfig` names (a dataset
name, a file, or a file per split), takes the fixed random subsets it asks for, and drops empty
sentences. What a task makes of them (its classes, its gold tags) is asked of the task object
(:mod:`seqrep.data.tasks`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Protocol

from seqrep.core.contexts import context_of
from seqrep.data.types import Corpus, Sentence
from seqrep.encode.document import documents as group_documents
from seqrep.errors import ConfigError, DataError


class SplitsConfig(Protocol):
    """What :func:`load_data` reads of a :class:`~seqrep.config.TrainConfig` (named
    structurally: the config sits above this package, whose tag schemes its task table
    uses)."""

    dataset: str
    format: str | None
    train_split: str
    eval_split: str
    test_split: str | None
    max_train_sentences: int | None
    max_eval_sentences: int | None
    max_test_sentences: int | None
    subset_seed: int
    subset_unit: str


@dataclass
class TrainData:
    """The sentences a run uses."""

    train: list[Sentence]
    eval: list[Sentence]
    test: list[Sentence] = field(default_factory=list)
    validation_source: str = "the validation split"


def _check_split(value: str, option: str, is_file: bool) -> None:
    """A split setting is a split name or an existing file (``is_file``: what
    :func:`~seqrep.data.datasets.holds_one_split` said of it); anything else is a typo."""
    from seqrep.data.datasets import SPLIT_ALIASES, SPLITS

    if value in SPLITS or value in SPLIT_ALIASES or is_file:
        return
    raise ConfigError(f"{option}={value!r} is neither a split name ({', '.join(SPLITS)}, "
                      f"{', '.join(SPLIT_ALIASES)}) nor an existing file")


def load_data(cfg: SplitsConfig, reader_options: dict[str, Any] | None = None) -> TrainData:
    """Read the configured splits, subsampled with ``subset_seed`` if asked.

    A split setting may also be a path to a file of its own. When ``dataset`` is a single
    file (one split), a random 10 % of it becomes the validation split, and there is no test
    split unless ``test_split`` names a file.
    """
    from seqrep.data import datasets, load_corpus

    # whether the dataset and each split setting is one split of its own (a file): asked of
    # the file system once each, the answers passed on
    one = {s: datasets.holds_one_split(s) for s in dict.fromkeys(
        (cfg.dataset, cfg.train_split, cfg.eval_split, *[cfg.test_split] * bool(cfg.test_split)))}
    _check_split(cfg.train_split, "train_split", one[cfg.train_split])
    _check_split(cfg.eval_split, "eval_split", one[cfg.eval_split])
    if cfg.test_split:
        _check_split(cfg.test_split, "test_split", one[cfg.test_split])
    single_file = one[cfg.dataset]
    opts = reader_options or {}

    def read(split: str) -> list[Sentence]:
        if one[split]:
            corpus: Corpus = load_corpus(split, "train", cfg.format, **opts)
        else:
            corpus = load_corpus(cfg.dataset, split, None if not single_file else cfg.format,
                                 **opts)
        say_notes(corpus)
        return corpus.sentences_with_words()

    def subset(sents: list[Sentence], limit: int | None) -> list[Sentence]:
        if limit is None or limit >= len(sents):
            return sents
        keep = pick(sents, limit, cfg.subset_unit, random.Random(cfg.subset_seed))
        return [sents[i] for i in keep]

    train = read(cfg.train_split)
    source = f"the {cfg.eval_split} split"
    if one[cfg.eval_split]:
        source = f"the file {cfg.eval_split}"
    if single_file and not one[cfg.eval_split]:
        if len(train) < 2:
            raise DataError(cfg.dataset, "one sentence cannot be split into training and "
                                         "validation; give a validation file")
        held = set(pick(train, max(1, len(train) // 10), cfg.subset_unit,
                        random.Random(cfg.subset_seed)))
        evals = [s for i, s in enumerate(train) if i in held]
        train = [s for i, s in enumerate(train) if i not in held]
        source = (f"{len(evals)} sentences (10 %) carved from the training file with "
                  f"subset_seed {cfg.subset_seed}")
    else:
        evals = read(cfg.eval_split)
    test: list[Sentence] = []
    if cfg.test_split and (not single_file or one[cfg.test_split]):
        test = read(cfg.test_split)
        if cfg.max_test_sentences is not None and cfg.max_test_sentences < len(test):
            test = [test[i] for i in pick(test, cfg.max_test_sentences, cfg.subset_unit)]
    used = subset(evals, cfg.max_eval_sentences)
    if len(used) < len(evals):  # say what validates, not only where it came from
        source += f", {len(used)} of them used (max_eval_sentences)"
    return TrainData(subset(train, cfg.max_train_sentences), used, test, source)


def documents(sents: list[Sentence]) -> list[list[int]]:
    """Sentence indices grouped into documents: runs of consecutive sentences with the same
    ``doc_id``; a sentence without one is a document of its own (the grouping the encoder
    reads, :func:`seqrep.encode.document.documents`, of the sentences' ids)."""
    return group_documents([s.doc_id for s in sents])


def pick(sents: list[Sentence], limit: int, unit: str = "sentence",
         rng: random.Random | None = None) -> list[int]:
    """The sorted indices of a subset of about ``limit`` sentences.

    ``unit="sentence"``: ``limit`` sentences, drawn by ``rng`` (the first ``limit`` without
    one). ``unit="document"``: whole documents, in an order drawn by ``rng`` (file order
    without one), until the count reaches ``limit``; the last document is taken whole, so the
    count may pass ``limit`` by less than that document. A corpus whose documents are all
    single sentences (no document ids) gets exactly the sentence unit's choice.
    """
    groups = documents(sents) if context_of(unit).documents else []
    if all(len(g) == 1 for g in groups):  # sentence by sentence (also: no documents)
        if rng is None:
            return list(range(min(limit, len(sents))))
        return sorted(rng.sample(range(len(sents)), min(limit, len(sents))))
    order = list(range(len(groups)))
    if rng is not None:
        rng.shuffle(order)
    keep: list[int] = []
    for g in order:
        if len(keep) >= limit:
            break
        keep += groups[g]
    return sorted(keep)


def say_notes(corpus: Corpus) -> None:
    """Print the corpus's notes line (:meth:`Corpus.notes_line`) on stderr, once per launch
    (the main process of a distributed one): the gold a run trains or scores on is not the
    file as written, and the user sees it."""
    import os
    import sys

    line = corpus.notes_line()
    if line and os.environ.get("RANK", "0") == "0":
        print(line, file=sys.stderr)
