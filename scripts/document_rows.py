"""What document context costs in model input, before any model runs (issue 24): rows, real
tokens and the sum of squared row lengths (the attention term) of the CoNLL-2003 test split
at sentence level and with document windows of 128, 256 and 512 subtokens, r=1, in
SmolLM2's tokenizer.

    python scripts/document_rows.py
"""
from transformers import AutoTokenizer

from seqrep.config import LabelerConfig
from seqrep.data import load_corpus
from seqrep.encode.pipeline import Encoder
from seqrep.model.packaged import resolve_packaged

path = resolve_packaged("smollm2-135m")
tok = AutoTokenizer.from_pretrained(path)
sents = [s for s in load_corpus("conll2003", "test").sentences if len(s)]
docs = [s.doc_id for s in sents]
words = [s.words for s in sents]
print(len(sents), "sentences,", len(set(d for d in docs if d)), "documents")
for ctx, budget in (("sentence", 256), ("document", 128), ("document", 256), ("document", 512)):
    cfg = LabelerConfig(model="x", repetitions=1, context=ctx, context_tokens=budget)
    enc = Encoder(tok, cfg, 0)
    items = enc.items(words, docs=docs)
    toks = sum(len(it.segment) for it in items)
    quad = sum(len(it.segment) ** 2 for it in items)
    print(f"{ctx:8s} budget {budget:3d}: {len(items):5d} rows, {toks:7d} tokens, "
          f"max row {max(len(it.segment) for it in items)}, sum len^2 {quad:.3g}")
