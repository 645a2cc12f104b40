"""seqrep's bf16 labeling with each Linear weight cast once (now) against autocast casting it
at every call (before), side by side: the same run folder labels CoNLL-2003's test split in
interleaved rounds, and the two prediction files must be the same bytes.

    python benchmarks/peers/weight_casts.py RUN [--rounds 2] [--out results/FILE.json]

Run with the project's interpreter and the run's threads in OMP_NUM_THREADS. "before" switches
the copies off (seqrep.model.device.WeightCasts gives none), which is torch's autocast alone.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from peers import common  # noqa: E402

CHILD = """
import sys
from seqrep.model import device
if sys.argv[1] == "before":
    device.WeightCasts.tensors = lambda self, module, dtype: {}
from seqrep.cli.app import main
main(["evaluate", sys.argv[2], "--dataset", "conll2003", "--split", "test",
      "--precision", "bf16", "--json", "--predictions", sys.argv[3]])
"""


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", type=Path)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    words = 46435  # CoNLL-2003's test split, as seqrep reads it
    seconds: dict[str, list[float]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            for mode in seconds:
                done = subprocess.run([sys.executable, "-c", CHILD, mode, str(args.run),
                                       f"{tmp}/{mode}.conll"], capture_output=True, text=True,
                                      check=True)
                seconds[mode].append(float(json.loads(done.stdout)["seconds"]))
                print(f"{mode}: {seconds[mode][-1]:.2f} s", file=sys.stderr)
        same = filecmp.cmp(f"{tmp}/before.conll", f"{tmp}/after.conll", shallow=False)
    rows = {m: {"seconds": s, "median_s": statistics.median(s),
                "words_per_s": round(words / statistics.median(s), 1)}
            for m, s in seconds.items()}
    record = {"run": str(args.run), "words": words, "rounds": args.rounds,
              "threads": os.environ.get("OMP_NUM_THREADS"), "cpu": common.cpu_flags(),
              "precision": "bf16", "rows": rows, "same_predictions": same,
              "speedup": round(rows["before"]["median_s"] / rows["after"]["median_s"], 3)}
    print(json.dumps(record, indent=2))
    if args.out is not None:
        common.write_json(args.out, record)


if __name__ == "__main__":
    main()
