"""Train a labeler from Python in one call, on data in memory or named as on the command line.

:func:`train_labeler` takes a corpus wherever ``seqrep train`` takes a dataset name or a
file: a :class:`~seqrep.data.types.Corpus`, a list of :class:`~seqrep.data.types.Sentence`,
or lists of words with their tags. Data in memory is written once, by the SHA-256 of its
content, as a JSON Lines file under ``SEQREP_CACHE/corpora`` (default
``~/.cache/seqrep/corpora``), so the run folder's ``run.json`` names a file that holds exactly
what was trained on, ``--resume`` finds it again, and the tags go through the same scheme
detection, IOB2 conversion and checks as a file's.

>>> from seqrep import train_labeler
>>> labeler, metrics = train_labeler(
...     [(["Ada", "Lovelace", "wrote", "."], ["B-PER", "I-PER", "O", "O"])] * 20,
...     model="smollm2-135m", exit_layer=6, output="runs/mine")  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seqrep.data.quote import cut
from seqrep.data.types import Corpus, Sentence
from seqrep.errors import ConfigError, DataError
from seqrep.fileio import write_text

if TYPE_CHECKING:
    from seqrep.model.labeler import SequenceLabeler

# what passes for a split: a dataset name or file path, or sentences in memory (a Corpus, a
# list, or a datasets.Dataset / DatasetDict)
CorpusLike = str | Path | Corpus | Sequence[Any]


def _record(item: Any, where: str) -> dict[str, Any]:
    """One sentence in memory as a JSONL record ``{"tokens", "tags"[, "doc_id"]}``."""
    if isinstance(item, Sentence):
        words, tags, doc = item.words, item.tags, item.doc_id
    elif isinstance(item, Mapping):
        words = item.get("tokens", item.get("words"))
        tags, doc = item.get("tags"), item.get("doc_id")
    elif isinstance(item, Sequence) and not isinstance(item, str) and len(item) in (2, 3):
        words, tags, doc = item[0], item[1], item[2] if len(item) == 3 else None
    else:
        raise DataError(where, f"{_brief(item)}; expected a Sentence, a (words, tags) pair or "
                               "a {\"tokens\": [...], \"tags\": [...]} mapping")
    for name, value in (("words", words), ("tags", tags)):
        if (isinstance(value, str) or not isinstance(value, Sequence)
                or not all(isinstance(x, str) for x in value)):
            raise DataError(where, f"{name} are {_brief(value)}; expected a list of strings")
    if len(words) != len(tags):
        raise DataError(where, f"{len(words)} words but {len(tags)} tags; expected one tag "
                               "per word")
    if doc is not None and not isinstance(doc, str):
        raise DataError(where, f"doc_id is {_brief(doc)}; expected a string or None")
    record: dict[str, Any] = {"tokens": list(words), "tags": list(tags)}
    if doc is not None:
        record["doc_id"] = doc
    return record


def _brief(value: Any) -> str:
    return cut(repr(value))  # a value of any type, quoted for a one-line message


def corpus_file(data: Corpus | Sequence[Any], split: str,
                cache: Path | None = None) -> Path:
    """The JSON Lines file holding ``data`` (written once, named by its content's SHA-256)."""
    from seqrep.model.packaged import cache_dir

    items = data.sentences if isinstance(data, Corpus) else data
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise DataError(split, f"{_brief(items)}; expected a dataset name, a file path, a "
                               "Corpus or a list of sentences")
    if not items:
        raise DataError(split, "no sentences; expected at least one")
    lines = [json.dumps(_record(item, f"{split}[{i}]"), ensure_ascii=False)
             for i, item in enumerate(items)]
    text = "\n".join(lines) + "\n"
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    path = (cache or cache_dir()) / "corpora" / f"{digest}.jsonl"
    if not (path.is_file() and path.read_bytes() == text.encode("utf-8")):
        write_text(path, text)
    return path


def _split(value: CorpusLike, split: str, cache: Path | None) -> str:
    from seqrep.data.hf import is_dataset, load_hf

    if isinstance(value, (str, Path)):
        return str(value)
    if is_dataset(value):  # read like a file, then kept as one (see the module's docstring)
        value = load_hf(value)
    return str(corpus_file(value, split, cache))


def _dataset_dict_splits(train: Any, validation: Any, test: Any) -> tuple[Any, Any, Any]:
    """A ``datasets.DatasetDict`` as ``train=``: its train split, and its validation (or
    dev) and test splits where ``validation=`` / ``test=`` are not given."""
    from seqrep.data.hf import SPLIT_NAMES, is_dataset, load_hf

    if not is_dataset(train) or not hasattr(train, "keys"):
        return train, validation, test
    present = {s for s, names in SPLIT_NAMES.items() if any(n in train for n in names)}
    if validation is None and "validation" in present:
        validation = load_hf(train, "validation")
    if test is None and "test" in present:
        test = load_hf(train, "test")
    return load_hf(train, "train"), validation, test


def _settings(settings: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``settings`` split between LabelerConfig's fields and TrainConfig's."""
    from seqrep.config import LabelerConfig, TrainConfig

    fields = {c: {f.name for f in dataclasses.fields(c)} for c in (LabelerConfig, TrainConfig)}
    taken = {"dataset", "train_split", "eval_split", "test_split"}
    labeler, train = {}, {}
    for name, value in settings.items():
        if name in fields[LabelerConfig]:
            labeler[name] = value
        elif name in fields[TrainConfig] and name not in taken:
            train[name] = value
        else:
            raise ConfigError(f"train_labeler: unknown setting {name}=; expected a field of "
                              "LabelerConfig or TrainConfig (the data comes from train=, "
                              "validation= and test=)")
    return labeler, train


def train_labeler(train: CorpusLike, validation: CorpusLike | None = None,
                  test: CorpusLike | None = None, *, model: str, output: str | Path,
                  overwrite: bool = False, resume: bool = False, quiet: bool = False,
                  **settings: Any) -> tuple[SequenceLabeler, dict[str, Any]]:
    """Train a labeler and return it (its best model by validation score) with its metrics.

    Args:
        train: the training sentences: a dataset name (``"conll2003"``) or file path, a
            :class:`~seqrep.data.types.Corpus`, or a list of :class:`Sentence`, of
            ``(words, tags)`` pairs or of ``{"tokens": [...], "tags": [...]}`` mappings
            (an optional ``doc_id`` groups sentences into documents), or a
            ``datasets.Dataset`` / ``DatasetDict`` (a DatasetDict gives its train, validation
            and test splits; :mod:`seqrep.data.hf`). Tags may be in any scheme a file may be
            in (IOB1, IOB2, BIOES, plain labels for token tagging).
        validation: the sentences to select on, in the same forms; None: a named dataset's
            validation split, else 10 % carved from ``train`` (as for one training file).
        test: sentences scored with the best model at the end; None: a named dataset's test
            split, else none.
        model: the backbone: a packaged alias, a local folder or a Hugging Face hub id.
        output: the run folder (as ``seqrep train --output``).
        overwrite, resume, quiet: as ``seqrep train``'s options.
        **settings: any field of :class:`~seqrep.config.LabelerConfig` or
            :class:`~seqrep.config.TrainConfig` (``repetitions=1``, ``exit_layer=6``,
            ``epochs=3`` ...).

    Returns:
        ``(labeler, metrics)``: the run's best model, loaded, and what ``metrics.json``
        holds (scores as fractions).
    """
    from seqrep.config import LabelerConfig, TrainConfig
    from seqrep.model.labeler import SequenceLabeler
    from seqrep.train.run import train as run_training

    train, validation, test = _dataset_dict_splits(train, validation, test)
    named = isinstance(train, (str, Path))
    labeler_settings, train_settings = _settings(settings)
    splits: dict[str, Any] = {"dataset": _split(train, "train", None)}
    if validation is not None:
        splits["eval_split"] = _split(validation, "validation", None)
    if test is not None:
        splits["test_split"] = _split(test, "test", None)
    elif not named:
        splits["test_split"] = None
    metrics = run_training(LabelerConfig(model=model, **labeler_settings),
                           TrainConfig(**splits, **train_settings), output,
                           overwrite=overwrite, resume=resume, quiet=quiet)
    if metrics.get("status") != "finished":
        raise ConfigError(f"{output}: training stopped at step {metrics.get('step')} "
                          "(max_steps); continue with resume=True")
    return SequenceLabeler.from_pretrained(output), metrics
