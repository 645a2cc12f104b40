"""Training-step speed of CPU options, side by side in one process (interleaved rounds, the
fastest round of each counts): full fine-tuning against the lowest blocks frozen, any
precision given, and torch.compile of the backbone (``--compile``: each setting also
compiled, with its compile time: its first round less its fastest). Prints and writes JSON.

    python scripts/train_speed.py --exit-layer 15 --frozen 0,7 --steps 6 \
        --output results/train-speed.json

``--context sentence,document`` measures document context beside sentence context on the same
training sentences (the first ``batch-size x steps`` of the training split: whole documents
but the last), as ``seqrep train --context document`` reads them.
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from torch import nn

from seqrep.config import LabelerConfig
from seqrep.core.contexts import context_of
from seqrep.data import load_corpus
from seqrep.data.tasks import SPANS
from seqrep.files.atomic import write_json
from seqrep.model.device import cpu_features
from seqrep.model.labeler import SequenceLabeler


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--dataset", default="conll2003", help="named dataset or file")
    ap.add_argument("--exit-layer", type=int, default=15)
    ap.add_argument("-r", "--repetitions", type=int, default=1)
    ap.add_argument("--frozen", default="0,7", help="comma list of frozen lowest blocks")
    ap.add_argument("--precision", default="fp32", help="comma list: fp32,bf16")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--context", default="sentence",
                    help="comma list: sentence,document (document rows of --context-tokens)")
    ap.add_argument("--context-tokens", type=int, default=256)
    ap.add_argument("--batch-tokens", type=int, default=None,
                    help="padded tokens per batch at most, as seqrep train --batch-tokens")
    ap.add_argument("--batch-rows", action="store_true",
                    help="with document context, count --batch-size in rows, as seqrep train "
                         "--batch-rows (default: sentences, as seqrep train)")
    ap.add_argument("--compile", action="store_true",
                    help="also each setting with its backbone under torch.compile(dynamic)")
    ap.add_argument("--output", default=None)
    args = ap.parse_args()
    sents = load_corpus(args.dataset, "train").sentences_with_words()[: args.batch_size
                                                                     * args.steps]
    labels = SPANS.inventory(sents)
    settings = [(int(f), p, c, x) for x in args.context.split(",")
                for f in args.frozen.split(",") for p in args.precision.split(",")
                for c in ((False, True) if args.compile else (False,))]
    labelers = {}
    for frozen, precision, compiled, context in settings:
        torch.manual_seed(0)
        cfg = LabelerConfig(model=args.model, labels=labels, repetitions=args.repetitions,
                            exit_layer=args.exit_layer, frozen_layers=frozen, context=context,
                            context_tokens=args.context_tokens)
        lab = SequenceLabeler(cfg, SequenceLabeler._load_backbone(cfg)).place("cpu", precision)
        lab.train()
        if compiled:
            lab.backbone.compile(dynamic=True)  # in place: parameter names stay the same
        items = lab.encoder.items([s.words for s in sents], [s.tags for s in sents],
                                  docs=context_of(context).doc_ids(sents))
        plan = lab.encoder.plan(items, args.batch_size, args.batch_tokens,
                                sentences=context_of(context).documents
                                and not args.batch_rows)
        opt = torch.optim.AdamW([p for p in lab.parameters() if p.requires_grad], lr=1e-5)
        labelers[(frozen, precision, compiled, context)] = (lab, items, plan, opt)
    best: dict[tuple, float] = {}
    first: dict[tuple, float] = {}
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
            first.setdefault(key, seconds)
    n = len(sents)
    base = best[settings[0]]
    rows = [{"frozen_layers": f, "precision": p, "compiled": c, "context": x,
             "seconds": round(best[k], 2), "steps": len(labelers[k][2]),
             "sentences_per_second": round(n / best[k], 2), "speedup": round(base / best[k], 3),
             **({"compile_seconds": round(first[k] - best[k], 1)} if c else {})}
            for k in settings for f, p, c, x in [k]]
    out = {"model": args.model, "dataset": args.dataset, "exit_layer": args.exit_layer,
           "repetitions": args.repetitions,
           "batch_size": args.batch_size, "batch_tokens": args.batch_tokens,
           "batch_rows": args.batch_rows,
           "context_tokens": args.context_tokens, "sentences": n, "rounds": args.rounds,
           "threads": torch.get_num_threads(), "cpu": cpu_features(), "rows": rows}
    print(json.dumps(out, indent=2))
    if args.output:
        write_json(args.output, out)


if __name__ == "__main__":
    main()
