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

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from seqrep.data.charspans import CharSpan, check_alignment, place_on_words
from seqrep.data.jsonparse import parse_json
from seqrep.data.quote import brief, show
from seqrep.data.textfile import read_text
from seqrep.data.types import Corpus, Sentence, Span
from seqrep.errors import ConfigError, DataError

DOMAINS = ("banking", "hotels")
NUM_FOLDS = 20
_FOLD_RE = re.compile(r"fold(\d+)\.json$")


def _fold_files(path: Path) -> dict[str, dict[int, Path]]:
    """Find ``{domain: {fold: file}}`` under an NLU++ checkout, its data dir or a domain dir;
    a directory that cannot be listed raises DataError."""
    try:
        return _find_folds(path)
    except OSError as err:
        raise DataError(err.filename or path, "cannot list the directory "
                                              f"({err.strerror})") from None


def _find_folds(path: Path) -> dict[str, dict[int, Path]]:
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


def has_folds(path: str | Path) -> bool:
    """True if ``path`` holds NLU++ folds (as :func:`read_nlupp` finds them)."""
    try:
        _find_folds(Path(path))
    except (DataError, OSError):
        return False
    return True


def _names(option: str, values: Any, kind: type, expected: str) -> list[Any] | None:
    """An option given as one value or a list of them, as a list; a wrong type is a
    ConfigError."""
    if values is None:
        return None
    if isinstance(values, (str, int)):
        values = [values]
    try:
        values = list(values)
    except TypeError:
        raise ConfigError(f"{option}: expected {expected}, got {values!r}") from None
    out = []
    for value in values:
        if kind is int and isinstance(value, str) and value.strip().isdecimal():
            value = int(value)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ConfigError(f"{option}: expected {expected}, got {value!r}")
        out.append(value)
    return out


def _select(files: dict[str, dict[int, Path]], domains: Iterable[str] | None,
            folds: Iterable[int] | None) -> list[tuple[str, int, Path]]:
    domains = _names("domains", domains, str, f"domain names ({', '.join(files)})")
    folds = _names("folds", folds, int, "fold numbers (0..19)")
    if domains is not None:
        unknown = [d for d in domains if d not in files]
        if unknown:
            raise ConfigError(f"unknown NLU++ domain {unknown[0]!r}; expected one of "
                              f"{', '.join(files)}")
    chosen = []
    for domain in domains if domains is not None else files:
        available = files[domain]
        wanted = sorted(available) if folds is None else folds
        missing = [k for k in wanted if k not in available]
        if missing:
            raise ConfigError(f"{domain} has no fold {missing[0]}; expected folds "
                              f"{min(available)}..{max(available)}")
        chosen += [(domain, k, available[k]) for k in wanted]
    return chosen


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_example(path: Path, index: int, ex: Any) -> None:
    """Raise DataError naming the file and example for a field of the wrong type."""
    where = f"example [{index}]"
    if not isinstance(ex, dict) or not isinstance(ex.get("text"), str):
        raise DataError(path, f"{where}: expected an object with a \"text\" string, got "
                              f"{show(ex)}")
    slots, intents = ex.get("slots"), ex.get("intents")
    if slots is not None and not isinstance(slots, dict):
        raise DataError(path, f"{where}: \"slots\" is {show(slots)}; expected an object "
                              "{name: {\"text\", \"span\": [start, end], ...}} or null")
    if intents is not None and not (isinstance(intents, list)
                                    and all(isinstance(x, str) for x in intents)):
        raise DataError(path, f"{where}: \"intents\" is {show(intents)}; expected a list of "
                              "strings or null")
    for name, slot in (slots or {}).items():
        if not name.strip():
            raise DataError(path, f"{where}: a slot has an empty name; expected a non-empty "
                                  "string")
        if not isinstance(slot, dict):
            raise DataError(path, f"{where} slot {brief(name)}: expected an object with \"span\", "
                                  f"got {show(slot)}")
        span = slot.get("span")
        if not (isinstance(span, list) and len(span) == 2 and all(_is_int(x) for x in span)):
            raise DataError(path, f"{where} slot {brief(name)}: expected \"span\": [start, end] "
                                  f"(two integers), got {show(span)}")
        if "text" in slot and not isinstance(slot["text"], str):
            raise DataError(path, f"{where} slot {brief(name)}: \"text\" is {show(slot['text'])}; "
                                  "expected a string")


def _slots(path: Path, index: int, example: dict[str, Any]) -> list[CharSpan]:
    """The example's slots as character spans (checked by :func:`_check_example`); offsets
    outside the text raise DataError."""
    text = example["text"]
    spans = []
    for name, slot in (example.get("slots") or {}).items():
        start, end = slot["span"]
        if not 0 <= start < end <= len(text):
            raise DataError(path, f"example [{index}] slot {brief(name)}: offsets {start}-{end} "
                                  f"outside the text (0-{len(text)}) {show(text)}")
        spans.append(CharSpan(start, end, name, slot.get("text", text[start:end])))
    return spans


def _read_fold(path: Path, domain: str, fold: int,
               alignment: str) -> tuple[list[Sentence], list[str]]:
    examples = parse_json(read_text(path), path)
    if not isinstance(examples, list):
        raise DataError(path, "expected a JSON list of examples")
    sentences, notes = [], []
    for i, ex in enumerate(examples):
        _check_example(path, i, ex)
        text = ex["text"]
        offsets, placed, found = place_on_words(
            text, _slots(path, i, ex), alignment, f"{domain}/{path.name} example [{i}] {text!r}",
            "slot", path)
        notes += found
        meta: dict[str, Any] = {"domain": domain, "fold": fold, "index": i,
                                "intents": ex.get("intents") or [],
                                "slots": ex.get("slots") or {}}
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
        DataError: missing folds, invalid JSON, a field of the wrong type (``slots`` not an
            object, a slot not an object, a span not two integers, a text not a string), slot
            offsets outside the text, or no example with words (naming file and example).
        ConfigError: an unknown domain or fold, or one of the wrong type.
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
    if not any(len(s) for s in sentences):
        raise DataError(path, f"no sentence has words ({len(sentences)} examples, all empty); "
                              "expected at least one example with words")
    return Corpus(sentences, name=str(path), notes=notes)
