"""Where a labeler's time goes on this CPU: each stage of labeling a test set, the operators
of its forward pass, and the forward pass's share of the matrix-multiply ceiling.

    python benchmarks/profile_recipe.py RUN --runtime torch --precision bf16 \\
        [--context-overlap X] [--sentences 1000] [--threads 2] --out results/NAME.json

RUN is a run or labeler folder (the recipe's: runs/recipe-focus-bf16-e2). Stages, timed one
after another on the first ``--sentences`` sentences of CoNLL-2003's test split, documents
kept: reading the split; encoding (rows, plan and padded batches, in seqrep's default
budget); the backbone's forward pass; pooling the read states and the head; decoding (the
run's decoding); writing the ``word gold predicted`` lines. Operators: torch's profiler
over the forward passes (torch and compile runtimes), or OpenVINO's per-node counters
(openvino runtime), summed by operator type. The ceilings are the fastest ``x @ w.T`` of
the backbone's own Linear shapes in fp32 and bf16 at the batch's token count. The record
holds the CPU's flags and the command.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any


def _stage(times: dict[str, float], name: str, start: float) -> float:
    now = time.perf_counter()
    times[name] = times.get(name, 0.0) + now - start
    return now


def _ov_operators(labeler: Any, batches: list[Any]) -> dict[str, float]:
    """Milliseconds per OpenVINO node type over ``batches`` (its PERF_COUNT counters), the
    graph converted and compiled as the labeler's own, with the counters on."""
    from seqrep.export.openvino import bf16_products

    model = labeler._convert(batches[0])
    if labeler.ov_precision == "bf16":
        bf16_products(model)
    profiled = labeler._compile(model, PERF_COUNT=True)
    request = profiled.create_infer_request()
    spent: Counter = Counter()
    for batch in batches:
        request.infer([x.numpy() for x in labeler._inputs(batch)])
        for node in request.profiling_info:
            key = f"{node.node_type} ({node.exec_type})"
            spent[key] += node.real_time.total_seconds() * 1000
    return dict(spent.most_common())


def _torch_operators(labeler: Any, batches: list[Any]) -> dict[str, float]:
    """Milliseconds of own CPU time per aten operator over the forward passes."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU]) as prof:
        for batch in batches:
            labeler.hidden(batch)
    rows = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    return {e.key: round(e.self_cpu_time_total / 1000, 2) for e in rows[:25]}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run", type=Path)
    p.add_argument("--runtime", default="torch", choices=("torch", "openvino", "compile"))
    p.add_argument("--context-overlap", type=float, default=None,
                   help="the document windows' overlap (default: the run's)")
    p.add_argument("--precision", default="bf16", choices=("fp32", "bf16"))
    p.add_argument("--sentences", type=int, default=1000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    from seqrep.core.runtimes import RUNTIMES, Settings
    from seqrep.data import load_corpus
    from seqrep.data.decode import decode
    from seqrep.encode import BATCH_SENTENCES, BATCH_TOKENS
    from seqrep.lab.bench_rows import matmul_ceiling
    from seqrep.lab.speed import flops_per_token, forward_flops
    from seqrep.model.device import cpu_features

    labeler = RUNTIMES[args.runtime].load(args.run, Settings(
        precision=args.precision, device="cpu", threads=args.threads)).eval()
    if args.context_overlap is not None:
        from seqrep.export import with_overlap

        with_overlap(labeler, args.context_overlap)
    times: dict[str, float] = {}
    t = time.perf_counter()
    sentences = load_corpus("conll2003", "test").sentences[: args.sentences]
    words = [list(s.words) for s in sentences]
    docs = [s.doc_id for s in sentences]
    t = _stage(times, "read", t)
    items = labeler.encoder.items(words, docs=docs)
    batches = [(b, members) for b, members in labeler.batches(
        words, BATCH_SENTENCES, BATCH_TOKENS, docs, items)]
    t = _stage(times, "encode", t)
    logits_of = []
    with torch.no_grad():
        for batch, members in batches:
            t = time.perf_counter()
            hidden, _ = labeler.hidden(batch)
            t = _stage(times, "forward", t)
            logits_of.append((labeler.head(labeler.pool(hidden, batch)), members))
            t = _stage(times, "pool_and_head", t)
    from seqrep.encode.pipeline import per_sentence

    t = time.perf_counter()
    per = per_sentence(words, logits_of)
    tags = [decode(x, labeler.config.labels, labeler.config.decoding) for x in per]
    t = _stage(times, "decode", t)
    lines = "".join(f"{w} {g} {p}\n" for s, ts in zip(sentences, tags)
                    for w, g, p in zip(s.words, s.tags, ts))
    Path("/dev/null").write_text(lines)
    _stage(times, "write", t)

    lengths = [int(n) for b, _ in batches for n in b.attention_mask.sum(1)]
    padded = sum(b.input_ids.numel() for b, _ in batches)
    n_words = sum(map(len, words))
    flops = forward_flops(lengths, flops_per_token(labeler.backbone))
    tokens = max(b.input_ids.numel() for b, _ in batches)
    ceilings = {p: matmul_ceiling(str(labeler.config.model), tokens, args.threads,
                                  precision=p) for p in ("fp32", "bf16")}
    operators = (_ov_operators if args.runtime == "openvino" else _torch_operators)(
        labeler, [b for b, _ in batches[:8]])
    total = sum(times.values())
    ceiling = ceilings[args.precision]["gflops"]
    record = {
        "run": str(args.run), "runtime": args.runtime, "precision": args.precision,
        "context_overlap": labeler.config.context_overlap,
        "threads": args.threads, "sentences": len(words), "words": n_words,
        "batches": len(batches), "tokens": sum(lengths), "padded_tokens": padded,
        "tokens_per_word": round(sum(lengths) / n_words, 3),
        "padding_share": round(1 - sum(lengths) / padded, 4),
        "seconds": {k: round(v, 3) for k, v in times.items()},
        "share": {k: round(v / total, 4) for k, v in times.items()},
        "words_per_second_end_to_end": round(n_words / total, 1),
        "words_per_second_forward": round(n_words / times["forward"], 1),
        "forward_gflops_per_second": round(flops / times["forward"] / 1e9, 1),
        "gflop_per_word": round(flops / n_words / 1e9, 4),
        "ceilings_gflops": {p: c["gflops"] for p, c in ceilings.items()},
        "share_of_ceiling": round(flops / times["forward"] / 1e9 / ceiling, 4),
        "operators_ms_first_8_batches": operators,
        "cpu": cpu_features(), "torch": torch.__version__,
        "command": ["python", "benchmarks/profile_recipe.py", *(argv or sys.argv[1:])],
    }
    if args.runtime == "openvino":
        import openvino

        record["openvino"] = openvino.__version__
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: record[k] for k in ("seconds", "share", "tokens_per_word",
                                              "padding_share", "words_per_second_end_to_end",
                                              "forward_gflops_per_second", "share_of_ceiling",
                                              "ceilings_gflops")}, indent=1))


if __name__ == "__main__":
    main()
