"""How long cutting one long document into windows takes (issue 37 item 7): the seconds of
:func:`seqrep.encode.document.encode_document` (windows, which window reads each word, the
rows) on synthetic documents of 10,000 to 1,000,000 words, before any model runs. Word
lengths are drawn from 1-3 subtokens (most words of English in a byte-level BPE), sentences
of 20 words, r = 1, windows of 256 subtokens. Prints a table and, with --output, writes it
as JSON. Linear work shows as a constant microseconds-per-word column.

    python scripts/document_windows.py [--words 10000,100000,1000000] [--output FILE.json]
"""
from __future__ import annotations

import argparse
import json
import platform
import random
import time

from seqrep.encode.document import encode_document
from seqrep.encode.repeat import RepeatSpec


def document(words: int, seed: int = 0) -> list[list[list[int]]]:
    """``words`` words in sentences of 20, each word 1-3 made-up subtoken ids."""
    rng = random.Random(seed)
    ids = [[rng.randrange(100, 30000)] * rng.choice((1, 1, 2, 3)) for _ in range(words)]
    return [ids[i:i + 20] for i in range(0, words, 20)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--words", default="10000,100000,1000000",
                    help="comma list of document lengths in words")
    ap.add_argument("--window", type=int, default=256, help="subtokens per window")
    ap.add_argument("--output", default=None, help="also write the table here as JSON")
    args = ap.parse_args()
    spec = RepeatSpec(repetitions=1, max_subtokens=args.window)
    rows = []
    for n in (int(x) for x in args.words.split(",")):
        doc = document(n)
        start = time.perf_counter()
        out = encode_document(doc, spec, args.window, separator=(13,))
        seconds = time.perf_counter() - start
        rows.append({"words": n, "rows": len(out), "seconds": round(seconds, 3),
                     "us_per_word": round(seconds / n * 1e6, 2)})
        print(f"{n:9d} words: {len(out):7d} rows in {seconds:7.2f} s "
              f"({rows[-1]['us_per_word']:.2f} us a word)")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            json.dump({"window": args.window, "repetitions": 1, "python": platform.python_version(),
                       "machine": platform.machine(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
