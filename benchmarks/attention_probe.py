"""The recipe's attention alone, by three routes: SDPA eager (what the compiled pass calls,
causal, one key-value head for four query heads), SDPA inside ``torch.compile``, and
``flex_attention`` with a causal block mask inside ``torch.compile`` (inductor's CPU
template), in bf16 on the shape of one of the recipe's batches (5 rows of 496 tokens, head
dimension 256).

    python benchmarks/attention_probe.py [--threads 2] [--out results/NAME.json]

Prints each route's time a call (the mean of 10 after one warm-up), its rate in GFLOP/s
(4 x rows x heads x head dim x tokens^2 / 2, the causal half), and its largest difference
from SDPA in fp32.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rows", type=int, default=5)
    p.add_argument("--tokens", type=int, default=496)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)

    import torch
    import torch.nn.functional as F
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    from seqrep.model.device import cpu_features

    torch.set_num_threads(args.threads)
    b, h, t, d = args.rows, 4, args.tokens, 256
    torch.manual_seed(0)
    q = torch.randn(b, h, t, d, dtype=torch.bfloat16)
    k, v = (torch.randn(b, 1, t, d, dtype=torch.bfloat16) for _ in range(2))

    def sdpa(q, k, v):  # noqa: ANN001, ANN202
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True,
                                              scale=d ** -0.5)

    mask = create_block_mask(lambda _b, _h, qi, ki: qi >= ki, None, None, t, t, device="cpu")

    def flex(q, k, v):  # noqa: ANN001, ANN202
        return flex_attention(q, k, v, block_mask=mask, enable_gqa=True, scale=d ** -0.5)

    ref = sdpa(q.float(), k.float(), v.float())
    flops = 4 * b * h * d * t * t / 2
    rows = []
    for name, fn in (("sdpa eager", sdpa), ("sdpa compiled", torch.compile(sdpa)),
                     ("flex_attention compiled", torch.compile(flex))):
        with torch.no_grad():
            out = fn(q, k, v)
            start = time.perf_counter()
            for _ in range(10):
                fn(q, k, v)
            ms = (time.perf_counter() - start) / 10 * 1000
        rows.append({"route": name, "ms": round(ms, 2), "gflops": round(flops / ms / 1e6),
                     "max_diff_vs_fp32": float((out.float() - ref).abs().max())})
        print(json.dumps(rows[-1]), flush=True)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "shape": {"rows": b, "query_heads": h, "kv_heads": 1, "tokens": t, "head_dim": d},
            "threads": args.threads, "torch": torch.__version__, "cpu": cpu_features(),
            "command": ["python", *sys.argv], "routes": rows}, indent=1) + "\n",
            encoding="utf-8")


if __name__ == "__main__":
    main()
