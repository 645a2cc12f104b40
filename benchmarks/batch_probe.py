"""How big an inference batch should be: the recipe's words/s on the whole CoNLL-2003 test
split (documents kept) for several batch budgets, under each runtime, side by side.

    python benchmarks/batch_probe.py RUN --runtimes torch compile openvino \\
        --budgets 32:512 64:4096 [--precision bf16] [--context-overlap 0.125] \\
        [--rounds 2] [--threads 2] --out results/NAME.json

Each ``SENTENCES:TOKENS`` budget closes a batch at that many sentences (with document
context, the sentences its windows label) or padded tokens, whichever comes first
(``seqrep.encode.BATCH_SENTENCES`` and ``BATCH_TOKENS`` are the defaults). For each
runtime, loaded once, every budget labels the split (``word_logits``: encode, forward,
pool; decoding is the same for all) after one warm-up pass of every budget (compiled
graphs made, caches filled); rounds interleave the budgets and the best time of each is
kept. The record holds words/s, padding (the share of padded tokens in the batches), the
batches' count and the CPU's model and flags.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run", type=Path)
    p.add_argument("--runtimes", nargs="+", default=["torch", "compile"])
    p.add_argument("--budgets", nargs="+", default=["32:512", "64:4096"])
    p.add_argument("--precision", default="bf16", choices=("fp32", "bf16"))
    p.add_argument("--context-overlap", type=float, default=None)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--sentences", type=int, default=None, help="the first N (default: all)")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)

    import torch

    from seqrep.core.runtimes import RUNTIMES, Settings
    from seqrep.data import load_corpus
    from seqrep.export import with_overlap
    from seqrep.model.device import cpu_features

    torch.set_num_threads(args.threads)
    sentences = load_corpus("conll2003", "test").sentences[: args.sentences]
    words = [list(s.words) for s in sentences]
    docs = [s.doc_id for s in sentences]
    n_words = sum(map(len, words))
    budgets = [(int(s), int(t)) for s, t in (b.split(":") for b in args.budgets)]
    rows: dict[str, dict] = {}
    for runtime in args.runtimes:
        labeler = RUNTIMES[runtime].load(args.run, Settings(
            precision=args.precision, device="cpu", threads=args.threads)).eval()
        if args.context_overlap is not None:
            with_overlap(labeler, args.context_overlap)
        items = labeler.encoder.items(words, docs=docs)
        for size, tokens in budgets:  # warm-up
            labeler.word_logits(words, size, tokens, docs=docs, items=items)
        for _ in range(args.rounds):
            for size, tokens in budgets:
                start = time.perf_counter()
                labeler.word_logits(words, size, tokens, docs=docs, items=items)
                seconds = time.perf_counter() - start
                row = rows.setdefault(f"{runtime} {size}:{tokens}", {
                    "runtime": runtime, "sentences": size, "tokens": tokens,
                    **_padding(labeler, words, size, tokens, docs, items), "seconds": []})
                row["seconds"].append(round(seconds, 2))
                row["words_per_s"] = round(n_words / min(row["seconds"]), 1)
                print(json.dumps(row), flush=True)
        del labeler
    record = {"run": str(args.run), "precision": args.precision,
              "context_overlap": args.context_overlap, "threads": args.threads,
              "sentences": len(words), "words": n_words, "cpu": cpu_features(),
              "torch": torch.__version__, "command": ["python", *sys.argv], "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def _padding(labeler, words, size, tokens, docs, items) -> dict:  # noqa: ANN001
    """The batches' count and their padded share, as the labeling makes them."""
    real = padded = count = 0
    for batch, _ in labeler.batches(words, size, tokens, docs, items):
        real += int(batch.attention_mask.sum())
        padded += batch.attention_mask.numel()
        count += 1
    return {"batches": count, "padding": round(1 - real / padded, 4)}


if __name__ == "__main__":
    main()
