"""What document context costs in model input, before any model runs (issue 24): rows, real
tokens and the sum of squared row lengths (the attention term) of the CoNLL-2003 test split at
sentence level and with document windows of 128, 256 and 512 subtokens, in both document
layouts (the window in every copy, or only the read words in the last: document-focus), at
r = 1, in a packaged model's tokenizer (Gemma-3-270m by default). Prints a table and, with
--output, writes it as JSON.

    python scripts/document_rows.py [--model gemma3-270m] [--output results/document-rows.json]
"""
from __future__ import annotations

import argparse
import json

from transformers import AutoTokenizer

from seqrep.config import LabelerConfig
from seqrep.data import load_corpus
from seqrep.encode.pipeline import Encoder
from seqrep.model.packaged import resolve_packaged

SETTINGS = [("sentence", 256)] + [(c, b) for b in (128, 256, 512)
                                  for c in ("document", "document-focus")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="gemma3-270m")
    ap.add_argument("-r", "--repetitions", type=int, default=1)
    ap.add_argument("--output", default=None)
    args = ap.parse_args()
    tok = AutoTokenizer.from_pretrained(resolve_packaged(args.model))
    sents = [s for s in load_corpus("conll2003", "test").sentences if len(s)]
    docs = [s.doc_id for s in sents]
    words = [s.words for s in sents]
    print(len(sents), "sentences,", len({d for d in docs if d}), "documents")
    rows = []
    for ctx, budget in SETTINGS:
        cfg = LabelerConfig(model="x", repetitions=args.repetitions, context=ctx,
                            context_tokens=budget)
        items = Encoder(tok, cfg, 0).items(words, docs=docs)
        lengths = [len(it.segment) for it in items]
        rows.append({"context": ctx, "context_tokens": budget, "rows": len(lengths),
                     "tokens": sum(lengths), "max_row": max(lengths),
                     "sum_len_squared": sum(n * n for n in lengths)})
    base = rows[0]
    for row in rows:
        row["token_ratio"] = round(row["tokens"] / base["tokens"], 3)
        row["attention_ratio"] = round(row["sum_len_squared"] / base["sum_len_squared"], 3)
        print(f"{row['context']:14s} budget {row['context_tokens']:3d}: {row['rows']:5d} rows, "
              f"{row['tokens']:7d} tokens ({row['token_ratio']:.2f}x), max row "
              f"{row['max_row']}, sum len^2 {row['attention_ratio']:.2f}x")
    if args.output:
        with open(args.output, "w") as f:
            json.dump({"model": args.model, "repetitions": args.repetitions,
                       "split": "conll2003 test", "sentences": len(sents), "rows": rows},
                      f, indent=1)


if __name__ == "__main__":
    main()
