"""PNG plots of the statistics in :mod:`seqrep.lab.stats` and of bench rows."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from seqrep.lab.cells import save_figure
from seqrep.lab.stats import PROBE


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
        tuned = [r for r in rs if r["finetune"] != PROBE]
        if tuned:
            made.append(_f1_vs_r(plt, ds, tuned, out))
            made.append(_visibility(plt, ds, tuned, out))
        layer_plot = _f1_vs_layer(plt, ds, rs, out)
        if layer_plot is not None:
            made.append(layer_plot)
    if bench:
        made.append(_throughput(plt, bench, out))
    return made


def _f1_vs_r(plt: Any, ds: str, tuned: list[dict[str, Any]], out: Path) -> Path:
    """F1 against r, one line per fine-tuned setting (its lr named where a model has several)."""
    fig, ax = plt.subplots(figsize=(6, 4))
    series: dict[tuple, list] = defaultdict(list)
    for r in tuned:
        series[(r["model"], r["finetune"], r["unmask"], r["exit_layer"],
                r.get("lr"), _doc(r))].append(r)
    many_lr = {m for m in {k[0] for k in series}
               if len({k[4] for k in series if k[0] == m}) > 1}
    for (model, ft, unmask, exit_layer, lr, doc), pts in sorted(series.items(), key=str):
        pts.sort(key=lambda r: r["r"])
        ax.errorbar([p["r"] for p in pts], [p["test_f1"]["mean"] for p in pts],
                    yerr=[p["test_f1"]["std"] or 0 for p in pts], marker="o",
                    capsize=3,
                    label=f"{model} {ft} unmask={unmask} L={exit_layer or 'all'}"
                          + (f" lr={lr:g}" if model in many_lr else "") + doc)
    ax.set(xlabel="repetitions r", ylabel="test F1 (%)", title=f"{ds}: F1 against r")
    ax.legend(fontsize=6)
    return save_figure(fig, out / f"{ds}_f1_vs_r.png")


def _visibility(plt: Any, ds: str, tuned: list[dict[str, Any]], out: Path) -> Path:
    """The share of fully visible blocks p(k) = r/(r+2) beside the causal runs' F1 against r."""
    fig, ax = plt.subplots(figsize=(6, 4))
    ax2 = ax.twinx()
    causal = [r for r in tuned if r["unmask"] == "none"]
    if causal:
        ks = sorted({r["r"] for r in causal})
        ax2.plot(ks, [k / (k + 2) for k in ks], "k--", label="p(k) = r/(r+2)")
        lines: dict[tuple, list] = defaultdict(list)
        for r in causal:
            lines[(r["model"], r["finetune"], r["exit_layer"] or 0,
                   r.get("lr"), _doc(r))].append(r)
        for (model, ft, layer, _, doc), pts in sorted(lines.items(), key=str):
            if len(pts) > 1:  # a line needs two values of r
                pts.sort(key=lambda r: r["r"])
                ax.plot([p["r"] for p in pts], [p["test_f1"]["mean"] for p in pts],
                        "o-", label=f"{model} {ft} L={layer or 'all'}{doc} F1")
    ax.set(xlabel="repetitions r", ylabel="test F1 (%)",
           title=f"{ds}: share of fully visible blocks and F1")
    ax2.set_ylabel("p(k)")
    ax.legend(loc="lower right", fontsize=7)
    ax2.legend(loc="upper left", fontsize=7)
    return save_figure(fig, out / f"{ds}_visibility.png")


def _f1_vs_layer(plt: Any, ds: str, rs: list[dict[str, Any]], out: Path) -> Path | None:
    """F1 against exit layer, one line per setting run at two layers or more (probes thin and
    dashed); ``None`` when no setting was."""
    series: dict[tuple, list] = defaultdict(list)
    for r in rs:
        if r["exit_layer"]:
            series[(r["model"], r["finetune"], r["unmask"], r["r"], r.get("lr"),
                    _doc(r))].append(r)
    series = {k: pts for k, pts in series.items() if len(pts) > 1}  # a line needs 2 layers
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(8.5, 4))
    for (model, ft, unmask, rep, _, doc), pts in sorted(series.items(), key=str):
        pts.sort(key=lambda r: r["exit_layer"])
        probe = ft == PROBE  # probes thin and dashed, fine-tuned runs bold
        ax.errorbar([p["exit_layer"] for p in pts], [p["test_f1"]["mean"] for p in pts],
                    yerr=[p["test_f1"]["std"] or 0 for p in pts], capsize=3,
                    marker="." if probe else "o", ls="--" if probe else "-",
                    lw=1 if probe else 2, label=f"{model} {ft} r={rep} unmask={unmask}{doc}")
    ax.set(xlabel="exit layer", ylabel="test F1 (%)", title=f"{ds}: F1 against exit layer")
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1))  # beside
    return save_figure(fig, out / f"{ds}_f1_vs_layer.png")


def _throughput(plt: Any, bench: list[dict[str, Any]], out: Path) -> Path:
    """Bench rows' sentences per second against exit layer, one line per model, r, precision."""
    fig, ax = plt.subplots(figsize=(6, 4))
    series: dict[tuple, list] = defaultdict(list)
    for b in bench:
        series[(b["model"], b["repetitions"], b.get("precision") or "fp32")].append(b)
    for (model, rep, precision), pts in sorted(series.items(), key=str):
        pts.sort(key=lambda b: b["exit_layer"])
        ax.plot([p["exit_layer"] for p in pts], [p["sentences_per_second"] for p in pts],
                marker="o", label=f"{model} r={rep}"
                + ("" if precision == "fp32" else f" {precision}"))
    ax.set(xlabel="exit layer", ylabel="sentences / s", title="throughput against exit layer")
    ax.legend(fontsize=7)
    return save_figure(fig, out / "throughput_vs_layer.png")


def _doc(row: dict[str, Any]) -> str:
    """A series' label suffix: `` document 256`` for document context, nothing at sentence
    level (so a sentence and a document setting are two lines, never one)."""
    from seqrep.core.contexts import context_of
    from seqrep.lab.cells import context_cell

    return f" {context_cell(row)}" if context_of(row.get("context")).documents else ""
