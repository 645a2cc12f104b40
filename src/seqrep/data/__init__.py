"""Reading labeled text: plain objects, tag schemes, readers and named datasets."""

from seqrep.data.datasets import load_corpus
from seqrep.data.readers import read_corpus
from seqrep.data.types import Corpus, Sentence, Span

__all__ = ["Corpus", "Sentence", "Span", "load_corpus", "read_corpus"]
