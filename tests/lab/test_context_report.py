"""Document context in grid and report (issue 24): context is part of a setting (sentence and
document runs never pool as seeds), a column of the tables and the frontier where a document
run is present, and each document setting is paired by seed with the same setting at
sentence context (the gain and its 95 % CI). Records without the field are sentence runs."""

from __future__ import annotations

import pytest

from seqrep.config import LabelerConfig, TrainConfig
from seqrep.lab.cells import context_cell
from seqrep.lab.frontier import _short, frontier, frontier_markdown
from seqrep.lab.grid import GridRun
from seqrep.lab.stats import group, paired
from seqrep.lab.tables import markdown, paired_markdown

T975_2 = 4.302652729911275  # t(0.975, 2 degrees of freedom), from a table


def record(f1: float, seed: int, r: int = 1, context: str | None = None,
           model: str = "gemma3-270m", exit_layer: int | None = 12, tokens: int = 256) -> dict:
    """A finished run as the store holds it; ``context=None``: written before the field."""
    lab = {"model": model, "repetitions": r, "unmask": "none", "exit_layer": exit_layer,
           "finetune": "full"}
    if context is not None:
        lab.update(context=context, context_tokens=tokens, context_separator="\n")
    return {"run_id": f"{model}{r}{context}{tokens}{exit_layer}{seed}", "kind": "run",
            "config": {"labeler": lab,
                       "train": {"dataset": "conll2003", "seed": seed, "epochs": 2, "lr": 5e-5,
                                 "subset_unit": "document", "batch_rows": False}},
            "metrics": {"status": "finished", "validation": {"f1": f1 / 100 + 0.01},
                        "test": {"f1": f1 / 100, "sentences": 3453},
                        "train_seconds": 60, "train_sentences": 2004}}


# test F1 per seed 1, 2, 3
SENTENCE_R1 = (88.0, 89.0, 90.0)
DOCUMENT_R1 = (90.0, 92.0, 91.0)  # differences 2, 3, 1: mean 2, sd 1
SENTENCE_R0 = (80.0, 81.0, 79.0)
DOCUMENT_R0 = (80.5, 81.0, 80.0)  # differences 0.5, 0, 1: mean 0.5, sd 0.5


def records() -> list[dict]:
    out = []
    for seed in (1, 2, 3):
        i = seed - 1
        # seed 1 at sentence level was stored before the context field existed
        out.append(record(SENTENCE_R1[i], seed, context=None if seed == 1 else "sentence"))
        out.append(record(DOCUMENT_R1[i], seed, context="document"))
        out.append(record(SENTENCE_R0[i], seed, r=0, context="sentence"))
        out.append(record(DOCUMENT_R0[i], seed, r=0, context="document"))
    return out


def test_sentence_and_document_runs_are_separate_settings() -> None:
    rows = group(records())
    assert len(rows) == 4
    by = {(r["r"], r["context"]): r for r in rows}
    assert set(by) == {(1, "sentence"), (1, "document"), (0, "sentence"), (0, "document")}
    assert all(r["seeds"] == [1, 2, 3] for r in rows)  # the old record pools as sentence
    assert by[1, "document"]["test_f1"]["mean"] == pytest.approx(91.0)
    assert by[1, "sentence"]["test_f1"]["mean"] == pytest.approx(89.0)
    # another budget is another setting
    more = records() + [record(91.0, 1, context="document", tokens=128)]
    assert len(group(more)) == 5


def test_document_minus_sentence_per_seed() -> None:
    rows = paired(records(), against="context")
    by = {r["r"]: r for r in rows}
    assert set(by) == {0, 1}
    assert by[1]["seeds"] == [1, 2, 3] and by[1]["wins"] == 3
    assert by[1]["diff"]["mean"] == pytest.approx(2.0)
    assert by[1]["diff"]["std"] == pytest.approx(1.0)
    assert by[1]["diff"]["ci95"] == pytest.approx(T975_2 * 1.0 / 3 ** 0.5)
    assert by[0]["diff"]["mean"] == pytest.approx(0.5) and by[0]["wins"] == 2
    assert by[0]["diff"]["ci95"] == pytest.approx(T975_2 * 0.5 / 3 ** 0.5)
    md = paired_markdown(rows, "context")
    # 2 +- 4.3027 / sqrt(3) = [-0.48, 4.48]
    assert ("| conll2003 | gemma3-270m | 1 | none | 12 | document 256 | sentence | "
            "+2.00 ± 1.00 | [-0.48, 4.48] | 3 of 3 |") in md
    assert "document minus sentence" in md.lower() or "against sentence context" in md.lower()
    # the causal pairing stays within a context: document r=1 against document r=0
    causal = {(r["r"], r["context"]): r for r in paired(records())}
    assert set(causal) == {(1, "sentence"), (1, "document")}
    assert causal[1, "document"]["diff"]["mean"] == pytest.approx(91.0 - 80.5)


def test_auto_exit_settings_pair_across_the_layers_they_chose() -> None:
    recs = []
    for seed, (s, d) in enumerate(zip(SENTENCE_R1, DOCUMENT_R1), 1):
        for f1, context, layer in ((s, "sentence", 11), (d, "document", 12)):
            rec = record(f1, seed, context=context, exit_layer=None)
            rec["config"]["labeler"]["exit_layer"] = "auto"
            rec["metrics"]["exit_layer"] = layer
            recs.append(rec)
    (row,) = paired(recs, against="context")
    assert row["diff"]["mean"] == pytest.approx(2.0) and row["seeds"] == [1, 2, 3]


def test_the_tables_show_context_only_when_a_document_run_is_there() -> None:
    md = markdown(group(records()))
    assert "| context |" in md
    assert "| gemma3-270m | full | 5e-05 | 1 | none | 12 | document 256 | 2004 / 3453 |" in md
    assert "| gemma3-270m | full | 5e-05 | 1 | none | 12 | sentence | 2004 / 3453 |" in md
    plain = markdown(group([r for r in records() if r["config"]["labeler"].get("context")
                            != "document"]))
    assert "context" not in plain
    assert "| gemma3-270m | full | 5e-05 | 1 | none | 12 | 2004 / 3453 |" in plain


def test_the_frontier_labels_context_and_needs_a_bench_row_of_it() -> None:
    rows = group(records())
    bench = [{"model": "gemma3-270m", "mode": "cut", "repetitions": r, "exit_layer": 12,
              "sentences_per_second": speed} for r, speed in ((0, 40.0), (1, 20.0))]
    # no document rows measured: a document setting has no speed, so it is left off
    points = frontier(rows, bench)
    assert {p["context"] for p in points} == {"sentence"}
    assert "context" not in frontier_markdown(points)
    bench.append({**bench[1], "context": "document", "sentences_per_second": 12.0})
    points = frontier(rows, bench)
    doc = next(p for p in points if p["context"] == "document")
    assert doc["sentences_per_second"] == 12.0 and doc["r"] == 1
    assert "document" in _short(doc) and "document" not in _short(
        next(p for p in points if p["context"] == "sentence"))
    md = frontier_markdown(points)
    assert "| exit layer | context | test F1 |" in md
    assert "| **12** | **document 256** | **91.00** |" in md  # Pareto: bold


def test_a_grid_run_s_name_says_document() -> None:
    train = TrainConfig(dataset="conll2003", seed=1)
    doc = GridRun(LabelerConfig(model="m", context="document"), train)
    sent = GridRun(LabelerConfig(model="m"), train)
    assert "-doc" in doc.name and "-doc" not in sent.name
    assert doc.run_id != sent.run_id


def test_an_auto_exit_row_is_set_beside_fixed_layers_of_its_own_context() -> None:
    from seqrep.lab.exit_choice import auto_exit_rows

    recs = [record(f1, 1, context="sentence", exit_layer=layer)
            for f1, layer in ((85.0, 6), (89.0, 12))]
    recs.append(record(80.0, 1, context="document", exit_layer=6))
    auto = record(88.0, 1, context="document", exit_layer=None)
    auto["config"]["labeler"]["exit_layer"] = "auto"
    auto["metrics"]["exit_layer"] = 12
    (row,) = auto_exit_rows(group(recs + [auto]))
    assert row["layers"] == [6]  # the document run at layer 6, not the sentence runs


def test_the_issue24_grid_pairs_each_setting_across_contexts() -> None:
    from pathlib import Path

    from seqrep.lab.grid import expand, load_spec

    root = Path(__file__).resolve().parents[2]
    runs = expand(load_spec(root / "experiments" / "issue24-docs.yaml"))
    assert len(runs) == 3 * 2 * 3  # (Gemma r=0, r=1, MiniLM) x 2 contexts x 3 seeds
    assert all(r.train.subset_unit == "document" and r.train.max_train_sentences == 2000
               and r.train.max_eval_sentences == 500 and r.train.test_split == "test"
               and r.train.max_test_sentences is None for r in runs)

    def twin(r: GridRun) -> tuple:
        return (r.labeler.replace(context="sentence").to_dict().items().__repr__(),
                repr(r.train))

    by: dict[tuple, set] = {}
    for r in runs:
        by.setdefault(twin(r), set()).add(r.labeler.context)
    assert len(by) == 9 and all(v == {"sentence", "document"} for v in by.values())
    minilm = [r for r in runs if r.labeler.model == "minilm-l6"]
    assert {(r.labeler.repetitions, r.labeler.exit_layer, r.train.lr) for r in minilm} == \
        {(0, None, 5e-4)}
    gemma = [r for r in runs if r.labeler.model == "gemma3-270m"]
    assert {(r.labeler.repetitions, r.labeler.exit_layer, r.train.lr) for r in gemma} == \
        {(0, 12, 5e-5), (1, 12, 5e-5)}


def test_a_setting_s_sentence_row_comes_before_its_document_row() -> None:
    """Whatever order the store lists them in (here: reversed, document runs first)."""
    rows = group(list(reversed(records())))
    assert [(r["r"], r["context"]) for r in rows] == \
        [(0, "sentence"), (0, "document"), (1, "sentence"), (1, "document")]


def test_the_best_setting_is_chosen_at_each_context() -> None:
    md = markdown(group(records())).split("### Best setting")[1]
    # validation F1 = test F1 + 1: sentence r=1 has 90.00 / 89.00, document r=1 92.00 / 91.00
    # (the r=0 settings have lower validation F1 in their contexts)
    assert "at each context" in md
    assert ("| conll2003 | 2004 / 3453 | gemma3-270m | full | 5e-05 | 1 | none | 12 | sentence "
            "| 90.00") in md
    assert ("| conll2003 | 2004 / 3453 | gemma3-270m | full | 5e-05 | 1 | none | 12 | "
            "document 256 | 92.00") in md
    assert md.count("| gemma3-270m |") == 2


def test_row_batched_document_runs_are_their_own_setting_paired_with_the_same_sentences(
        tmp_path) -> None:
    """Document runs recorded before --batch-size counted sentences (no batch_rows field, or
    batch_rows true) batched model rows: a setting of their own, marked in the context cell,
    and paired like the sentence-batched ones with the same sentence-level runs."""
    def record(seed: int, f1: float, context: str = "sentence", rows: bool | None = None
               ) -> dict:
        train = {"dataset": "/d/conll2003", "epochs": 2, "lr": 5e-5, "seed": seed}
        if rows is not None:
            train["batch_rows"] = rows
        lab = {"model": "/m/gemma", "repetitions": 1, "unmask": "none", "exit_layer": 12,
               "finetune": "full", "context": context}
        return {"kind": "run", "name": f"{context}-{rows}-{seed}",
                "config": {"labeler": lab, "train": train},
                "metrics": {"status": "finished", "test": {"f1": f1, "sentences": 10},
                            "validation": {"f1": f1}, "train_sentences": 100}}

    records = [record(1, 0.80), record(2, 0.82),
               record(1, 0.81, "document"), record(2, 0.80, "document", True),  # rows
               record(1, 0.85, "document", False), record(2, 0.86, "document", False)]
    rows = {(r["context"], r["batch_rows"]): r for r in group(records)}
    assert set(rows) == {("sentence", None), ("document", True), ("document", False)}
    assert context_cell(rows[("document", True)]) == "document 256, row batches"
    assert context_cell(rows[("document", False)]) == "document 256"
    gains = {p["batch_rows"]: p for p in paired(records, against="context")}
    # by hand: rows 81 - 80 and 80 - 82; sentences 85 - 80 and 86 - 82 (F1 in %)
    assert round(gains[True]["diff"]["mean"], 6) == -0.5
    assert round(gains[False]["diff"]["mean"], 6) == 4.5
    assert gains[True]["seeds"] == gains[False]["seeds"] == [1, 2]


def test_a_document_setting_takes_only_a_bench_row_of_its_window() -> None:
    # a 96-subtoken window makes other rows than 256: the speed bench measured at 256 (its
    # rows before the field: the labeler's default, 256) is not a 96-window setting's
    rows = group([record(91.0, 1, context="document", tokens=96),
                  record(90.0, 1, context="document", tokens=256)])
    bench = [{"model": "gemma3-270m", "mode": "cut", "repetitions": 1, "exit_layer": 12,
              "context": "document", "sentences_per_second": 12.0}]
    points = frontier(rows, bench)
    assert [(p["context_tokens"], p["sentences_per_second"]) for p in points] == [(256, 12.0)]
    bench.append({**bench[0], "context_tokens": 96, "sentences_per_second": 15.0})
    speeds = {p["context_tokens"]: p["sentences_per_second"] for p in frontier(rows, bench)}
    assert speeds == {96: 15.0, 256: 12.0}
