"""seqrep: sequence labeling with decoder-only language models by sequence repetition."""

__version__ = "0.1.0"
