"""NLU++ (Casanueva et al. 2022): slot spans in JSON folds, ``<domain>/fold<k>.json``.

Each fold is a JSON list of examples ``{"text", "intents"?, "slots"?}`` where ``slots`` maps a
slot name to ``{"text", "span": [start, end], "value" or "values"}`` (character offsets). Words
come from :func:`seqrep.data.tokenize.split_words`, and slot names become span labels.

Every slot span must survive spans -> tags -> spans. One that cannot (it overlaps another slot,
or covers no word) is left out of the tags and explained in ``Corpus.notes`` (kinds
``overlapping``, ``no word``, ``duplicate``); one that cuts a word is extended to whole words
and noted as ``cut mid-word`` (see :mod:`seqrep.data.charspans`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from seqrep.data.charspans import CharSpan, check_alignment, place_on_words
from seqrep.data.sources import read_text
from seqrep.data.types import Corpus, Sentence, Span
from seqrep.errors import ConfigError, DataError

DOMAINS = ("banking", "hotels")
NUM_FOLDS = 20
_FOLD_RE = re.compile(r"fold(\d+)\.json$")


def _fold_files(path: Path) -> dict[str, dict[int, Path]]:
    """Find ``{domain: {fold: file}}`` under an NLU++ checkout, its data dir or a domain dir."""
    if path.is_file():
        m = _FOLD_RE.search(path.name)
        return {path.parent.name: {int(m.group(1)) if m else 0: path}}
    for root in (path / "data", path):
        found = {}
        for d in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []:
            folds = {int(m.group(1)): f for f in d.iterdir() if (m := _FOLD_RE.search(f.name))}
            if folds:
                found[d.name] = folds
        if found:
            return found
    folds = {int(m.group(1)): f for f in path.iterdir() if (m := _FOLD_RE.search(f.name))}
    if folds:
        return {path.name: folds}
    raise DataError(path, "no NLU++ folds found; expected <domain>/fold<k>.json under this "
                          "directory or its data/ folder")


def _select(files: dict[str, dict[int, Path]], domains: Iterable[str] | None,
            folds: Iterable[int] | None) -> list[tuple[str, int, Path]]:
    if isinstance(domains, str):
        domains = [domains]
    if domains is not None:
        unknown = [d for d in domains if d not in files]
        if unknown:
            raise ConfigError(f"unknown NLU++ domain {unknown[0]!r}; expected one of "
                              f"{', '.join(files)}")
    chosen = []
    for domain in domains if domains is not None else files:
        available = files[domain]
        wanted = sorted(available) if folds is None else [int(k) for k in folds]
        missing = [k for k in wanted if k not in available]
        if missing:
            raise ConfigError(f"{domain} has no fold {missing[0]}; expected folds "
                              f"{min(available)}..{max(available)}")
        chosen += [(domain, k, available[k]) for k in wanted]
    return chosen


def _slots(path: Path, index: int, example: dict[str, Any]) -> list[CharSpan]:
    """The example's slots as character spans; bad offsets raise DataError."""
    text = example["text"]
    spans = []
    for name, slot in (example.get("slots") or {}).items():
        where = f"example [{index}] slot {name!r}"
        span = slot.get("span") if isinstance(slot, dict) else None
        if not (isinstance(span, list) and len(span) == 2
                and all(isinstance(x, int) for x in span)):
            raise DataError(path, f"{where}: expected \"span\": [start, end], got {span!r}")
        start, end = span
        if not 0 <= start < end <= len(text):
            raise DataError(path, f"{where}: offsets {start}-{end} outside the text "
                                  f"(0-{len(text)}) {text!r}")
        spans.append(CharSpan(start, end, name, slot.get("text", text[start:end])))
    return spans


def _read_fold(path: Path, domain: str, fold: int,
               alignment: str) -> tuple[list[Sentence], list[str]]:
    try:
        examples = json.loads(read_text(path))
    except json.JSONDecodeError as err:
        raise DataError(path, f"invalid JSON ({err.msg})", err.lineno) from None
    if not isinstance(examples, list):
        raise DataError(path, "expected a JSON list of examples")
    sentences, notes = [], []
    for i, ex in enumerate(examples):
        if not isinstance(ex, dict) or not isinstance(ex.get("text"), str):
            raise DataError(path, f"example [{i}]: expected an object with a \"text\" string")
        text = ex["text"]
        offsets, placed, found = place_on_words(
            text, _slots(path, i, ex), alignment, f"{domain}/{path.name} example [{i}] {text!r}",
            "slot", path)
        notes += found
        meta: dict[str, Any] = {"domain": domain, "fold": fold, "index": i,
                                "intents": ex.get("intents", []), "slots": ex.get("slots", {})}
        if found:
            meta["notes"] = found
        sentences.append(Sentence.from_spans([text[s:e] for s, e in offsets],
                                             [Span(*s) for s in placed.spans], text=text,
                                             offsets=offsets, meta=meta))
    return sentences, notes


def read_nlupp(path: str | Path, domains: Iterable[str] | None = None,
               folds: Iterable[int] | None = None, alignment: str = "expand") -> Corpus:
    """Read NLU++ folds.

    Args:
        path: the NLU++ checkout, its ``data/`` folder, one domain folder or one fold file.
        domains: the domains to read (``banking``, ``hotels``); ``None`` reads all.
        folds: the fold numbers to read (0..19); ``None`` reads all.
        alignment: how slots off word boundaries map to words: ``"expand"``, ``"contract"``
            or ``"strict"`` (see :mod:`seqrep.data.charspans`).

    Returns:
        the examples in domain and fold order; ``meta`` holds ``domain``, ``fold``, ``index``
        (position in the fold), ``intents`` and the raw ``slots``.

    Raises:
        DataError: missing folds, invalid JSON, slot offsets outside the text.
        ConfigError: an unknown domain or fold.
    """
    path = Path(path)
    check_alignment(alignment)
    if not path.exists():
        raise DataError(path, "no such file or directory")
    sentences, notes = [], []
    for domain, fold, file in _select(_fold_files(path), domains, folds):
        s, n = _read_fold(file, domain, fold, alignment)
        sentences += s
        notes += n
    return Corpus(sentences, name=str(path), notes=notes)
