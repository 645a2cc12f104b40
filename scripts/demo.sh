#!/usr/bin/env bash
# Set everything up on a fresh machine, then the main job on an embedded default:
# SmolLM2-135M cut at 10 of 30 layers, r=1 (the sentence seen twice), fully fine-tuned on
# 1,500 CoNLL-2003 training sentences for 2 epochs, tested on the full test set (3,453
# sentences) by the training command itself, so runs/demo/metrics.json holds the test score
# the demo prints, then used to label a sample text.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
seqrep train --model smollm2-135m --dataset conll2003 --repetitions 1 --exit-layer 10 \
  --finetune full --epochs 2 --max-train-sentences 1500 --max-eval-sentences 500 \
  --output runs/demo --overwrite
seqrep predict runs/demo "Angela Merkel met Emmanuel Macron in Berlin on Tuesday. \
The talks, hosted by the European Commission, ended without a deal on Airbus."
echo "demo: the run folder is runs/demo; the examples of docs/reference/cli.md use it, e.g." >&2
echo "  seqrep evaluate runs/demo --dataset conll2003 --split test" >&2
