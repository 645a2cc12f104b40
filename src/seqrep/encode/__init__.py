"""From words to model inputs: subword alignment, k-fold repetition, windows and batches.

Nothing here imports torch models or reads files, so it is tested without weights.
"""
