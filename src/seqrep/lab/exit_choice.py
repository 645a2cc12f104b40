"""``--exit-layer auto`` against the grid: does the layer the frozen-probe sweep picks match
the best fine-tuned exit layer of the same setting?

Rows are those of :func:`seqrep.lab.stats.group`; an auto row (``auto_exit``) is compared
with every fixed-layer row that differs from it only in the exit layer.
"""

from __future__ import annotations

from typing import Any

from seqrep.lab.stats import PROBE

_SAME = ("rest", "model", "dataset", "finetune", "r", "unmask", "train_sentences",
         "test_sentences", "epochs", "lr", "context", "context_tokens", "context_separator",
         "batch_rows")


def auto_exit_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per auto-exit setting with fixed-layer runs beside it: ``dataset, model, r,
    unmask, chosen, auto_f1, seeds, layers, best_test_layer, best_test_f1, best_val_layer,
    chosen_f1`` (the fixed run's test F1 at the chosen layer, or None when it did not run)."""
    out = []
    for a in rows:
        if not a.get("auto_exit") or a["finetune"] == PROBE or a["test_f1"]["mean"] is None:
            continue
        fixed = [r for r in rows if not r.get("auto_exit") and isinstance(r["exit_layer"], int)
                 and r["test_f1"]["mean"] is not None
                 and all(r.get(k) == a.get(k) for k in _SAME)]
        if not fixed:
            continue
        best_test = max(fixed, key=lambda r: r["test_f1"]["mean"])
        best_val = max(fixed, key=lambda r: r["val_f1"]["mean"])
        at_chosen = next((r for r in fixed if r["exit_layer"] == a["exit_layer"]), None)
        out.append({"dataset": a["dataset"], "model": a["model"], "r": a["r"],
                    "unmask": a["unmask"], "chosen": a["exit_layer"],
                    "auto_f1": a["test_f1"]["mean"], "seeds": len(a["seeds"]),
                    "layers": sorted(r["exit_layer"] for r in fixed),
                    "best_test_layer": best_test["exit_layer"],
                    "best_test_f1": best_test["test_f1"]["mean"],
                    "best_val_layer": best_val["exit_layer"],
                    "chosen_f1": None if at_chosen is None else at_chosen["test_f1"]["mean"]})
    return sorted(out, key=lambda r: (r["dataset"], r["model"], r["r"], str(r["unmask"])))


def auto_exit_markdown(rows: list[dict[str, Any]]) -> str:
    """The rows of :func:`auto_exit_rows` as a Markdown table (empty string if none)."""
    if not rows:
        return ""
    out = ["### The exit layer `--exit-layer auto` picks, against the grid's layers", "",
           "The auto layer is the best frozen linear probe on validation (one forward pass "
           "over 1,000 training sentences); the grid's layers are the same setting "
           "fine-tuned at fixed exit layers. Test F1 means over seeds.", "",
           "| dataset | model | r | unmask | auto layer | test F1 (auto) | seeds | grid layers "
           "| best grid layer (test F1) | best by validation | auto = best? |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['dataset']} | {r['model']} | {r['r']} | {r['unmask']} | "
                   f"{r['chosen']} | {r['auto_f1']:.2f} | {r['seeds']} | "
                   f"{', '.join(map(str, r['layers']))} | {r['best_test_layer']} "
                   f"({r['best_test_f1']:.2f}) | {r['best_val_layer']} | "
                   f"{'yes' if r['chosen'] == r['best_test_layer'] else 'no'} |")
    return "\n".join(out) + "\n"
