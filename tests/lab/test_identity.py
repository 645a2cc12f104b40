"""A finished run keeps its id when the configs grow: the records committed under results/
were hashed by the code of their day, and today's configs (with every field added since, at
its default) must hash them to the same ids, or a grid reruns finished runs and a report
cannot pool new seeds with old ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from seqrep.config import LabelerConfig, ReaderConfig, TrainConfig
from seqrep.lab.identity import config_hash, setting_hash
from seqrep.lab.results import read_records

ROOT = Path(__file__).resolve().parents[2]
STORES = sorted((ROOT / "results").glob("*.jsonl"))


def resolved(config: dict) -> dict:
    """A stored configuration as today's dataclasses write it: new fields at their defaults,
    or, where the default changed what such a run does (``batch_rows`` under document
    context), at the value that does what the run did."""
    out = dict(config)
    out["labeler"] = LabelerConfig.from_dict(config["labeler"]).to_dict()
    out["train"] = TrainConfig.from_dict({"batch_rows": True, **config["train"]}).to_dict()
    if "reader" in config:
        out["reader"] = ReaderConfig.from_dict(config["reader"]).to_dict()
    return out


@pytest.mark.parametrize("store", STORES, ids=[p.name for p in STORES])
def test_stored_runs_keep_their_ids_under_today_s_configs(store: Path) -> None:
    records = [r for r in read_records(store) if r.get("kind", "run") == "run"]
    assert records
    changed = [r["name"] for r in records if config_hash(resolved(r["config"])) != r["run_id"]]
    assert not changed, f"{len(changed)} of {len(records)} runs get new ids: {changed[:3]}"


def test_context_is_part_of_the_id_and_the_setting() -> None:
    lab = LabelerConfig(model="m")
    train = TrainConfig(dataset="d", seed=1)
    base = {"labeler": lab.to_dict(), "train": train.to_dict()}
    doc = {**base, "labeler": lab.replace(context="document").to_dict()}
    assert config_hash(doc) != config_hash(base)
    assert setting_hash(doc) != setting_hash(base)
    whole = {**base, "train": train.replace(subset_unit="document").to_dict()}
    assert config_hash(whole) != config_hash(base)
    # a budget or separator a sentence-level run never uses does not make it another run
    unused = {**base, "labeler": lab.replace(context_tokens=64, context_separator=" ").to_dict()}
    assert config_hash(unused) == config_hash(base)
    # at document context they do
    doc64 = {**base, "labeler": lab.replace(context="document", context_tokens=64).to_dict()}
    assert config_hash(doc64) != config_hash(doc)


def test_batches_of_rows_are_the_old_document_runs_and_batches_of_sentences_new_ones() -> None:
    """--batch-size counted model rows under document context before it counted sentences:
    a document run recorded then (no batch_rows field) keeps its id as batch_rows=True, a run
    counting sentences is another run, and a sentence-level run is the same either way."""
    lab = LabelerConfig(model="m")
    train = TrainConfig(dataset="d", seed=1)
    doc_lab = lab.replace(context="document").to_dict()
    old = {"labeler": doc_lab, "train": {k: v for k, v in train.to_dict().items()
                                         if k != "batch_rows"}}
    rows = {"labeler": doc_lab, "train": train.replace(batch_rows=True).to_dict()}
    sentences = {"labeler": doc_lab, "train": train.to_dict()}
    assert train.batch_rows is False  # the default counts sentences
    assert config_hash(rows) == config_hash(old)
    assert config_hash(sentences) != config_hash(old)
    plain = {"labeler": lab.to_dict(), "train": train.to_dict()}
    plain_rows = {"labeler": lab.to_dict(), "train": train.replace(batch_rows=True).to_dict()}
    assert config_hash(plain) == config_hash(plain_rows)
