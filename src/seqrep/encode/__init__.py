"""From words to model inputs: subword alignment, k-fold repetition, windows and batches.

Nothing here imports torch models or reads files, so it is tested without weights.
"""

# Padded tokens per inference batch. Sorted batches of a few hundred sentences still spread
# in length; closing a batch at this budget keeps padding near or under 10 % (see bench).
# Here, imported by no torch code, so the configs take their default from it.
BATCH_TOKENS = 512
