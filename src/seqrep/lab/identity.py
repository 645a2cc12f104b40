"""What makes two runs the same run, or the same setting: hashes of resolved configurations.

A run's id hashes its whole configuration; a setting's id hashes it without the seed (and
without the fields a comparison varies), so runs that differ in anything else (learning rate,
read, subtoken, LoRA rank, the dataset's full path ...) are never pooled as seeds of one row.

Fields added to the configs after records were written are left out of the hash while they
hold the value that reproduces the old behaviour, so the ids of finished runs stay stable and
a grid does not rerun them.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterable
from typing import Any

from seqrep.config import TRAIN_SAVED_BEFORE
from seqrep.core.contexts import SENTENCE, context_of
from seqrep.encode.document import OVERLAP

# section -> field -> the value that means "as before this field existed"
NEUTRAL: dict[str, dict[str, Any]] = {
    "labeler": {"task": "auto", "frozen_layers": 0, "lora_targets": [], "context": SENTENCE.name,
                "context_overlap": OVERLAP},
    "train": {"batch_tokens": None, "device": "auto", "precision": "auto",
              "gradient_checkpointing": False, "exit_search_sentences": 1000,
              "compile": False, "subset_unit": "sentence",
              **TRAIN_SAVED_BEFORE},  # batch_rows: document runs before the field
}
# labeler fields that only document context reads: a sentence-level run is the same run
# whatever they hold (and runs recorded before they existed hold none of them)
DOCUMENT_ONLY = ("context_tokens", "context_separator", "context_overlap")
# train fields that only document context reads
DOCUMENT_ONLY_TRAIN = ("batch_rows",)


def canonical(config: dict[str, Any]) -> dict[str, Any]:
    """A copy of a run configuration without fields at their neutral value."""
    out = copy.deepcopy(config)
    lab = out.get("labeler")
    if isinstance(lab, dict) and not context_of(lab.get("context")).documents:
        for name in DOCUMENT_ONLY:
            lab.pop(name, None)
        if isinstance(out.get("train"), dict):
            for name in DOCUMENT_ONLY_TRAIN:
                out["train"].pop(name, None)
    for section, fields in NEUTRAL.items():
        part = out.get(section)
        if isinstance(part, dict):
            for name, value in fields.items():
                if name in part and part[name] == value:
                    del part[name]
    return out


def config_hash(config: dict[str, Any]) -> str:
    """12 hex digits of the SHA-1 of the canonical configuration (sorted keys)."""
    blob = json.dumps(canonical(config), sort_keys=True).encode()
    return hashlib.sha1(blob).hexdigest()[:12]


def setting_hash(config: dict[str, Any], drop: Iterable[tuple[str, str]] = ()) -> str:
    """The hash of a configuration without its seed and the ``(section, field)`` in ``drop``."""
    cfg = canonical(config)
    for section, name in [("train", "seed"), *drop]:
        if isinstance(cfg.get(section), dict):
            cfg[section].pop(name, None)
    return config_hash(cfg)
