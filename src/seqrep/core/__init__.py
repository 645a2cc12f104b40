"""What every layer names: the strategy tables (contexts, runtimes), the one table type, the
configuration base, the optional extras and the methods every labeler offers."""
