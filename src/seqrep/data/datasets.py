"""Named datasets and their splits, and :func:`load_corpus`, the one entry point for data.

A name resolves to ``<data dir>/<folder>/`` where the data directory is the ``data_dir``
argument or the ``SEQREP_DATA`` environment variable; without a local copy it is fetched from
the Hugging Face Hub where one is known (:mod:`seqrep.data.hub`). Anything else is a path, read
with a format reader (:mod:`seqrep.data.readers`).

Named datasets and their splits:

- ``conll2003``: train, validation, test = ``eng.train``, ``eng.testa``, ``eng.testb``.
- ``rest14`` (aspect terms, ``ASP``) and ``rest14-polarity`` (``POS NEG NEU CONFLICT``): the
  SemEval-2014 restaurant XML. Validation is the common 304-sentence dev split listed in
  ``bert_e2e_absa/dev.txt``, matched to XML sentences by their text without whitespace (as a
  multiset); train is the rest of the training XML; test is the test XML (aspect terms only:
  it has no polarities, so ``rest14-polarity`` has no test split).
- ``nlupp``, ``nlupp-banking``, ``nlupp-hotels``: NLU++ with the paper's fold split (train
  folds 0-9, 12, 14, 17, 19; validation 11, 16; test 10, 13, 15, 18), both domains pooled or one.

A folder laid out like one of them loads the same way, and so does a folder of ``train/``,
``valid/`` (or ``dev/``, ``validation/``) and ``test/`` folders each holding ``seq.in`` +
``seq.out`` (SNIPS, ATIS; :mod:`seqrep.data.parallel`). A folder holding ``seq.in`` + ``seq.out``
itself is one split, like a file.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seqrep.data.absa import read_absa_tokenized, read_semeval_xml
from seqrep.data.conll import read_conll
from seqrep.data.hf import holds_splits, is_dataset, is_hf_name, is_saved_dataset, load_hf
from seqrep.data.hub import load_from_hub
from seqrep.data.nlupp import read_nlupp
from seqrep.data.parallel import is_split_folder, split_folder, split_folders
from seqrep.data.readers import FILE_FORMATS, FOLDER_LAYOUTS, read_corpus
from seqrep.data.types import Corpus
from seqrep.errors import ConfigError, DataError

SPLITS = ("train", "validation", "test")
SPLIT_ALIASES = {"dev": "validation"}
ENV_VAR = "SEQREP_DATA"

CONLL2003_FILES = {"train": "eng.train", "validation": "eng.testa", "test": "eng.testb"}
REST14_XML = {"train": "semeval2014_xml/Restaurants_Train_v2.xml",
              "test": "semeval2014_xml/Restaurants_Test_Data_phaseB.xml"}
REST14_DEV = "bert_e2e_absa/dev.txt"
NLUPP_FOLDS = {"train": (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 14, 17, 19),
               "validation": (11, 16), "test": (10, 13, 15, 18)}


def _conll2003(root: Path, split: str, **options: Any) -> Corpus:
    return read_conll(root / CONLL2003_FILES[split], **options)


def _no_whitespace(text: str | None) -> str:
    return "".join((text or "").split())


def _rest14(root: Path, split: str, polarity: bool = False, alignment: str = "expand") -> Corpus:
    if split == "test":
        if polarity:
            raise ConfigError(
                "rest14-polarity has no test split: the organisers' test XML "
                f"({REST14_XML['test']}) has aspect terms without polarity. Use rest14 (aspect "
                "terms only), or read the tokenised test set, which has polarities: load_corpus("
                f"'{root / 'bert_e2e_absa/test.txt'}', format='absa-tokenized', polarity=True)")
        return read_semeval_xml(root / REST14_XML["test"], polarity=False, alignment=alignment)
    full = read_semeval_xml(root / REST14_XML["train"], polarity=polarity, alignment=alignment)
    wanted = Counter(_no_whitespace(s.text) for s in read_absa_tokenized(root / REST14_DEV))
    left = wanted.copy()
    dev, train = [], []
    for sentence in full:
        key = _no_whitespace(sentence.text)
        if left[key] > 0:  # a text repeated in the XML: its first occurrences go to dev
            left[key] -= 1
            dev.append(sentence)
        else:
            train.append(sentence)
    chosen = dev if split == "validation" else train
    notes = [n for s in chosen for n in s.meta.get("notes", [])]
    notes += [f"unmatched: {REST14_DEV}: sentence {key!r} (whitespace removed) matches no "
              f"sentence of {REST14_XML['train']}" for key in (+left).elements()]
    return Corpus(chosen, name=full.name, notes=notes)


def _nlupp(domains: tuple[str, ...] | None) -> Callable[..., Corpus]:
    def load(root: Path, split: str, domains: Any = domains, alignment: str = "expand") -> Corpus:
        return read_nlupp(root, domains=domains, folds=NLUPP_FOLDS[split], alignment=alignment)
    return load


@dataclass(frozen=True)
class NamedDataset:
    """A dataset name: its folder under the data directory, a loader, the options it takes
    and the ones it presets."""

    folder: str
    load: Callable[..., Corpus]
    options: tuple[str, ...]
    preset: dict[str, Any] = field(default_factory=dict)


_CONLL_OPTIONS = ("tag_column", "scheme", "strict", "word_column")
_REST14_OPTIONS = ("polarity", "alignment")
_NLUPP_OPTIONS = ("domains", "alignment")
DATASETS = {
    "conll2003": NamedDataset("conll2003", _conll2003, _CONLL_OPTIONS),
    "rest14": NamedDataset("rest14", _rest14, _REST14_OPTIONS),
    "rest14-polarity": NamedDataset("rest14", _rest14, _REST14_OPTIONS, {"polarity": True}),
    "nlupp": NamedDataset("nlupp", _nlupp(None), _NLUPP_OPTIONS),
    "nlupp-banking": NamedDataset("nlupp", _nlupp(("banking",)), _NLUPP_OPTIONS),
    "nlupp-hotels": NamedDataset("nlupp", _nlupp(("hotels",)), _NLUPP_OPTIONS),
}


def normalize_split(split: str) -> str:
    """Resolve ``dev`` to ``validation``; an unknown split raises ConfigError listing them."""
    resolved = SPLIT_ALIASES.get(split, split)
    if resolved not in SPLITS:
        raise ConfigError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)} "
                          f"(or {', '.join(SPLIT_ALIASES)} for validation)")
    return resolved


def resolve_data_dir(explicit: str | Path | None = None) -> Path | None:
    """The data directory: ``explicit`` if given, else ``$SEQREP_DATA``, else ``None``."""
    value = explicit if explicit is not None else os.environ.get(ENV_VAR)
    return Path(value) if value else None


def _layout(path: Path) -> str | None:
    """The named dataset whose folder layout a directory has, if any."""
    probes = {"conll2003": (CONLL2003_FILES["train"],), "rest14": (REST14_XML["train"],),
              "nlupp": ("data/banking", "data/hotels", "banking", "hotels")}
    return next((name for name, found in probes.items()
                 if any((path / probe).exists() for probe in found)), None)


NAMED_LAYOUTS = (f"a conll2003 folder ({', '.join(CONLL2003_FILES.values())}), a rest14 folder "
                 f"({REST14_XML['train']}, {REST14_DEV})")


def holds_one_split(path: str | Path) -> bool:
    """True for a path that is one split: a file (a pipe or FIFO such as ``<(cat file)``
    included), or a folder holding ``seq.in`` + ``seq.out``. Any other path (a dataset folder,
    a name) has ``train``, ``validation`` and ``test``."""
    path = Path(path)
    return (path.exists() and not path.is_dir()) or is_split_folder(path) or \
        is_saved_dataset(path)


def _load_named(name: str, root: Path, split: str, options: dict[str, Any]) -> Corpus:
    ds = DATASETS[name]
    unknown = [k for k in options if k not in ds.options]
    if unknown:
        raise ConfigError(f"{name} takes no option {unknown[0]!r}; its options are "
                          f"{', '.join(ds.options)}")
    corpus = ds.load(root, split, **{**ds.preset, **options})
    corpus.name = f"{name}/{split}"
    return corpus


def _near_name(key: str) -> str | None:
    """The dataset name ``key`` looks like a typo of (``conll203``: ``conll2003``), if any."""
    import difflib

    close = difflib.get_close_matches(key, list(DATASETS), n=1, cutoff=0.8)
    return close[0] if close else None


def load_corpus(name_or_path: str | Path, split: str = "train", format: str | None = None, *,
                data_dir: str | Path | None = None, **options: Any) -> Corpus:
    """Load a named dataset split, or read a file.

    Args:
        name_or_path: a dataset name (``conll2003``, ``rest14``, ``rest14-polarity``,
            ``nlupp``, ``nlupp-banking``, ``nlupp-hotels``), a dataset folder laid out like
            one of them or holding ``train/ valid/ test/`` folders of ``seq.in`` + ``seq.out``,
            a folder holding ``seq.in`` + ``seq.out`` (one split), or a file; or Hugging Face
            data (:mod:`seqrep.data.hf`): ``hf:ORG/NAME[:CONFIG]``, a ``datasets.Dataset``
            (one split) or ``DatasetDict``, a ``save_to_disk`` folder, parquet or arrow
            files.
        split: ``train``, ``validation`` (alias ``dev``) or ``test``; a single file holds one
            split, so only ``train`` (the default) is accepted with a file.
        format: the reader for a file (see :data:`seqrep.data.readers.READERS`); detected
            from the file when ``None``. Not used with names.
        data_dir: where named datasets live; defaults to ``$SEQREP_DATA``.
        **options: reader options (``tag_column``, ``scheme``, ``strict``, ``polarity``,
            ``label_column``, ``domains``, ``folds``, ``alignment`` ...); ``None`` values are
            ignored.

    Returns:
        the corpus, named ``<dataset>/<split>`` or after the file.

    Raises:
        ConfigError: an unknown name, split, format or option.
        DataError: a missing or malformed file, a folder of no known layout (the message lists
            the layouts), or a dataset folder without the split.
        SeqrepError: a name with neither a local copy nor a reachable Hub copy.
    """
    split = normalize_split(split)
    options = {k: v for k, v in options.items() if v is not None}
    if is_dataset(name_or_path) or is_hf_name(name_or_path):
        if format is not None:
            raise ConfigError(f"format={format!r} applies to files; a Hugging Face dataset is "
                              "read by its columns")
        return load_hf(name_or_path, split, **options)
    key = str(name_or_path).lower()
    if key in DATASETS:
        if format is not None:
            raise ConfigError(f"format={format!r} applies to paths; {key!r} is a dataset name")
        root = resolve_data_dir(data_dir)
        if root is not None and (root / DATASETS[key].folder).is_dir():
            return _load_named(key, root / DATASETS[key].folder, split, options)
        return load_from_hub(key, split, **{**DATASETS[key].preset, **options})
    path = Path(name_or_path)
    if path.is_dir() and "folds" not in options and not holds_one_split(path):
        if holds_splits(path):
            return load_hf(path, split, **options)
        if split_folders(path):
            corpus = read_corpus(split_folder(path, split), format="parallel", **options)
            corpus.name = f"{path.name}/{split}"
            return corpus
        layout = _layout(path)
        if layout is None:
            raise DataError(path, f"a folder matching no known layout; expected {FOLDER_LAYOUTS}, "
                                  f"{NAMED_LAYOUTS}, or {FILE_FORMATS}")
        name = "rest14-polarity" if layout == "rest14" and options.pop("polarity", False) \
            else layout
        return _load_named(name, path, split, options)
    if not path.exists() and "/" not in key and os.sep not in key and (
            path.suffix == "" or _near_name(key)):
        close = _near_name(key)
        guess = f" (did you mean {close}?)" if close else ""
        raise ConfigError(f"unknown dataset {str(name_or_path)!r}; expected one of "
                          f"{', '.join(DATASETS)}, or a path to a file{guess}")
    if not path.exists():
        raise DataError(path, "no such file or directory")
    if split != "train":
        raise ConfigError(f"split={split!r} does not apply to {path}: a file, a seq.in + seq.out "
                          "folder or a chosen set of folds is one split; pass a dataset name or "
                          "folder to choose a split")
    return read_corpus(path, format=format, **options)
