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
from seqrep.errors import ConfigError, DataError, SeqrepError
from seqrep.files.atomic import write_text
from seqrep.files.reader import read_bytes

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
    if not _holds(path, text.encode("utf-8")):
        write_text(path, text)
    return path


def _holds(path: Path, data: bytes) -> bool:
    """Whether ``path`` is a plain file holding exactly ``data`` (read bounded: a link, a
    FIFO or a longer file is not it, and is replaced)."""
    try:
        return read_bytes(path, len(data), DataError, what="a cached corpus") == data
    except SeqrepError:
        return False


class _Part:
    """One split of a DatasetDict given as ``train=``, read when its turn comes."""

    def __init__(self, source: Any, split: str) -> None:
        self.source, self.split = source, split


def _read_sentences(value: Any, split: str, reader: dict[str, Any]) -> Corpus:
    """Sentences in memory read with the reader options that apply to them (``scheme``,
    ``strict``), through the same reader as their cache file."""
    from seqrep.data import load_corpus

    if isinstance(value, Corpus):
        raise ConfigError(f"train_labeler: {split}= is a Corpus, read already; reader options "
                          f"({', '.join(reader)}) apply when data is read: pass them to "
                          "load_corpus")
    extra = [k for k in reader if k not in ("scheme", "strict")]
    if extra:
        raise ConfigError(f"train_labeler: {extra[0]}= does not apply to the sentences in "
                          f"memory given as {split}= (only scheme= and strict= do); it applies "
                          "to files, dataset names and datasets")
    return load_corpus(corpus_file(value, split), format="jsonl", **reader)


def _split(value: Any, split: str, reader: dict[str, Any],
           names: dict[str, str] | None = None) -> str:
    """The path a split is read from: a name or path as given, else the cache file of the
    sentences (a dataset read with the reader options, sentences with those that apply);
    ``names`` gets the cache file's name for the user (what they gave, never the cache)."""
    from seqrep.data.hf import is_dataset, load_hf

    if isinstance(value, (str, Path)):
        return str(value)
    if isinstance(value, _Part):
        name = f"the DatasetDict's {value.split!r} split"
        value = load_hf(value.source, value.split, **reader)
    elif is_dataset(value):  # read like a file, then kept as one (see the module's docstring)
        name = f"the Dataset given as {split}="
        value = load_hf(value, **reader)
    else:
        name = f"the sentences given as {split}="
        if reader:
            value = _read_sentences(value, split, reader)
    path = str(corpus_file(value, split))
    if names is not None:
        names[path] = name
    return path


def _named(err: SeqrepError, names: dict[str, str]) -> SeqrepError:
    """``err`` with each cache file it names replaced by what the user gave (a line of the
    file is that sentence's number, from 1)."""
    text = str(err)
    for path, name in names.items():
        text = text.replace(path + ":", name + ", sentence ").replace(path, name)
    err.args = (text,)
    return err


def _dataset_dict_splits(train: Any, validation: Any, test: Any) -> tuple[Any, Any, Any]:
    """A ``datasets.DatasetDict`` as ``train=``: its train split, and its validation (or
    dev) and test splits where ``validation=`` / ``test=`` are not given."""
    from seqrep.data.hf import SPLIT_NAMES, is_dataset

    if not is_dataset(train) or not hasattr(train, "keys"):
        return train, validation, test
    present = {s for s, names in SPLIT_NAMES.items() if any(n in train for n in names)}
    if validation is None and "validation" in present:
        validation = _Part(train, "validation")
    if test is None and "test" in present:
        test = _Part(train, "test")
    return _Part(train, "train"), validation, test


def _settings(settings: Mapping[str, Any]
              ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``settings`` split between LabelerConfig's fields, TrainConfig's and the reader options
    (ReaderConfig's, ``format`` apart: TrainConfig has it), those checked and set only."""
    from seqrep.config import LabelerConfig, ReaderConfig, TrainConfig

    fields = {c: {f.name for f in dataclasses.fields(c)}
              for c in (LabelerConfig, TrainConfig, ReaderConfig)}
    taken = {"dataset", "train_split", "eval_split", "test_split"}
    labeler, train, reader = {}, {}, {}
    for name, value in settings.items():
        if name in fields[LabelerConfig]:
            labeler[name] = value
        elif name in fields[TrainConfig] and name not in taken:
            train[name] = value
        elif name in fields[ReaderConfig]:
            reader[name] = value
        else:
            raise ConfigError(f"train_labeler: unknown setting {name}=; expected a field of "
                              "LabelerConfig, TrainConfig or ReaderConfig (the data comes "
                              "from train=, validation= and test=)")
    return labeler, train, ReaderConfig(**reader).options()


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
            ``epochs=3`` ...), or a reader option of :class:`~seqrep.config.ReaderConfig`
            (``tags_column="iob"``, ``scheme="IOB1"`` ...): data named by path or name is
            read with them by the run (``run.json`` records them), datasets in memory are
            read with them here, and sentences in memory with ``scheme`` and ``strict``;
            the splits of one call are all on disk or all in memory.

    Returns:
        ``(labeler, metrics)``: the run's best model, loaded, and what ``metrics.json``
        holds (scores as fractions); when ``max_steps`` stopped the run, the best model so
        far and ``{"status": "interrupted", "step": N}`` (``resume=True`` continues it).
    """
    from seqrep.config import LabelerConfig, TrainConfig
    from seqrep.model.labeler import SequenceLabeler
    from seqrep.model.packaged import check_model_name
    from seqrep.train.run import train as run_training

    check_model_name(model)  # a typo of a packaged alias: refused before any Hub look-up
    if not resume:  # the run checks it too, but in the command line's words (--overwrite)
        from seqrep.files.owner import check_folder

        check_folder(Path(output), overwrite, option="output=", hint="overwrite=True")
    train, validation, test = _dataset_dict_splits(train, validation, test)
    named = isinstance(train, (str, Path))
    labeler_settings, train_settings, reader = _settings(settings)
    given = [v for v in (train, validation, test) if v is not None]
    on_disk = sum(isinstance(v, (str, Path)) for v in given)
    if reader and 0 < on_disk < len(given):
        raise ConfigError(f"train_labeler: reader options ({', '.join(reader)}) with some "
                          "splits named by path or name and others in memory: the run reads "
                          "its files with the options, the sentences in memory are read "
                          "here; read the files with load_corpus(path, ...) and pass the "
                          "Corpus, or pass every split one way")
    names: dict[str, str] = {}  # cache file -> what the user gave, for the messages
    splits: dict[str, Any] = {"dataset": _split(train, "train", reader, names)}
    if validation is not None:
        splits["eval_split"] = _split(validation, "validation", reader, names)
    if test is not None:
        splits["test_split"] = _split(test, "test", reader, names)
    elif not named:
        splits["test_split"] = None
    try:
        metrics = run_training(LabelerConfig(model=model, **labeler_settings),
                               TrainConfig(**splits, **train_settings), output,
                               overwrite=overwrite, resume=resume, quiet=quiet,
                               reader_options=reader if on_disk else None)
    except SeqrepError as err:
        raise _named(err, names) from None
    if metrics.get("status") != "finished" and not (Path(output) / "best").is_dir():
        raise ConfigError(f"{output}: max_steps stopped the run at step {metrics.get('step')}, "
                          "before its first evaluation, so there is no best model yet; "
                          "continue with resume=True, or evaluate sooner (eval_every=)")
    # stopped at max_steps: the best model so far, and metrics with status "interrupted"
    return SequenceLabeler.from_pretrained(output), metrics
