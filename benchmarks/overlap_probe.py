"""Fewer tokens a word without retraining: the recipe's test F1, tokens a word and words/s
when its document windows overlap less (or are longer) at labeling time.

    python benchmarks/overlap_probe.py RUN --layouts 256:0.5 256:0.25 256:0 \\
        [--runtime openvino|compile|torch] [--precision bf16] [--threads 2] --out results/NAME.json

RUN is the recipe's run folder (trained with ``context_tokens=256`` and
``context_overlap=0.5``). Each ``WINDOW:OVERLAP`` sets the window (subtokens a copy) and the
share of it consecutive windows repeat (``--context-overlap``), then labels the whole
CoNLL-2003 test split with its documents, on one labeler loaded once; F1 is seqeval's strict
IOB2 span F1 (not the run's own numbers), tokens a word count every row's tokens (both
copies) over the split's words, and words/s is the labeling time of the split (encode,
forward, pool, decode) after one warm-up pass of the first layout.
The changed share compares each layout's tags with the first layout's. Rounds interleave
the layouts (``--rounds``), the best time of each is kept.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run", type=Path)
    p.add_argument("--layouts", nargs="+", default=["256:0.5", "256:0.25", "256:0"])
    p.add_argument("--runtime", default="openvino", choices=("torch", "compile", "openvino"))
    p.add_argument("--precision", default="bf16", choices=("fp32", "bf16"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)

    import sys

    import torch
    from seqeval.metrics import f1_score
    from seqeval.scheme import IOB2

    from seqrep.core.runtimes import RUNTIMES, Settings
    from seqrep.data import load_corpus
    from seqrep.model.device import cpu_features

    torch.set_num_threads(args.threads)
    labeler = RUNTIMES[args.runtime].load(args.run, Settings(
        precision=args.precision, device="cpu", threads=args.threads)).eval()
    sentences = load_corpus("conll2003", "test").sentences
    words = [list(s.words) for s in sentences]
    gold = [list(s.tags) for s in sentences]
    docs = [s.doc_id for s in sentences]
    n_words = sum(map(len, words))
    trained = (labeler.encoder.context_tokens, labeler.encoder.context_overlap)

    def label(window: int, overlap: float) -> tuple[list[list[str]], float, int]:
        labeler.encoder.context_overlap = overlap  # as --context-overlap sets it
        labeler.encoder.context_tokens = window
        start = time.perf_counter()
        tags = labeler.predict_words(words, docs=docs, batch_size=32)
        seconds = time.perf_counter() - start
        items = labeler.encoder.items(words, docs=docs)
        tokens = sum(len(item.segment.input_ids) for item in items)
        return [list(r["tags"]) for r in tags], seconds, tokens

    layouts = [(int(w), float(o)) for w, o in (x.split(":") for x in args.layouts)]
    label(*layouts[0])  # warm-up: graph compiled, caches filled
    rows: dict[str, dict] = {}
    first: list[list[str]] | None = None
    for _ in range(args.rounds):
        for window, overlap in layouts:
            tags, seconds, tokens = label(window, overlap)
            key = f"{window}:{overlap}"
            if first is None:
                first = tags
            flat = [t for s in tags for t in s]
            base = [t for s in first for t in s]
            row = rows.setdefault(key, {
                "window": window, "overlap": overlap,
                "f1": round(100 * f1_score(gold, tags, mode="strict", scheme=IOB2), 2),
                "tokens_per_word": round(tokens / n_words, 3),
                "changed_vs_first": round(sum(a != b for a, b in zip(flat, base))
                                          / len(flat), 5),
                "seconds": []})
            row["seconds"].append(round(seconds, 2))
            row["words_per_s"] = round(n_words / min(row["seconds"]), 1)
            print(json.dumps(row), flush=True)
    record = {"run": str(args.run), "runtime": args.runtime, "precision": args.precision,
              "threads": args.threads, "sentences": len(words), "words": n_words,
              "trained_layout": {"window": trained[0], "overlap": trained[1]},
              "cpu": cpu_features(), "command": ["python", *sys.argv], "layouts": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
