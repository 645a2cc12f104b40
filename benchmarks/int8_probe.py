"""The recipe's backbone in int8 through torch, against the compiled bf16 pass it would
replace: Gemma-3-270m's shape cut at 11 layers (hidden 640, MLP 2048, four query heads and
one key-value head of 256), random weights, on one of the recipe's batch shapes (5 rows of
496 tokens), every variant through ``torch.compile`` with inductor's freezing:

- ``bf16``: weights cast to bf16 (what ``--runtime compile`` runs);
- ``pt2e-dynamic``: torchao's PT2E export with the X86 inductor quantizer, int8 weights and
  int8 activations quantized per call, run under bf16 autocast (oneDNN's int8 kernels, AMX-int8
  where the CPU has it);
- ``pt2e-static``: the same with activation scales calibrated once on the batch itself (the
  most favourable calibration there is);
- ``torchao-dynamic``: torchao's ``Int8DynamicActivationInt8WeightConfig`` on bf16 weights.

    pip install --no-deps torchao==0.18.0   # not a seqrep dependency
    python benchmarks/int8_probe.py [--rounds 3] [--out results/NAME.json]

Prints each variant's time a call (each round times every variant in turn, 5 calls each,
after 3 warm-up calls at build) and its largest difference from fp32 eager.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path


def _backbone():  # noqa: ANN202
    from transformers import Gemma3TextConfig, Gemma3TextModel

    cfg = Gemma3TextConfig(hidden_size=640, intermediate_size=2048, num_hidden_layers=11,
                           num_attention_heads=4, num_key_value_heads=1, head_dim=256,
                           vocab_size=4096, sliding_window=512, max_position_embeddings=2048)
    cfg._attn_implementation = "sdpa"
    return Gemma3TextModel(cfg).eval()


def _hidden(model):  # noqa: ANN001, ANN202
    """``model`` as a module of ids -> last hidden states (what export and compile see)."""
    import torch

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = model

        def forward(self, ids):  # noqa: ANN001, ANN202
            return self.m(input_ids=ids, use_cache=False).last_hidden_state

    return Hidden()


def _pt2e(model, ids, dynamic: bool):  # noqa: ANN001, ANN202
    import torch
    import torchao.quantization.pt2e.quantizer.x86_inductor_quantizer as xiq
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    quantizer = xiq.X86InductorQuantizer()
    quantizer.set_global(xiq.get_default_x86_inductor_quantization_config(is_dynamic=dynamic))
    with torch.no_grad():
        graph = torch.export.export(_hidden(copy.deepcopy(model)), (ids,), strict=False).module()
        prepared = prepare_pt2e(graph, quantizer)
        prepared(ids)
        converted = convert_pt2e(prepared)
    # export records fp32 dtype asserts that bf16 autocast would trip; they check nothing here
    for node in list(converted.graph.nodes):
        if node.op == "call_function" and "assert_tensor_metadata" in str(node.target):
            converted.graph.erase_node(node)
    converted.recompile()
    return torch.compile(converted)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rows", type=int, default=5)
    p.add_argument("--tokens", type=int, default=496)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)

    import torch
    import torch._inductor.config as inductor

    from seqrep.model.device import cpu_features

    torch.set_num_threads(args.threads)
    inductor.freezing = True
    torch.manual_seed(0)
    model = _backbone()
    ids = torch.randint(0, 4096, (args.rows, args.tokens))
    with torch.no_grad():
        ref = model(input_ids=ids, use_cache=False).last_hidden_state

    def bf16() -> Callable:
        return torch.compile(_hidden(copy.deepcopy(model).to(torch.bfloat16)))

    def torchao_dynamic() -> Callable:
        from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_

        m = copy.deepcopy(model).to(torch.bfloat16)
        quantize_(m, Int8DynamicActivationInt8WeightConfig())
        return torch.compile(_hidden(m))

    autocast = lambda: torch.autocast("cpu", dtype=torch.bfloat16)  # noqa: E731
    variants = {"bf16": (bf16, contextlib.nullcontext),
                "pt2e-dynamic": (lambda: _pt2e(model, ids, True), autocast),
                "pt2e-static": (lambda: _pt2e(model, ids, False), autocast),
                "torchao-dynamic": (torchao_dynamic, contextlib.nullcontext)}
    built, rows = {}, {}
    for name, (build, ctx) in variants.items():
        fn = build()
        with torch.no_grad(), ctx():
            for _ in range(3):
                out = fn(ids)
        built[name] = (fn, ctx)
        rows[name] = {"variant": name, "ms": [],
                      "max_diff_vs_fp32": float((out.float() - ref).abs().max())}
    for _ in range(args.rounds):
        for name, (fn, ctx) in built.items():
            with torch.no_grad(), ctx():
                start = time.perf_counter()
                for _ in range(5):
                    fn(ids)
                rows[name]["ms"].append(round((time.perf_counter() - start) / 5 * 1000, 1))
    base = min(rows["bf16"]["ms"])
    for row in rows.values():
        row["best_ms"] = min(row["ms"])
        row["speed_vs_bf16"] = round(base / row["best_ms"], 3)
        print(json.dumps(row), flush=True)
    if args.out is not None:
        import torchao

        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "shape": {"model": "gemma-3-270m cut at 11, random weights", "rows": args.rows,
                      "tokens": args.tokens},
            "hidden_scale": float(ref.abs().max()),
            "threads": args.threads, "torch": torch.__version__, "torchao": torchao.__version__,
            "cpu": cpu_features(), "command": ["python", *sys.argv],
            "variants": list(rows.values())}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
