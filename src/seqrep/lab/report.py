"""Tables and plots from a results store (never from file names: every record carries its
configuration).

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

from seqrep.fileio import write_text
from seqrep.lab.cells import budget, layer_cell, lr_cell, save_figure
from seqrep.lab.identity import setting_hash
from seqrep.lab.results import read_sources, unique_runs


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
    if auto:  # the layer the run's probe sweep chose
        exit_layer = record["metrics"].get("exit_layer")
    return {"rest": setting_hash(record["config"], VARIED),
            "model": Path(lab["model"]).name, "dataset": Path(tr["dataset"]).name,
            "finetune": "probe" if probe else _finetune(lab), "r": lab["repetitions"],
            "unmask": lab["unmask"], "exit_layer": exit_layer, "auto_exit": auto,
            "lr": None if probe else tr.get("lr"),
            "train_sentences": record["metrics"].get("train_sentences"),
            "test_sentences": (record["metrics"].get("test") or {}).get("sentences"),
            "epochs": None if probe else tr["epochs"]}


def _finetune(lab: dict[str, Any]) -> str:
    """The fine-tuning cell: ``full``, ``lora``, ``frozen``, or ``full, 10 frozen`` when the
    lowest layers were frozen (``frozen_layers``), so such a run never reads as plain ``full``."""
    n = lab.get("frozen_layers") or 0
    return f"{lab['finetune']}, {n} frozen" if n else lab["finetune"]


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
                             r["exit_layer"] or 0))
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


def paired(records: list[dict[str, Any]], against: str = "causal") -> list[dict[str, Any]]:
    """Each fine-tuned setting against a baseline run with the same seeds, paired by seed.

    ``against="causal"``: the causal model (r=0, no unmasking) of the same model, dataset,
    exit layer, mode and budget. ``against="depth"``: the same setting at the deepest exit
    layer that ran. Runs of one seed share the training subset, the head's initialisation
    and the batch order, so the per-seed difference removes the part of the spread that all
    settings share. Rows hold the difference's statistics over the seeds both have (see
    :func:`summarize`), in how many of those seeds the setting scored higher, and the
    baseline's exit layer, r and unmasking.
    """
    base_of = {"causal": _causal_baseline, "depth": _deepest_exit}[against]
    groups = {k: _test_f1_by_seed(v) for k, v in _groups(records).items()}
    rows = []
    for key, scores in groups.items():
        row = dict(key)
        if row["finetune"] == "probe":
            continue
        base_key = base_of(row, groups)
        base = groups.get(base_key, {}) if base_key else {}
        seeds = sorted(set(scores) & set(base))
        if not seeds:
            continue
        diffs = [scores[s] - base[s] for s in seeds]
        row.update(seeds=seeds, diff=summarize(diffs), wins=sum(d > 0 for d in diffs),
                   baseline={k: dict(base_key)[k] for k in ("r", "unmask", "exit_layer")})
        rows.append(row)
    rows.sort(key=lambda r: (r["dataset"], r["model"], r["finetune"], str(r["unmask"]), r["r"],
                             r["exit_layer"] or 0))
    return rows


def paired_markdown(rows: list[dict[str, Any]], against: str = "causal") -> str:
    """The rows of :func:`paired` as one Markdown table."""
    title, base = {
        "causal": ("Against the causal baseline", "r=0 without unmasking (same model, dataset, "
                   "exit layer and budget)"),
        "depth": ("Against the deepest exit layer", "the same setting at the deepest exit "
                  "layer that ran (same model, dataset, r, unmasking and budget)")}[against]
    out = [f"### {title}, paired by seed", "",
           f"Test F1 of each setting minus that of {base} in the same seed: mean ± sample "
           "standard deviation of the differences, their 95 % confidence interval "
           "(Student t), and in how many seeds the setting scored higher.", "",
           "| dataset | model | r | unmask | exit layer | against | difference | 95% CI "
           "| higher in |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        b = r["baseline"]
        vs = f"L={b['exit_layer']}" if against == "depth" else f"r={b['r']}"
        out.append(f"| {r['dataset']} | {r['model']} | {r['r']} | {r['unmask']} | "
                   f"{layer_cell(r)} | {vs} | {_fmt(r['diff'], sign=True)} | "
                   f"{_ci(r['diff'])} | {r['wins']} of {len(r['seeds'])} |")
    return "\n".join(out) + "\n"


def _fmt(s: dict[str, Any], digits: int = 2, sign: bool = False) -> str:
    if s["mean"] is None:
        return "-"
    mean = f"{s['mean']:{'+' if sign else ''}.{digits}f}"
    return mean if s["std"] is None else f"{mean} ± {s['std']:.{digits}f}"


def _ci(s: dict[str, Any]) -> str:
    if s["ci95"] is None:
        return "-"
    return f"[{s['mean'] - s['ci95']:.2f}, {s['mean'] + s['ci95']:.2f}]"


def markdown(rows: list[dict[str, Any]]) -> str:
    """Markdown tables per dataset, then the best setting per model, dataset and budget
    (training and test sentences), chosen on validation F1, never on test."""
    out = ["Test micro-F1 (%, seqeval strict IOB2): mean ± sample standard deviation over "
           "seeds, and the 95 % confidence interval of the mean (Student t).", ""]
    by_ds: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_ds[r["dataset"]].append(r)
    for ds, rs in sorted(by_ds.items()):
        out += [f"### {ds}", "",
                "| model | mode | lr | r | unmask | exit layer | train / test sents | test F1 "
                "| 95% CI | val F1 | seeds | train s |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in rs:
            out.append(f"| {r['model']} | {r['finetune']} | {lr_cell(r)} | {r['r']} | "
                       f"{r['unmask']} | {layer_cell(r)} | {r['train_sentences'] or '-'} / "
                       f"{r['test_sentences'] or '-'} | "
                       f"{_fmt(r['test_f1'])} | {_ci(r['test_f1'])} | {_fmt(r['val_f1'])} | "
                       f"{len(r['seeds'])} | {_fmt(r['train_seconds'], 0)} |")
        out.append("")
    out += ["### Best setting per model, dataset and budget (chosen on validation F1)", "",
            "| dataset | train / test sents | model | mode | lr | r | unmask | exit layer "
            "| val F1 | test F1 |", "|---|---|---|---|---|---|---|---|---|---|"]
    best: dict[tuple, dict[str, Any]] = {}

    def val(r: dict[str, Any]) -> float:
        return r["val_f1"]["mean"] if r["val_f1"]["mean"] is not None else -1.0

    for r in rows:
        k = (*budget(r), r["model"], r["finetune"] == "probe")
        if r["test_f1"]["mean"] is not None and (k not in best or val(r) > val(best[k])):
            best[k] = r
    for (ds, n_train, n_test, model, _), r in sorted(best.items()):
        out.append(f"| {ds} | {n_train or '-'} / {n_test or '-'} | {model} | {r['finetune']} | "
                   f"{lr_cell(r)} | {r['r']} | {r['unmask']} | {layer_cell(r)} | "
                   f"{_fmt(r['val_f1'])} | {_fmt(r['test_f1'])} |")
    return "\n".join(out) + "\n"


def plots(rows: list[dict[str, Any]], out: Path, bench: list[dict[str, Any]] | None = None
          ) -> list[Path]:
    """PNG plots: F1 vs r per strategy, F1 vs exit layer per r, p(k) beside F1, throughput."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    for ds in sorted({r["dataset"] for r in rows}):
        rs = [r for r in rows if r["dataset"] == ds and r["test_f1"]["mean"] is not None
              and not r.get("auto_exit")]
        tuned = [r for r in rs if r["finetune"] != "probe"]
        if tuned:
            fig, ax = plt.subplots(figsize=(6, 4))
            series: dict[tuple, list] = defaultdict(list)
            for r in tuned:
                series[(r["model"], r["finetune"], r["unmask"], r["exit_layer"],
                        r.get("lr"))].append(r)
            many_lr = {m for m in {k[0] for k in series}
                       if len({k[4] for k in series if k[0] == m}) > 1}
            for (model, ft, unmask, exit_layer, lr), pts in sorted(series.items(), key=str):
                pts.sort(key=lambda r: r["r"])
                ax.errorbar([p["r"] for p in pts], [p["test_f1"]["mean"] for p in pts],
                            yerr=[p["test_f1"]["std"] or 0 for p in pts], marker="o",
                            capsize=3,
                            label=f"{model} {ft} unmask={unmask} L={exit_layer or 'all'}"
                                  + (f" lr={lr:g}" if model in many_lr else ""))
            ax.set(xlabel="repetitions r", ylabel="test F1 (%)", title=f"{ds}: F1 against r")
            ax.legend(fontsize=6)
            made.append(save_figure(fig, out / f"{ds}_f1_vs_r.png"))
            fig, ax = plt.subplots(figsize=(6, 4))
            ax2 = ax.twinx()
            causal = [r for r in tuned if r["unmask"] == "none"]
            if causal:
                ks = sorted({r["r"] for r in causal})
                ax2.plot(ks, [k / (k + 2) for k in ks], "k--", label="p(k) = r/(r+2)")
                lines: dict[tuple, list] = defaultdict(list)
                for r in causal:
                    lines[(r["model"], r["finetune"], r["exit_layer"] or 0,
                           r.get("lr"))].append(r)
                for (model, ft, layer, _), pts in sorted(lines.items(), key=str):
                    if len(pts) > 1:  # a line needs two values of r
                        pts.sort(key=lambda r: r["r"])
                        ax.plot([p["r"] for p in pts], [p["test_f1"]["mean"] for p in pts],
                                "o-", label=f"{model} {ft} L={layer or 'all'} F1")
            ax.set(xlabel="repetitions r", ylabel="test F1 (%)",
                   title=f"{ds}: share of fully visible blocks and F1")
            ax2.set_ylabel("p(k)")
            ax.legend(loc="lower right", fontsize=7)
            ax2.legend(loc="upper left", fontsize=7)
            made.append(save_figure(fig, out / f"{ds}_visibility.png"))
        series = defaultdict(list)
        for r in rs:
            if r["exit_layer"]:
                series[(r["model"], r["finetune"], r["unmask"], r["r"], r.get("lr"))].append(r)
        series = {k: pts for k, pts in series.items() if len(pts) > 1}  # a line needs 2 layers
        if series:
            fig, ax = plt.subplots(figsize=(8.5, 4))
            for (model, ft, unmask, rep, _), pts in sorted(series.items(), key=str):
                pts.sort(key=lambda r: r["exit_layer"])
                probe = ft == "probe"  # probes thin and dashed, fine-tuned runs bold
                ax.errorbar([p["exit_layer"] for p in pts], [p["test_f1"]["mean"] for p in pts],
                            yerr=[p["test_f1"]["std"] or 0 for p in pts], capsize=3,
                            marker="." if probe else "o", ls="--" if probe else "-",
                            lw=1 if probe else 2, label=f"{model} {ft} r={rep} unmask={unmask}")
            ax.set(xlabel="exit layer", ylabel="test F1 (%)", title=f"{ds}: F1 against exit layer")
            ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1))  # beside
            made.append(save_figure(fig, out / f"{ds}_f1_vs_layer.png"))
    if bench:
        fig, ax = plt.subplots(figsize=(6, 4))
        series = defaultdict(list)
        for b in bench:
            series[(b["model"], b["repetitions"], b.get("precision") or "fp32")].append(b)
        for (model, rep, precision), pts in sorted(series.items(), key=str):
            pts.sort(key=lambda b: b["exit_layer"])
            ax.plot([p["exit_layer"] for p in pts], [p["sentences_per_second"] for p in pts],
                    marker="o", label=f"{model} r={rep}"
                    + ("" if precision == "fp32" else f" {precision}"))
        ax.set(xlabel="exit layer", ylabel="sentences / s", title="throughput against exit layer")
        ax.legend(fontsize=7)
        made.append(save_figure(fig, out / "throughput_vs_layer.png"))
    return made


def report(results: str | Path | list[str | Path], out: str | Path,
           bench: str | Path | list[str | Path] | None = None,
           notes: str | Path | None = None) -> Path:
    """Write ``OUT/results.md`` and PNG plots from results stores; returns the Markdown path.

    Args:
        results: one results store (JSONL) or several, or finished run folders (a run made
            by ``seqrep train``), read together.
        out: output folder.
        bench: ``seqrep bench --output`` JSON files (one or several, from the same machine)
            whose cut-model rows are plotted and whose speeds place settings on the frontier.
        notes: Markdown placed above the generated tables.
    """
    import json

    out = Path(out)
    stores = results if isinstance(results, list) else [results]
    records = [r for r in read_sources(stores) if r.get("kind", "run") == "run"]
    rows = group(records)
    benches = [] if bench is None else bench if isinstance(bench, list) else [bench]
    datas = [json.loads(Path(b).read_text(encoding="utf-8")) for b in benches]
    all_rows = [b for data in datas for b in data.get("rows", [])]
    bench_rows = [b for b in all_rows if b.get("mode") == "cut"]
    made = plots(rows, out, bench_rows)
    md = Path(notes).read_text(encoding="utf-8") + "\n" if notes else ""
    repeats = unique_runs(records)[1]
    if repeats:
        n = len(repeats)
        names = ", ".join(dict.fromkeys(str(r.get("source") or r.get("name") or r.get("run_id"))
                                        for r in repeats))
        md += (f"Note: {n} record{' repeats' if n == 1 else 's repeat'} a run already read "
               f"(the same run id, or a run folder holding a stored run's metrics) and "
               f"{'is' if n == 1 else 'are'} counted once: {names}.\n\n")
    md += markdown(rows)
    for against in ("causal", "depth"):
        pairs = paired(records, against)
        if pairs:
            md += "\n" + paired_markdown(pairs, against)
    from seqrep.lab.exit_choice import auto_exit_markdown, auto_exit_rows

    auto = auto_exit_markdown(auto_exit_rows(rows))
    md += "\n" + auto if auto else ""
    from seqrep.lab.bench import bench_markdown

    for data in datas:
        md += "\n" + bench_markdown(data)
    if datas:
        from seqrep.lab.frontier import frontier, frontier_markdown, frontier_plots

        points = frontier(rows, all_rows)
        if points:
            md += "\n" + frontier_markdown(points)
            made += frontier_plots(points, out)
    if made:
        md += "\n" + "\n".join(f"![{p.stem}]({p.name})" for p in made) + "\n"
    path = out / "results.md"
    write_text(path, md)
    return path
