"""What the inference weights' check costs a pass: ``WeightCasts.tensors`` (the sampled
comparison of every Linear weight, made at every inference pass) timed alone on a run's
backbone, each call right after a large bf16 product, as in a labeling.

    python benchmarks/weight_check_probe.py RUN [--calls 30] [--threads 2] [--out FILE]

Prints and saves the median and largest milliseconds a call; a pass of the recipe's
default batch takes about half a second on two cores.
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
    p.add_argument("--calls", type=int, default=30)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)

    import torch

    from seqrep.model.casts import WeightCasts
    from seqrep.model.device import cpu_features
    from seqrep.model.labeler import SequenceLabeler

    torch.set_num_threads(args.threads)
    backbone = SequenceLabeler.from_pretrained(args.run).backbone
    a = torch.randn(2048, 640, dtype=torch.bfloat16)
    b = torch.randn(640, 2048, dtype=torch.bfloat16)
    casts = WeightCasts()
    with casts.lock:
        weights = len(casts.tensors(backbone, torch.bfloat16))  # the copies made once
    spent = []
    for _ in range(args.calls):
        a @ b
        start = time.perf_counter()
        with casts.lock:
            casts.tensors(backbone, torch.bfloat16)
        spent.append(1000 * (time.perf_counter() - start))
    spent.sort()
    record = {"run": str(args.run), "weights": weights, "calls": args.calls,
              "threads": args.threads, "median_ms": round(spent[len(spent) // 2], 3),
              "max_ms": round(spent[-1], 3), "cpu": cpu_features(),
              "torch": torch.__version__, "command": ["python", *sys.argv]}
    print(json.dumps(record))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
