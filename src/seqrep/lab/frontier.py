"""The accuracy/speed frontier: test F1 against inference sentences/s for every fine-tuned
setting of a results store, with the Pareto-optimal ones marked.

Speed comes from a ``seqrep bench`` JSON measured on the same machine: a setting is matched
to the bench row of its model, r and exit layer (encoders: the encoder row). A setting is
Pareto-optimal when no other setting of its budget (the same dataset, number of training
sentences and test set) is at least as accurate and as fast and better in one of the two:
settings trained on more sentences, or scored on another test set, do not push it off.
Where a setting ran at several learning rates (a sweep), only the rate with the best
validation F1 stands on the frontier: the choice is made on validation, never on test.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from seqrep.config import LabelerConfig
from seqrep.core.contexts import context_of
from seqrep.lab.cells import (
    budget,
    context_cell,
    has_document,
    layer_cell,
    lr_cell,
    save_figure,
    unmask_of,
)
from seqrep.lab.stats import PROBE

DEFAULT_MODE = LabelerConfig.finetune  # a label names the fine-tuning mode unless it is this
DEFAULT_WINDOW = LabelerConfig.context_tokens  # subtokens per copy of a document row
UNMASKED_NOTE = (" An unmasked setting whose speed reads \"(causal)\" was not timed unmasked: "
                 "it stands at the speed measured for its model, r and exit layer without "
                 "unmasking, an assumption (unmasking changes which positions attend, not the "
                 "work), not a measurement; `seqrep bench --unmask none,full` times both.")


def _matches(b: dict[str, Any], row: dict[str, Any], unmask: str) -> bool:
    """Whether bench row ``b`` times setting ``row`` (at fp32) with ``unmask``."""
    if Path(str(b["model"])).name != row["model"] or (b.get("precision") or "fp32") != "fp32":
        return False  # the frontier is drawn at the default precision (fp32 on this CPU)
    context = context_of(row.get("context"))
    if context_of(b.get("context")) != context:
        return False  # document rows are longer: a sentence-level speed is not theirs
    if context.documents and _window(b) != _window(row):
        return False  # another window makes other rows: its speed is not this setting's
    if b["mode"] == "encoder":
        return True
    return (b["mode"] == "cut" and b["repetitions"] == row["r"]
            and b["exit_layer"] == row["exit_layer"] and unmask_of(b) == unmask)


def _window(row: dict[str, Any]) -> int:
    """A document row's subtokens per copy; bench rows written before they recorded it ran at
    the labeler's default."""
    return int(row.get("context_tokens") or DEFAULT_WINDOW)


def bench_speed(row: dict[str, Any], bench: list[dict[str, Any]]) -> float | None:
    """The fp32 sentences/s of ``bench`` rows for a setting (``model``: the model's folder
    name, ``r``, ``exit_layer``, ``context``, ``unmask``): its encoder row, or its cut's (an
    unmasked setting's own row where the bench timed it, ``--unmask``, else the causal row's:
    see :func:`speed_assumed`); None if none."""
    unmask = unmask_of(row)
    for want in dict.fromkeys((unmask, "none")):
        for b in bench:
            if _matches(b, row, want):
                return float(b["sentences_per_second"])
    return None


def speed_assumed(row: dict[str, Any], bench: list[dict[str, Any]]) -> bool:
    """Whether an unmasked setting stands at its causal row's speed because ``bench`` did not
    time it unmasked."""
    unmask = unmask_of(row)
    return unmask != "none" and not any(_matches(b, row, unmask) for b in bench)


def frontier(rows: list[dict[str, Any]], bench: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fine-tuned settings (rows of :func:`seqrep.lab.stats.group`) with a measured speed:
    ``dataset, model, finetune, r, unmask, exit_layer, f1, f1_std, seeds,
    sentences_per_second, pareto``, fastest first within each budget; of a learning-rate
    sweep, the rate best on validation (``swept``: how many rates it was chosen from).
    An unmasked setting takes its own bench row where one was timed (``seqrep bench
    --unmask``), else the speed of its model, r and exit layer without unmasking
    (``speed_assumed``), an assumption: unmasking changes which positions attend, not the
    work (batches are padded, so attention always runs with a mask)."""
    points = []
    for r in rows:
        if r["finetune"] == PROBE or r["test_f1"]["mean"] is None:
            continue
        speed = bench_speed(r, bench)
        if speed is None:
            continue
        points.append({k: r.get(k) for k in ("dataset", "model", "finetune", "r", "unmask",
                                             "exit_layer", "auto_exit", "lr",
                                             "train_sentences", "test_sentences", "epochs",
                                             "context", "context_tokens",
                                             "context_separator", "batch_rows")}
                      | {"speed_assumed": speed_assumed(r, bench),
                         "f1": r["test_f1"]["mean"], "f1_std": r["test_f1"]["std"],
                         "val_f1": r.get("val_f1", {}).get("mean") or 0.0,
                         "seeds": len(r["seeds"]), "sentences_per_second": speed})
    points = _chosen_on_validation(points)
    for ps in _budgets(points).values():
        for p in ps:
            p["pareto"] = not any(
                q is not p and q["f1"] >= p["f1"]
                and q["sentences_per_second"] >= p["sentences_per_second"]
                and (q["f1"] > p["f1"] or q["sentences_per_second"] > p["sentences_per_second"])
                for q in ps)
    return sorted(points, key=lambda p: (*budget(p), -p["sentences_per_second"]))


def _chosen_on_validation(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Of settings equal in all but the learning rate, the one best on validation."""
    sweeps: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for p in points:
        sweeps[tuple((k, str(v)) for k, v in sorted(p.items())
                     if k not in ("lr", "f1", "f1_std", "val_f1", "seeds",
                                  "sentences_per_second", "speed_assumed"))].append(p)
    chosen = []
    for sweep in sweeps.values():
        best = max(sweep, key=lambda p: p["val_f1"])
        chosen.append({**best, "swept": len(sweep)})
    return chosen


def _budgets(points: list[dict[str, Any]]) -> dict[tuple, list[dict[str, Any]]]:
    by: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for p in points:
        by[budget(p)].append(p)
    return by


def frontier_markdown(points: list[dict[str, Any]]) -> str:
    """The frontier as a table per dataset (Pareto-optimal settings in bold)."""
    if not points:
        return ""
    ctx = has_document(points)
    out = ["### Accuracy against speed", "",
           "Test F1 (mean over seeds) against inference sentences/s measured by `seqrep "
           "bench` on the same machine; **bold**: Pareto-optimal within its budget (nothing "
           "else trained on as many sentences and scored on the same test sentences is at "
           "least as accurate and as fast). A learning rate marked \"of N\" was chosen on "
           "validation among the N of a sweep." + (UNMASKED_NOTE if any(
               p.get("speed_assumed") for p in points) else ""), "",
           "| dataset | train sents | test sents | model | mode | lr | epochs | r | exit layer "
           "| " + ("context | " if ctx else "") + "test F1 | seeds | sentences/s | Pareto |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if ctx else "")]
    for p in points:
        cells = [p["dataset"], str(p["train_sentences"] or "-"),
                 str(p.get("test_sentences") or "-"), p["model"], _mode(p),
                 _lr(p), str(p.get("epochs") or "-"),
                 str(p["r"]),
                 layer_cell(p), *([context_cell(p)] if ctx else []), f"{p['f1']:.2f}",
                 str(p["seeds"]),
                 f"{p['sentences_per_second']:.1f}"
                 + (" (causal)" if p.get("speed_assumed") else ""),
                 "yes" if p["pareto"] else ""]
        if p["pareto"]:
            cells = [f"**{c}**" if c else c for c in cells]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def _mode(p: dict[str, Any]) -> str:
    """The mode cell: the fine-tuning (and teacher), and the unmasking where there is one."""
    unmask = unmask_of(p)
    return p["finetune"] if unmask == "none" else f"{p['finetune']}, unmask {unmask}"


def _lr(p: dict[str, Any]) -> str:
    swept = f" (of {p['swept']})" if p.get("lr") is not None and p.get("swept", 1) > 1 else ""
    return lr_cell(p) + swept


def frontier_plots(points: list[dict[str, Any]], out: Path) -> list[Path]:
    """One PNG per dataset: F1 against sentences/s (log scale), one colour and frontier
    line per budget."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    made = []
    models = sorted({p["model"] for p in points})  # one marker per model in every figure
    by_ds: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in points:
        by_ds[p["dataset"]].append(p)
    for ds, ps in sorted(by_ds.items()):
        fig, ax = plt.subplots(figsize=(10, 5))
        budgets = sorted(_budgets(ps))
        for p in ps:  # colour: the budget; marker: the model; a label only where Pareto
            ax.scatter(p["sentences_per_second"], p["f1"], s=70 if p["pareto"] else 22,
                       color=f"C{budgets.index(budget(p)) % 10}",
                       marker=MARKERS[models.index(p["model"]) % len(MARKERS)],
                       edgecolors="black" if p["pareto"] else "none", zorder=3)
        handles = []
        for i, b in enumerate(budgets):
            best = sorted((p for p in ps if p["pareto"] and budget(p) == b),
                          key=lambda p: p["sentences_per_second"])
            handles += ax.plot([p["sentences_per_second"] for p in best],
                               [p["f1"] for p in best], f"C{i % 10}--", lw=1,
                               label=f"frontier: {b[1] or '?'} train / {b[2] or '?'} test "
                                     "sentences")
        shown = {p["model"] for p in ps}
        handles += [ax.scatter([], [], color="grey", marker=MARKERS[i % len(MARKERS)],
                               label=m) for i, m in enumerate(models) if m in shown]
        ax.set_xscale("log")  # plain numbers at 1, 2, 3 and 5 of each decade
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(FuncFormatter(
            lambda v, _: f"{v:g}" if f"{v:.0e}"[0] in "235" else ""))
        ax.set_xlabel("inference sentences/s (seqrep bench, this machine)")
        ax.set_ylabel("test F1 (%)")
        ax.set_title(f"{ds}: accuracy against speed (labelled: the Pareto-optimal settings; "
                     "every setting is in the table)", fontsize=10)
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7)
        fig.tight_layout()  # the axes' final size, before the labels are fitted into it
        _place_labels(fig, ax, [p for p in ps if p["pareto"]])
        made.append(save_figure(fig, out / f"{ds}_frontier.png"))
    return made


def _place_labels(fig: Any, ax: Any, points: list[dict[str, Any]]) -> list[Any]:
    """Label each point at the first of a few offsets whose box overlaps no label placed
    before it (nor leaves the axes); the most accurate points choose first. Returns the
    labels' boxes in display coordinates."""
    renderer = fig.canvas.get_renderer()
    placed: list[Any] = []
    inside = ax.get_window_extent(renderer)
    for p in sorted(points, key=lambda p: -p["f1"]):
        for i, (dx, dy, ha) in enumerate(OFFSETS):
            note = ax.annotate(_short(p), (p["sentences_per_second"], p["f1"]), fontsize=7,
                               xytext=(dx, dy), textcoords="offset points", ha=ha)
            box = note.get_window_extent(renderer)
            fits = (box.x0 >= inside.x0 and box.x1 <= inside.x1 and box.y0 >= inside.y0
                    and box.y1 <= inside.y1)
            if i == len(OFFSETS) - 1 or fits and not any(box.overlaps(b) for b in placed):
                break  # free, or nowhere is: then the last offset, overlapping
            note.remove()
        placed.append(box)
    return placed


OFFSETS = [(5, 5, "left"), (5, -11, "left"), (-5, 5, "right"), (-5, -11, "right"),
           (5, 14, "left"), (5, -20, "left"), (-5, 14, "right"), (-5, -20, "right")]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def _short(p: dict[str, Any]) -> str:
    """A point's label: the model, its r and exit layer (none for an encoder), the mode
    where it is not the default (full fine-tuning), document context where it read it, and
    the learning rate where one was chosen."""
    if p["exit_layer"] is None and not p["r"]:  # an encoder, or a whole decoder at r=0
        core = p["model"]
    else:
        core = f"{p['model']} r={p['r']} L={layer_cell(p)}"
    mode = "" if _mode(p) == DEFAULT_MODE else f" {_mode(p)}"
    lr = f" lr={lr_cell(p)}" if p.get("swept", 1) > 1 else ""
    context = f" {context_cell(p)}" if context_of(p.get("context")).documents else ""
    return core + mode + context + lr
