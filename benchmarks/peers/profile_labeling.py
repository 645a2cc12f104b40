"""Where a seqrep run's bf16 labeling spends its time: torch's profiler around ``seqrep
evaluate`` on the first 400 CoNLL-2003 test sentences, the operators by their own CPU time.

    OMP_NUM_THREADS=2 python benchmarks/peers/profile_labeling.py RUN

Run with the project's interpreter. On the recipe's stand-in, on an Intel Xeon with AMX,
before weights were cast once (docs/research/peers.md): aten::mm 36%, aten::copy_ 24%.
"""

import sys

from torch.profiler import ProfilerActivity, profile

from seqrep.cli.app import main

with profile(activities=[ProfilerActivity.CPU]) as prof:
    try:
        main(["evaluate", sys.argv[1], "--dataset", "conll2003", "--split", "test",
              "--max-sentences", "400", "--precision", "bf16"])
    except SystemExit:
        pass
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30,
                                max_name_column_width=50))
