"""Training-step speed of CPU options, side by side in one process (interleaved rounds, the
fastest round of each counts): full fine-tuning against the lowest blocks frozen, and any
precision given. Prints and writes JSON.

    python scripts/train_speed.py --exit-layer 15 --frozen 0,7 --steps 6 \
        --output results/train-speed.json
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from torch import nn

from seqrep.config import LabelerConfig
from seqrep.data import load_corpus
from seqrep.data.splits import tag_inventory
from seqrep.fileio import write_json
from seqrep.model.labeler import SequenceLabeler


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--exit-layer", type=int, default=15)
    ap.add_argument("-r", "--repetitions", type=int, default=1)
    ap.add_argument("--frozen", default="0,7", help="comma list of frozen lowest blocks")
    ap.add_argument("--precision", default="fp32", help="comma list: fp32,bf16")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--output", default=None)
    args = ap.parse_args()
    sents = load_corpus("conll2003", "train").sentences_with_words()[: args.batch_size
                                                                     * args.steps]
    labels = tag_inventory(sents)
    settings = [(int(f), p) for f in args.frozen.split(",") for p in args.precision.split(",")]
    labelers = {}
    for frozen, precision in settings:
        torch.manual_seed(0)
        cfg = LabelerConfig(model=args.model, labels=labels, repetitions=args.repetitions,
                            exit_layer=args.exit_layer, frozen_layers=frozen)
        lab = SequenceLabeler(cfg, SequenceLabeler._load_backbone(cfg)).place("cpu", precision)
        lab.train()
        items = lab.encoder.items([s.words for s in sents], [s.tags for s in sents])
        plan = lab.encoder.plan(items, args.batch_size)
        opt = torch.optim.AdamW([p for p in lab.parameters() if p.requires_grad], lr=1e-5)
        labelers[(frozen, precision)] = (lab, items, plan, opt)
    best: dict[tuple, float] = {}
    for _ in range(args.rounds):
        for key, (lab, items, plan, opt) in labelers.items():
            start = time.perf_counter()
            for idx in plan:
                batch = lab.encoder.collate([items[i] for i in idx])
                loss = nn.functional.cross_entropy(lab(batch), batch.labels)
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
            seconds = time.perf_counter() - start
            best[key] = min(best.get(key, float("inf")), seconds)
    n = len(sents)
    base = best[settings[0]]
    rows = [{"frozen_layers": f, "precision": p, "seconds": round(best[(f, p)], 2),
             "sentences_per_second": round(n / best[(f, p)], 2),
             "speedup": round(base / best[(f, p)], 3)} for f, p in settings]
    out = {"model": args.model, "exit_layer": args.exit_layer, "repetitions": args.repetitions,
           "batch_size": args.batch_size, "sentences": n, "rounds": args.rounds,
           "threads": torch.get_num_threads(), "rows": rows}
    print(json.dumps(out, indent=2))
    if args.output:
        write_json(args.output, out)


if __name__ == "__main__":
    main()
