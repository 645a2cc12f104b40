"""A probe, not a runtime yet: the recipe's forward pass under ``torch.compile`` (inductor,
weights frozen, dynamic shapes, bf16 autocast) against PyTorch's eager bf16 pass, on the
first 300 CoNLL-2003 test sentences, documents kept, and ``--runtime openvino``'s bf16
pass beside them when OpenVINO is installed.

    python benchmarks/compile_probe.py RUN [--sentences 300] [--threads 2] [--variants ...]

Prints, for each: the first pass (compilation included), the fastest of two timed passes in
words/s, the largest difference of its states from PyTorch fp32's on real tokens, and how
many word tags (argmax of the run's head) differ from fp32's.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any
from unittest import mock


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run", type=Path)
    p.add_argument("--sentences", type=int, default=300)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--variants", default="shipped,frozen,live,openvino",
                   help="which compiled passes to time beside eager: shipped (--runtime "
                        "compile as seqrep ships it: Linear weights frozen, states in bf16), "
                        "frozen (every weight a constant, states in fp32), live (weights as "
                        "inputs), masked (as shipped, the attention given the padding "
                        "mask as before), openvino")
    p.add_argument("--overlap", type=float, default=None,
                   help="the windows' overlap (--context-overlap; default: the run's own)")
    p.add_argument("--out", type=Path, default=None, help="also write the rows as JSON here")
    args = p.parse_args(argv)

    import torch
    import torch._inductor.config as inductor

    from seqrep.data import load_corpus
    from seqrep.encode import BATCH_SENTENCES, BATCH_TOKENS
    from seqrep.export import with_overlap
    from seqrep.model.io import load_labeler as load_folder
    from seqrep.model.labeler import SequenceLabeler

    def load_labeler(cls, folder, trust):  # noqa: ANN001, ANN202 - at the chosen overlap
        lab = load_folder(cls, folder, trust)
        return lab if args.overlap is None else with_overlap(lab, args.overlap)

    torch.set_num_threads(args.threads)
    inductor.freezing = True
    folder = args.run / "best" if (args.run / "best").is_dir() else args.run
    lab = load_labeler(SequenceLabeler, folder, False).place("cpu", "fp32").eval()
    sentences = load_corpus("conll2003", "test").sentences[: args.sentences]
    words = [s.words for s in sentences]
    batches = [b for b, _ in lab.batches(words, BATCH_SENTENCES, BATCH_TOKENS,
                                         docs=[s.doc_id for s in sentences])]
    n_words = sum(map(len, words))
    with torch.no_grad():
        ref = [lab.hidden(b)[0] for b in batches]
        tags = [lab.head(lab.pool(h, b)).argmax(-1) for h, b in zip(ref, batches)]

    rows: list[dict[str, Any]] = []

    def measure(name: str, run) -> None:  # noqa: ANN001 - a batch -> states function
        from torch._dynamo.utils import counters

        graphs = counters["stats"]["unique_graphs"]
        start = time.perf_counter()
        outs = [run(b).float() for b in batches]
        first = time.perf_counter() - start
        best = float("inf")
        for _ in range(2):
            start = time.perf_counter()
            for b in batches:
                run(b)
            best = min(best, time.perf_counter() - start)
        graphs = counters["stats"]["unique_graphs"] - graphs  # dynamo's, over the passes
        diff = max(float((o - r)[b.attention_mask.bool()].abs().max())
                   for o, r, b in zip(outs, ref, batches))
        changed = sum(int((lab.head(lab.pool(o, b)).argmax(-1) != t).sum())
                      for o, b, t in zip(outs, batches, tags))
        print(f"{name}: first pass {first:.1f} s, {n_words / best:.1f} words/s, states within "
              f"{diff:.3g} of fp32, {changed} of {n_words} tags changed, {graphs} graphs compiled",
              flush=True)
        rows.append({"pass": name, "first_pass_s": round(first, 1),
                     "words_per_s": round(n_words / best, 1), "states_within": diff,
                     "tags_changed": changed, "words": n_words,
                     "graphs_compiled": graphs})

    lab.place("cpu", "bf16")
    backbone = lab.backbone

    def forward(ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return backbone(input_ids=ids, attention_mask=mask, position_ids=positions,
                            use_cache=False).last_hidden_state

    compiled = torch.compile(forward, dynamic=True)

    def forward_copies(ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor,
                       weights: dict[str, torch.Tensor]) -> torch.Tensor:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return torch.func.functional_call(backbone, weights, (), {
                "input_ids": ids, "attention_mask": mask, "position_ids": positions,
                "use_cache": False}).last_hidden_state

    # weights as inputs, not constants: the labeler's own bf16 copies, read at every call
    live = torch.compile(forward_copies, dynamic=True, options={"freezing": False})

    def run_live(b):  # noqa: ANN001, ANN202
        with lab.inference_weights.lock:
            weights = lab.inference_weights.tensors(backbone, torch.bfloat16)
        return live(b.input_ids, b.attention_mask, lab.model_positions(b.position_ids),
                    weights)
    with torch.no_grad():
        measure("PyTorch bf16 autocast, eager", lambda b: lab.hidden(b)[0])
        if "shipped" in args.variants:
            from seqrep.export.compiled import CompiledLabeler

            shipped = load_labeler(CompiledLabeler, folder, False).place("cpu", "bf16").eval()
            measure("--runtime compile (Linear weights frozen, states in bf16)",
                    lambda b: shipped.hidden(b)[0])
        if "masked" in args.variants:
            import seqrep.export.compiled as compiled_module
            from seqrep.export.compiled import CompiledLabeler

            masked = load_labeler(CompiledLabeler, folder, False).place("cpu", "bf16").eval()
            with mock.patch.multiple(compiled_module, CAUSAL="sdpa",
                                     _register_attention=lambda: None):
                masked.compile()  # keeps transformers' SDPA with its materialized mask
            measure("--runtime compile with the padding mask (before the causal attention)",
                    lambda b: masked.hidden(b)[0])
        if "live" in args.variants:
            measure("torch.compile, weights as inputs (bf16 copies), bf16 autocast", run_live)
        if "frozen" in args.variants:
            measure("torch.compile, bf16 autocast", lambda b: compiled(
                b.input_ids, b.attention_mask, lab.model_positions(b.position_ids)))
        import importlib.util

        if "openvino" in args.variants and importlib.util.find_spec("openvino") is not None:
            from seqrep.export.openvino import OpenVinoLabeler

            ov = load_labeler(OpenVinoLabeler, folder, False).place("cpu", "bf16", args.threads)
            ov.eval()
            measure("OpenVINO, bf16 products", lambda b: ov.hidden(b)[0])
    if args.out is not None:
        import json
        import sys

        from seqrep.model.device import cpu_features

        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "run": str(args.run), "sentences": len(words), "overlap": args.overlap,
            "threads": args.threads,
            "batches": len(batches), "cpu": cpu_features(), "torch": torch.__version__,
            "command": ["python", *sys.argv], "rows": rows}, indent=1) + "\n",
            encoding="utf-8")


if __name__ == "__main__":
    main()
