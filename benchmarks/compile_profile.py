"""Where a compiled labeling's time goes: ``seqrep evaluate``'s labeling of the whole
CoNLL-2003 test split on ``--runtime compile`` (bf16), run once to warm the process up and
again under cProfile, which prints the functions by their own time and by their cumulative
time (the compiled pass, its oneDNN products, the attention, inductor's fused kernels, and
the pooling, decoding and batching around them).

    python benchmarks/compile_profile.py RUN [--overlap 0.125] [--threads 2]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run", type=Path)
    p.add_argument("--overlap", type=float, default=0.125)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)

    import torch

    from seqrep.data import load_corpus
    from seqrep.evaluate import evaluate
    from seqrep.export import load_labeler

    torch.set_num_threads(args.threads)
    labeler = load_labeler(args.run, runtime="compile", precision="bf16",
                           context_overlap=args.overlap).eval()
    labeler.compile()
    sentences = load_corpus("conll2003", "test").sentences
    result = evaluate(labeler, sentences)
    print("first labeling", result["seconds"], "s, F1", result["f1"])
    profiler = cProfile.Profile()
    profiler.enable()
    result = evaluate(labeler, sentences)
    profiler.disable()
    print("profiled labeling", result["seconds"], "s, F1", result["f1"])
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(40)


if __name__ == "__main__":
    main()
