"""Markdown tables of the report: the statistics of :mod:`seqrep.lab.stats` and the rows of a
``seqrep bench`` JSON file."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from seqrep.core.contexts import DOCUMENT, context_of
from seqrep.lab.cells import budget, context_cell, has_document, layer_cell, lr_cell, unmask_of
from seqrep.lab.stats import PROBE


def paired_markdown(rows: list[dict[str, Any]], against: str = "causal") -> str:
    """The rows of :func:`paired` as one Markdown table."""
    title, base = {
        "causal": ("Against the causal baseline", "r=0 without unmasking (same model, dataset, "
                   "exit layer and budget)"),
        "depth": ("Against the deepest exit layer", "the same setting at the deepest exit "
                  "layer that ran (same model, dataset, r, unmasking and budget)"),
        "context": ("Document against sentence context", "the same setting at sentence "
                    "context (same model, dataset, r, unmasking, exit layer, budget and "
                    "training sentences): document minus sentence")}[against]
    ctx = has_document(rows)
    out = [f"### {title}, paired by seed", "",
           f"Test F1 of each setting minus that of {base} in the same seed: mean ± sample "
           "standard deviation of the differences, their 95 % confidence interval "
           "(Student t), and in how many seeds the setting scored higher.", "",
           "| dataset | model | r | unmask | exit layer | " + ("context | " if ctx else "")
           + "against | difference | 95% CI | higher in |",
           "|---|---|---|---|---|---|---|---|---|" + ("---|" if ctx else "")]
    for r in rows:
        b = r["baseline"]
        vs = {"depth": f"L={b['exit_layer']}", "context": context_of(b.get("context")).name
              }.get(against, f"r={b['r']}")
        out.append(f"| {r['dataset']} | {r['model']} | {r['r']} | {r['unmask']} | "
                   f"{layer_cell(r)} | " + (f"{context_cell(r)} | " if ctx else "")
                   + f"{vs} | {_fmt(r['diff'], sign=True)} | "
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
    ctx = has_document(rows)  # the context column, where a document run is there
    head, rule = ("context | ", "---|") if ctx else ("", "")

    def cell(r: dict[str, Any]) -> str:
        return f"{context_cell(r)} | " if ctx else ""

    for ds, rs in sorted(by_ds.items()):
        out += [f"### {ds}", "",
                "| model | mode | lr | r | unmask | exit layer | " + head + "train / test sents "
                "| test F1 | 95% CI | val F1 | seeds | train s |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|" + rule]
        for r in rs:
            out.append(f"| {r['model']} | {r['finetune']} | {lr_cell(r)} | {r['r']} | "
                       f"{r['unmask']} | {layer_cell(r)} | " + cell(r)
                       + f"{r['train_sentences'] or '-'} / "
                       f"{r['test_sentences'] or '-'} | "
                       f"{_fmt(r['test_f1'])} | {_ci(r['test_f1'])} | {_fmt(r['val_f1'])} | "
                       f"{len(r['seeds'])} | {_fmt(r['train_seconds'], 0)} |")
        out.append("")
    out += ["### Best setting per model, dataset and budget (chosen on validation F1)"
            + (", at each context" if ctx else ""), "",
            "| dataset | train / test sents | model | mode | lr | r | unmask | exit layer | "
            + head + "val F1 | test F1 |", "|---|---|---|---|---|---|---|---|---|---|" + rule]
    best: dict[tuple, dict[str, Any]] = {}

    def val(r: dict[str, Any]) -> float:
        return r["val_f1"]["mean"] if r["val_f1"]["mean"] is not None else -1.0

    for r in rows:
        k = (*budget(r), r["model"], r["finetune"] == PROBE, context_of(r.get("context")).name)
        if r["test_f1"]["mean"] is not None and (k not in best or val(r) > val(best[k])):
            best[k] = r
    for (ds, n_train, n_test, model, *_), r in sorted(best.items()):
        out.append(f"| {ds} | {n_train or '-'} / {n_test or '-'} | {model} | {r['finetune']} | "
                   f"{lr_cell(r)} | {r['r']} | {r['unmask']} | {layer_cell(r)} | " + cell(r)
                   + f"{_fmt(r['val_f1'])} | {_fmt(r['test_f1'])} |")
    return "\n".join(out) + "\n"


def _context(ratio: dict[str, Any]) -> str:
    """A bench row's or ratio's context: ``document 128`` where it recorded its window, else
    the name (records from before the focus layout name none: they are document)."""
    name = ratio.get("context", DOCUMENT.name)
    return f"{name} {ratio['context_tokens']}" if ratio.get("context_tokens") else name


def bench_markdown(data: dict[str, Any]) -> str:
    """The rows of a ``seqrep bench`` JSON file as a Markdown table, with the speed-ups."""
    cfg = data.get("config", {})
    ceilings = data.get("ceilings") or {"fp32": data.get("matmul_gflops")}
    rates = ", ".join(f"{p} {g} GFLOP/s" for p, g in ceilings.items())
    out = ["### Inference benchmark", "",
           f"{cfg.get('sentences')} sentences of {cfg.get('dataset')} {cfg.get('split')}, "
           f"batches of at most {cfg.get('batch_size')} sentences and {cfg.get('max_tokens')} "
           f"padded tokens, sorted by length; the fastest of {cfg.get('repeats', 1)} passes. "
           f"Ceilings ({rates}): the fastest rate measured in each precision on the "
           "model's own Linear products for one full batch"
           f"{' (' + ', '.join(data['matmul_shapes']) + ')' if data.get('matmul_shapes') else ''}"
           "; ONNX Runtime rows are set against the fp32 ceiling. "
           "The FLOPs count only real tokens, not padding. "
           "`full_hidden_states` is the authors' way to an early-exit state: the whole network "
           "with every hidden state, then layer L.", "",
           "| model | mode | precision | r | exit layer | layers run | sent/s | tokens/s "
           "| ms/sent (alone) | padding | GFLOP/sent | share of ceiling | peak MB |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for b in data.get("rows", []):
        context = context_of(b.get("context"))
        unmask = unmask_of(b)
        mode = b["mode"] + (f", {_context(b)}" if context.documents else "") \
            + ("" if unmask == "none" else f", unmask {unmask}")
        out.append(f"| {b['model']} | {mode} | {b.get('precision') or 'fp32'} | "
                   f"{b['repetitions']} | {b['exit_layer'] or 'all'} | {b['layers_computed']} | "
                   f"{b['sentences_per_second']:.1f} | {b['tokens_per_second']:.0f} | "
                   f"{b['latency_ms']:.0f} | {100 * b['padding_waste']:.1f}% | "
                   f"{b['flops_per_sentence'] / 1e9:.2f} | "
                   f"{100 * b.get('share_of_ceiling', 0):.0f}% | {b['peak_memory_mb']:.0f} |")
    if data.get("speedups"):
        out += ["", "| r | exit layer | layers / deepest | time / deepest | speed-up vs deepest "
                "| speed-up vs full_hidden_states | same states |",
                "|---|---|---|---|---|---|---|"]
    for x in data.get("speedups", []):
        out.append(f"| {x['repetitions']} | {x['exit_layer']} | {x['layer_share']:.2f} | "
                   f"{x['time_share']:.2f} | {x['speedup_vs_deepest']:.2f} | "
                   f"{x.get('speedup_vs_full_forward', '-')} | {x.get('same_states', '-')} |")
    if data.get("precision_speedups"):
        out += ["", "| precision | r | exit layer | speed-up vs PyTorch fp32 "
                "| exit states' checksum vs fp32 |", "|---|---|---|---|---|"]
    for x in data.get("precision_speedups", []):
        out.append(f"| {x['precision']} | {x['repetitions']} | {x['exit_layer']} | "
                   f"{x['speedup_vs_fp32']:.2f} | {100 * x['checksum_rel_diff']:.3g}% |")
    ratios = data.get("context_ratios", [])
    # a column for the context once a bench measured more than one with documents (records
    # from before the focus layout name none: they are document)
    named = any(x.get("context", DOCUMENT.name) != DOCUMENT.name or x.get("context_tokens")
                for x in ratios)
    if ratios:
        out += ["", "| model | mode | precision | r | exit layer |" + " context |" * named
                + f" {'context' if named else 'document'} / sentence sent/s "
                f"| {'context' if named else 'document'} / sentence tokens |",
                "|---|---|---|---|---|---|---|" + "---|" * named]
    for x in ratios:
        out.append(f"| {x['model']} | {x['mode']} | {x['precision']} | {x['repetitions']} | "
                   f"{x['exit_layer'] or 'all'} |"
                   + f" {_context(x)} |" * named
                   + f" {x['speed_ratio']:.2f} | {x['token_ratio']:.2f} |")
    if data.get("unmask_ratios"):
        out += ["", "| model | precision | context | r | exit layer | unmask "
                "| unmasked / causal sent/s |", "|---|---|---|---|---|---|---|"]
    for x in data.get("unmask_ratios", []):
        out.append(f"| {x['model']} | {x['precision']} | {_context(x)} | {x['repetitions']} "
                   f"| {x['exit_layer'] or 'all'} | {x['unmask']} | {x['speed_ratio']:.2f} |")
    return "\n".join(out) + "\n"
