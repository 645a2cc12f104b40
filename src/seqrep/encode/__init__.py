"""From words to model inputs: subword alignment, k-fold repetition, windows and batches.

Nothing here imports torch models or reads files, so it is tested without weights.
"""

# An inference batch: at most this many sentences (with document context, the sentences its
# windows label) and this many padded tokens. Larger batches feed a CPU's matrix units
# better: on Gemma-3-270m cut at 11 with document context (AMX, two cores), 64 sentences and
# 4,096 tokens labeled 1.5x as many words/s as 32 and 512 (eager bf16) and 1.6x (compiled),
# at 5 % padding, length-sorted (benchmarks/batch_probe.py). Here, imported by no torch
# code, so the configs take their defaults from it.
BATCH_SENTENCES = 64
BATCH_TOKENS = 4096
