"""bf16 autocast against fp32 on CoNLL-2003 test: F1, word-tag agreement and time, one pass
each in one process (fp32 first). Prints and writes JSON.

    python scripts/bf16_f1.py runs/demo --output results/bf16-f1.json

On a CPU without native bf16 (no AVX512-BF16 or AMX) torch emulates it: the F1 is that of
bf16 inputs with fp32 accumulation, as native kernels compute, but the time is not theirs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import torch

from seqrep.data import load_corpus
from seqrep.evaluate import check_labels, score
from seqrep.files.atomic import write_json
from seqrep.model.device import cpu_features, cpu_has_bf16
from seqrep.model.labeler import SequenceLabeler
from seqrep.predict.tagger import decode_logits


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--sentences", type=int, default=None, help="first N test sentences")
    ap.add_argument("--output", default=None)
    args = ap.parse_args()
    lab = SequenceLabeler.from_pretrained(args.run, device="cpu", precision="fp32")
    gold = check_labels(load_corpus("conll2003", "test").sentences_with_words(),
                        lab.config.labels, "conll2003/test")[: args.sentences]
    words = [s.words for s in gold]
    out = {"command": "python scripts/bf16_f1.py " + " ".join(sys.argv[1:]),
           "run": args.run, "sentences": len(gold), "cpu_native_bf16": cpu_has_bf16(),
           "cpu": cpu_features(),
           "threads": torch.get_num_threads()}
    tags = {}
    for precision in ("fp32", "bf16"):
        lab.place("cpu", precision)
        start = time.perf_counter()
        logits = lab.word_logits(words, 64, docs=None)
        seconds = time.perf_counter() - start
        pred = [t for t, _ in decode_logits(lab, gold, logits)]
        tags[precision] = pred
        result = score([s.tags for s in gold], pred)
        out[precision] = {"f1": result["f1"], "seconds": round(seconds, 2),
                          "sentences_per_second": round(len(gold) / seconds, 2)}
        print(precision, out[precision], flush=True)
    same = sum(a == b for x, y in zip(tags["fp32"], tags["bf16"]) for a, b in zip(x, y))
    out["tags_unchanged"] = same / sum(len(x) for x in tags["fp32"])
    out["f1_difference_points"] = round(100 * (out["bf16"]["f1"] - out["fp32"]["f1"]), 3)
    out["speedup"] = round(out["fp32"]["seconds"] / out["bf16"]["seconds"], 3)
    print(json.dumps(out, indent=2))
    if args.output:
        write_json(args.output, out)


if __name__ == "__main__":
    main()
