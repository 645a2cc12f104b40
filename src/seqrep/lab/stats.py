"""Statistics over a results store's runs: the setting each run belongs to, F1 over seeds,
and settings paired by seed against a baseline.

Statistics over seeds: mean, sample standard deviation (n - 1) and the 95 % confidence
interval of the mean from Student's t distribution, ``mean +/- t(0.975, n-1) * sd / sqrt(n)``;
with one seed the spread is reported as ``-``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from seqrep.core.contexts import SENTENCE, context_of
from seqrep.lab.identity import setting_hash
from seqrep.lab.results import unique_runs


def summarize(values: Iterable[float]) -> dict[str, float | int | None]:
    """``n``, ``mean``, ``std`` (sample) and ``ci95`` (half-width, Student t) of values."""
    xs = [float(v) for v in values]
    n = len(xs)
    if n == 0:
        return {"n": 0, "mean": None, "std": None, "ci95": None}
    mean = sum(xs) / n
    if n == 1:
        return {"n": 1, "mean": mean, "std": None, "ci95": None}
    std = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    from scipy.stats import t

    half = float(t.ppf(0.975, n - 1)) * std / math.sqrt(n)
    return {"n": n, "mean": mean, "std": std, "ci95": half}


# The fields the comparisons vary (r, unmasking, exit layer): shown as columns and left out of
# the "rest" hash, so a baseline row is found by changing them and keeping the rest.
VARIED = (("labeler", "repetitions"), ("labeler", "unmask"), ("labeler", "exit_layer"))
# The context a run read (issue 24) is a column too: a document setting is paired with the
# same setting at sentence context by changing these and keeping the rest.
CONTEXT = (("labeler", "context"), ("labeler", "context_tokens"),
           ("labeler", "context_separator"), ("train", "batch_rows"))


# The fine-tuning cell of a probe's rows (a frozen backbone's head fitted at each layer of a
# sweep): no fine-tuning mode, so the comparisons and the frontier leave such rows out.
PROBE = "probe"


def strategy(record: dict[str, Any]) -> dict[str, Any]:
    """The setting a run belongs to: every configuration field except the seed.

    The columns of the tables come first; ``rest`` is the hash of all other fields
    (:func:`seqrep.lab.identity.setting_hash`), so runs that differ in anything (learning
    rate, read, subtoken, LoRA rank, the dataset's path ...) are never pooled as seeds.
    """
    lab, tr = record["config"]["labeler"], record["config"]["train"]
    probe = "probe_layers" in record["config"]
    exit_layer = record["metrics"].get("layer") if probe else lab.get("exit_layer")
    auto = exit_layer == "auto"
    if isinstance(exit_layer, str):  # auto, a fraction, default: the layer the run chose
        exit_layer = record["metrics"].get("exit_layer")
    context = context_of(lab.get("context"))  # runs stored before the field: sentence
    return {"rest": setting_hash(record["config"], VARIED + CONTEXT),
            "model": Path(lab["model"]).name, "dataset": Path(tr["dataset"]).name,
            "finetune": PROBE if probe else _finetune(lab, record["config"].get("distill")),
            "r": lab["repetitions"],
            "unmask": lab["unmask"], "exit_layer": exit_layer, "auto_exit": auto,
            "context": context.name,
            "context_tokens": lab.get("context_tokens", 256) if context.documents else None,
            "context_separator": lab.get("context_separator", "\n") if context.documents
            else None,
            # document runs recorded before the field batched rows; a probe trains no batches
            "batch_rows": bool(tr.get("batch_rows", True)) if context.documents and not probe
            else None,
            "lr": None if probe else tr.get("lr"),
            "train_sentences": _gold_sentences(record),
            "test_sentences": (record["metrics"].get("test") or {}).get("sentences"),
            "epochs": None if probe else tr["epochs"]}


def _unlabeled(distill: Any) -> int:
    """The unlabeled sentences a distilled student trained on beside the gold ones (0 for
    any other run)."""
    n = distill.get("unlabeled_sentences") if isinstance(distill, dict) else None
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 0


def _gold_sentences(record: dict[str, Any]) -> Any:
    """A run's budget of gold training sentences: a distilled student's training sentences
    less the unlabeled ones its teacher labeled (its mode names those)."""
    n = record["metrics"].get("train_sentences")
    extra = _unlabeled(record["config"].get("distill"))
    return n - extra if isinstance(n, int) and extra else n


def _finetune(lab: dict[str, Any], distill: Any = None) -> str:
    """The fine-tuning cell: ``full``, ``lora``, ``frozen``, or ``full, 10 frozen`` when the
    lowest layers were frozen (``frozen_layers``), so such a run never reads as plain ``full``;
    a distilled student adds ``distilled from RUN KEY`` (its teacher's run folder and the
    first digits of the teacher model's key, where recorded) and the
    unlabeled sentences it trained on (``+N unlabeled``)."""
    n = lab.get("frozen_layers") or 0
    cell = f"{lab['finetune']}, {n} frozen" if n else lab["finetune"]
    if isinstance(distill, dict) and isinstance(distill.get("teacher"), str):
        cell += f", distilled from {Path(distill['teacher']).name}"
        if isinstance(distill.get("teacher_key"), str):  # which model that folder held
            cell += f" {distill['teacher_key'][:8]}"
        if _unlabeled(distill):
            cell += f", +{_unlabeled(distill)} unlabeled"
    return cell


def _groups(records: list[dict[str, Any]]) -> dict[tuple, list[dict[str, Any]]]:
    """Finished records by strategy (a sorted tuple of its items), each run once
    (:func:`seqrep.lab.results.unique_runs`)."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for rec in unique_runs(records)[0]:
        if rec.get("metrics", {}).get("status") != "finished":
            continue
        groups[_key(strategy(rec))].append(rec)
    return groups


def _key(row: dict[str, Any]) -> tuple:
    """A strategy as a hashable key: its items sorted by name."""
    return tuple(sorted(row.items(), key=lambda kv: kv[0]))


def group(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per strategy: F1 statistics over seeds (test and validation) and times."""
    rows = []
    for key, recs in _groups(records).items():
        row = dict(key)
        row["seeds"] = sorted({r["config"]["train"]["seed"] for r in recs})
        row["test_f1"] = summarize(100 * r["metrics"]["test"]["f1"] for r in recs
                                   if r["metrics"].get("test"))
        row["val_f1"] = summarize(100 * r["metrics"]["validation"]["f1"] for r in recs)
        row["train_seconds"] = summarize(r["metrics"].get("train_seconds", 0) for r in recs)
        rows.append(row)
    rows.sort(key=lambda r: (r["dataset"], r["model"], r["finetune"], str(r["unmask"]), r["r"],
                             r["exit_layer"] or 0, context_of(r["context"]).documents))
    return rows


def _test_f1_by_seed(recs: list[dict[str, Any]]) -> dict[int, float]:
    return {r["config"]["train"]["seed"]: 100 * r["metrics"]["test"]["f1"] for r in recs
            if r["metrics"].get("test")}


def _causal_baseline(row: dict[str, Any], keys: Iterable[tuple]) -> tuple | None:
    """r=0 without unmasking, all else equal; ``None`` for that baseline itself."""
    if row["r"] == 0 and row["unmask"] == "none":
        return None
    return _key({**row, "r": 0, "unmask": "none"})


def _deepest_exit(row: dict[str, Any], keys: Iterable[tuple]) -> tuple | None:
    """The same setting at the deepest exit layer that ran; ``None`` when it is that one."""
    if row["exit_layer"] is None:
        return None
    same = [dict(k) for k in keys if dict(k)["exit_layer"] is not None
            and {**dict(k), "exit_layer": None, "auto_exit": False}
            == {**row, "exit_layer": None, "auto_exit": False}]
    deepest = max(same, key=lambda r: r["exit_layer"])
    return None if deepest["exit_layer"] == row["exit_layer"] else _key(deepest)


def _sentence_context(row: dict[str, Any], keys: Iterable[tuple]) -> tuple | None:
    """The same setting at sentence context; ``None`` for a sentence-context row. With
    ``--exit-layer auto`` each context's runs chose their own layer: the baseline is the
    auto-exit setting at sentence context whatever layer it chose."""
    if not context_of(row["context"]).documents:
        return None
    want = {**row, "context": SENTENCE.name, "context_tokens": None, "context_separator": None,
            "batch_rows": None}
    if not row.get("auto_exit"):
        return _key(want)
    return next((k for k in keys if {**dict(k), "exit_layer": None}
                 == {**want, "exit_layer": None}), None)


def paired(records: list[dict[str, Any]], against: str = "causal") -> list[dict[str, Any]]:
    """Each fine-tuned setting against a baseline run with the same seeds, paired by seed.

    ``against="causal"``: the causal model (r=0, no unmasking) of the same model, dataset,
    exit layer, mode and budget. ``against="depth"``: the same setting at the deepest exit
    layer that ran. ``against="context"``: a document-context setting against the same
    setting at sentence context (document minus sentence). Runs of one seed share the
    training subset, the head's initialisation and the batch order, so the per-seed
    difference removes the part of the spread that all settings share. Rows hold the
    difference's statistics over the seeds both have (see :func:`summarize`), in how many
    of those seeds the setting scored higher, and the baseline's exit layer, r, unmasking
    and context.
    """
    base_of = {"causal": _causal_baseline, "depth": _deepest_exit,
               "context": _sentence_context}[against]
    groups = {k: _test_f1_by_seed(v) for k, v in _groups(records).items()}
    rows = []
    for key, scores in groups.items():
        row = dict(key)
        if row["finetune"] == PROBE:
            continue
        base_key = base_of(row, groups)
        base = groups.get(base_key, {}) if base_key else {}
        seeds = sorted(set(scores) & set(base))
        if not seeds:
            continue
        diffs = [scores[s] - base[s] for s in seeds]
        row.update(seeds=seeds, diff=summarize(diffs), wins=sum(d > 0 for d in diffs),
                   baseline={k: dict(base_key)[k] for k in ("r", "unmask", "exit_layer",
                                                            "context")})
        rows.append(row)
    rows.sort(key=lambda r: (r["dataset"], r["model"], r["finetune"], str(r["unmask"]), r["r"],
                             r["exit_layer"] or 0, context_of(r["context"]).documents))
    return rows
