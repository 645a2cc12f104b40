"""How far a teacher's labels on the training text are from the gold labels there: the share
of training words whose most likely teacher label is the gold one (all words, and words with
a gold entity tag), the teacher's mean probability of the gold label, and the mean top
probability at a distillation temperature. Near 100 %, distilling on that text alone teaches
the student little beyond the gold labels (issue 25).

Usage: python scripts/teacher_agreement.py STUDENT_RUN [--output JSON]
(a distilled student's run folder: its run.json names the teacher's label cache and dataset)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from safetensors import safe_open

from seqrep.data import load_corpus
from seqrep.files.atomic import write_json


def agreement(student: Path) -> dict:
    run = json.loads((student / "run.json").read_text(encoding="utf-8"))
    d, labels = run["distill"], run["labeler"]["labels"]
    cache = Path(d["cache"]) if Path(d["cache"]).is_absolute() else student / d["cache"]
    lengths, chunks = [], []
    for path in sorted(cache.glob("*.safetensors")):
        with safe_open(str(path), framework="pt") as f:
            lengths += f.get_tensor("lengths").tolist()
            chunks.append(f.get_tensor("logp").float())
    logp = torch.cat(chunks)
    train = [s for s in load_corpus(run["train"]["dataset"], run["train"]["train_split"])
             .sentences if len(s)]
    if [len(s) for s in train] != lengths[:len(train)]:
        raise SystemExit(f"{cache}: its sentences are not the training split's, in order")
    gold = torch.tensor([labels.index(t) for s in train for t in s.tags])
    logp = logp[:len(gold)]  # unlabeled text, if any, comes after the training sentences
    top, entity = logp.argmax(-1), gold != labels.index("O")
    soft = torch.softmax(logp / d["temperature"], -1)
    return {"student": str(student), "teacher": d["teacher"], "words": len(gold),
            "entity_words": int(entity.sum()),
            "top_is_gold": round((top == gold).float().mean().item(), 4),
            "top_is_gold_on_entity_words": round((top[entity] == gold[entity]).float()
                                                 .mean().item(), 4),
            "mean_gold_probability": round(logp.exp()[torch.arange(len(gold)), gold]
                                           .mean().item(), 4),
            "temperature": d["temperature"],
            "mean_top_probability_at_temperature": round(soft.max(-1).values.mean().item(), 4)}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("student", type=Path)
    ap.add_argument("--output", type=Path)
    args = ap.parse_args()
    out = agreement(args.student)
    print(json.dumps(out, indent=1))
    if args.output:
        write_json(args.output, out)
