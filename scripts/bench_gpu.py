#!/usr/bin/env python
# On the GPU machine, from the repository root (its python3 must already hold torch with CUDA;
# the lent H200's image has python3 3.12 with torch 2.11+cu130, transformers 5.17, peft,
# safetensors and accelerate, but no bitsandbytes):
#   PYTHONPATH=src python3 scripts/bench_gpu.py --device cuda --config mistral-7b-shape \
#       --output results/gpu-bench-h200.json
# Through the device tool only $OUT comes back, so there write the JSON and the log to it:
#   set -o pipefail; PYTHONUNBUFFERED=1 PYTHONPATH=src python3 scripts/bench_gpu.py \
#       --device cuda --config mistral-7b-shape --output $OUT/gpu-bench-h200.json \
#       2>&1 | tee $OUT/bench-gpu.log
# For the QLoRA step too, carry bitsandbytes as a wheel (43 MB; here, in the repo root:
#   echo /.whl/ >> .git/info/exclude; python3 -m pip download --no-deps --only-binary=:all: \
#     --python-version 3.12 --implementation cp --platform manylinux_2_24_x86_64 -d .whl \
#     bitsandbytes==0.50.2
# ), name .whl in the run's carry, and start the command with
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target \
#     /tmp/site .whl/*.whl && export PYTHONPATH=src:/tmp/site || exit;
# On a CPU (what tests/lab/test_bench_gpu.py runs, in seconds):
#   PYTHONPATH=src python scripts/bench_gpu.py --device cpu --config tiny --quick
"""GPU benchmark of the sequence labeler at Mistral-7B shape, with random weights.

A driver over seqrep's own benchmark code: the timing primitives (FLOP count, matmul rate on
a device in a dtype, synchronised timed passes, memory, known peaks) are
``seqrep.lab.speed``, shared with ``seqrep bench``; the random model and the synthetic inputs
are ``seqrep.lab.synthetic``; the forward, training-step and QLoRA rows are
``seqrep.lab.device_bench``.

Nothing is downloaded or read from disk: a ``MistralConfig`` of the 7B shape (32 layers,
hidden 4096, 32 heads / 8 KV heads, intermediate 14336, vocab 32000, no sliding window) cut to
the exit layer before the model is built on the device in bf16, so the layers above L never
exist; wrapped in seqrep's own ``SequenceLabeler`` (frozen, the 9 CoNLL tags) with a tiny
word-level tokenizer built in code; the timed passes feed token ids directly.

What it measures, its inputs and its time budget on one H200 are in docs/guides/gpus.md
("The prepared GPU benchmark").

On a CPU, ``--config tiny`` (4 layers, hidden 64, exit layers 2 vs 4, fp32) is its test
(tests/lab/test_bench_gpu.py). Needs torch, transformers, peft, safetensors, bitsandbytes
(QLoRA, optional) and seqrep from ``src/``; what is missing is said in one line. Exit status:
0 when every setting ran, 1 when one failed (its row holds the error; the JSON is still
written), 2 when it cannot start.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import traceback
from pathlib import Path
from typing import Any

try:  # a missing torch or seqrep is said in one line by main(), not as a traceback here
    import torch

    from seqrep.lab.device_bench import (
        exit_speedups,
        forward_row,
        lora_facts,
        qlora_row,
        shape_ceiling,
        train_step_row,
    )
    from seqrep.lab.speed import allocated, gb, reset_memory, rss_peak_mb, table_peak
    from seqrep.lab.synthetic import (
        CONFIGS,
        CONLL_TAGS,
        build_backbone,
        make_labeler,
        sentence_stats,
        synthetic_sentences,
    )
except ImportError as err:
    IMPORT_ERROR: ImportError | None = err
    CONFIGS = {"mistral-7b-shape": {"exit_layers": (19, 32)}, "tiny": {"exit_layers": (2, 4)}}
else:
    IMPORT_ERROR = None


class Missing(RuntimeError):
    """Something the benchmark needs is not installed or not available here."""


def _version(name: str, load: bool = False) -> str | None:
    """The installed version of ``name`` (None when absent); with ``load``, also import it
    (None when that fails: a package that is there but cannot load is not usable)."""
    import importlib.metadata
    import importlib.util

    try:
        if importlib.util.find_spec(name) is None:
            return None
        if load:
            importlib.import_module(name)
    except Exception:  # noqa: BLE001 - any import failure means "not usable here"
        return None
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def check_requirements(device: str) -> dict[str, str | None]:
    """Versions of what the benchmark uses; raises Missing naming what is absent."""
    versions = {name: _version(name, load=name in ("torch", "transformers", "tokenizers"))
                for name in ("torch", "transformers", "tokenizers", "peft", "safetensors",
                             "bitsandbytes")}
    for name in ("torch", "transformers", "tokenizers"):
        if versions[name] is None:
            raise Missing(f"{name} is not installed in {sys.executable}; this benchmark needs "
                          f"torch and transformers (with its tokenizers)")
    if IMPORT_ERROR is not None:
        raise Missing(f"cannot import seqrep ({IMPORT_ERROR}); run from the repository root "
                      f"as PYTHONPATH=src python scripts/bench_gpu.py ...")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise Missing(f"--device {device}: CUDA is not available (torch {torch.__version__}, "
                      f"built for CUDA {torch.version.cuda}); use a CUDA build of torch on a "
                      f"GPU machine, or --device cpu --config tiny")
    return versions


def make_tokenizer() -> Any:
    """A tiny word-level tokenizer for the labeler's Encoder (the passes feed ids directly)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, "<pad>": 3, "a": 4}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>", pad_token="<pad>")


def _error(err: BaseException) -> dict[str, str]:
    line = str(err).splitlines()[0] if str(err) else ""
    return {"error": f"{type(err).__name__}: {line}"[:500],
            "where": traceback.format_exc(limit=-3)[-1500:]}


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (default cuda)")
    p.add_argument("--config", default="mistral-7b-shape", choices=sorted(CONFIGS))
    p.add_argument("--output", type=Path, default=None, help="write the JSON here")
    p.add_argument("--quick", action="store_true",
                   help="256 sentences, 1 timed pass, one batch size (4096 on CUDA)")
    p.add_argument("--sentences", type=int, default=None, help="default 1024 (quick: 256)")
    p.add_argument("--repeats", type=int, default=None, help="timed passes, best counts "
                                                              "(default 3; quick: 1)")
    p.add_argument("--repetitions", type=_ints, default=(0, 1, 4), help="values of r")
    p.add_argument("--exit-layers", type=_ints, default=None,
                   help="default: the config's (19,32 for mistral-7b-shape; 2,4 for tiny)")
    p.add_argument("--max-tokens", type=_ints, default=None,
                   help="padded tokens per batch (default 512,4096; quick: 4096 on CUDA)")
    p.add_argument("--train-sentences", type=int, default=32, help="sentences in the step")
    p.add_argument("--no-train", action="store_true", help="skip the LoRA and QLoRA steps")
    p.add_argument("--qlora-method", choices=("auto", "memory", "saved"), default="auto")
    p.add_argument("--tmp", default=None, help="folder for the 'saved' QLoRA checkpoint")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--allow-cpu", action="store_true",
                   help="run a full-size --config on the CPU anyway")
    args = p.parse_args(argv)
    cuda = args.device.startswith("cuda")
    args.sentences = args.sentences or (256 if args.quick else 1024)
    args.repeats = args.repeats or (1 if args.quick else 3)
    args.exit_layers = tuple(sorted(args.exit_layers or CONFIGS[args.config]["exit_layers"]))
    args.max_tokens = args.max_tokens or ((4096,) if args.quick and cuda else (512, 4096))
    return args


def run(args: argparse.Namespace, versions: dict[str, str | None]) -> dict[str, Any]:
    from seqrep.model.device import resolve_device

    device = resolve_device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    cuda = device.type == "cuda"
    dtype = torch.bfloat16 if cuda else torch.float32
    precision = "bf16" if cuda else "fp32"
    shape = CONFIGS[args.config]["shape"]
    total = shape["num_hidden_layers"]
    if not cuda and args.config != "tiny" and not args.allow_cpu:
        raise Missing(f"--config {args.config} on the CPU would build a full-size model in "
                      f"fp32; use --device cuda on a GPU machine, or --config tiny here "
                      f"(--allow-cpu to insist)")
    if any(not 1 <= x <= total for x in args.exit_layers):
        raise Missing(f"--exit-layers {args.exit_layers}: {args.config} has layers 1..{total}")
    name = torch.cuda.get_device_name(device) if cuda else (platform.processor()
                                                             or platform.machine())
    peak = table_peak(name) if cuda else None
    env = {"device": name, "device_type": device.type, "python": platform.python_version(),
           "torch_cuda": torch.version.cuda, **{k: v for k, v in versions.items()}}
    if cuda:
        props = torch.cuda.get_device_properties(device)
        env.update({"capability": f"{props.major}.{props.minor}",
                    "multiprocessors": props.multi_processor_count,
                    "memory_gb": gb(props.total_memory)})
    print(f"bench_gpu: {args.config} on {name} ({device}), torch {versions['torch']}, "
          f"transformers {versions['transformers']}", flush=True)

    t_start = time.perf_counter()
    ceiling = shape_ceiling(args.config, max(args.max_tokens), device, dtype,
                             repeats=10 if cuda else 5)
    measured = ceiling["tflops"]
    print(f"  matmul ceiling (measured, {ceiling['dtype']}): {measured} TFLOP/s; "
          f"table peak: {peak or 'none for this device'}", flush=True)

    sentences = synthetic_sentences(args.sentences, shape["vocab_size"], args.seed)
    train_sentences = synthetic_sentences(args.train_sentences, shape["vocab_size"],
                                          args.seed + 1)
    rows: list[dict[str, Any]] = []
    builds: list[dict[str, Any]] = []
    deepest = max(args.exit_layers)
    lora: dict[str, Any] = {"skipped": "--no-train"} if args.no_train else {}
    print(HEADER, flush=True)
    for layers in sorted(args.exit_layers, reverse=True):
        reset_memory(device)
        t0 = time.perf_counter()
        try:
            backbone = build_backbone(args.config, layers, device, dtype, make_tokenizer())
        except Exception as err:  # noqa: BLE001 - record and go on
            builds.append({"exit_layer": layers, **_error(err)})
            print(f"  L={layers}: build failed: {builds[-1]['error']}", flush=True)
            continue
        weights = allocated(device)
        builds.append({"exit_layer": layers, "seconds": round(time.perf_counter() - t0, 2),
                       "weights_gb": gb(weights),
                       "parameters": sum(p.numel() for p in backbone.model.parameters()),
                       "layers_built": backbone.info.num_layers})
        for r in args.repetitions:
            labeler = make_labeler(backbone, args.config, r, layers, "frozen", device,
                                   precision).eval()
            for mt in args.max_tokens:
                try:
                    row = forward_row(labeler, sentences, mt, device, args.repeats, measured,
                                      peak, weights)
                except Exception as err:  # noqa: BLE001 - e.g. out of memory
                    row = {"exit_layer": layers, "repetitions": r, "max_tokens": mt,
                           **_error(err)}
                rows.append(row)
                _print_row(row)
            del labeler
        if layers == deepest and not args.no_train:
            lora = _lora_step(backbone, args, train_sentences, device, precision)
        del backbone
    reset_memory(device)
    qlora = _qlora(args, deepest, train_sentences, device, precision, versions)
    result = {
        "kind": "bench_gpu", "env": env,
        "config": {"name": args.config, "model": f"random:{args.config}",
                   "shape": shape, "dtype": str(dtype).replace("torch.", ""),
                   "precision": precision, "attn_implementation": "sdpa",
                   "exit_layers": list(args.exit_layers),
                   "repetitions": list(args.repetitions), "max_tokens": list(args.max_tokens),
                   "repeats": args.repeats, "warmup_passes": 1, "quick": args.quick,
                   "labels": CONLL_TAGS, "bos": True, "seed": args.seed,
                   "inputs": sentence_stats(sentences),
                   "timing": "labeler.forward over every batch (already on the device) under "
                             "torch.no_grad(), device synchronised around each pass; one "
                             "warm-up pass, the fastest of `repeats` passes counts",
                   "flops": "2 * real tokens * linear weights of the blocks + "
                            "4 * blocks * tokens^2 * attention width, per row"},
        "peak_bf16_tflops": peak,
        "peak_source": "table" if peak else "measured (no table entry)",
        "matmul_ceiling": ceiling, "builds": builds, "rows": rows,
        "speedups": exit_speedups(rows), "lora": lora, "qlora": qlora,
        "rss_peak_mb": rss_peak_mb(),
        "total_seconds": round(time.perf_counter() - t_start, 1),
    }
    return result


def _lora_step(backbone: Any, args: argparse.Namespace, sentences: list, device: Any,
               precision: str) -> dict[str, Any]:
    if _version("peft") is None:
        return {"skipped": "peft is not installed"}
    layers = backbone.info.num_layers
    try:
        labeler = make_labeler(backbone, args.config, 1, layers, "lora", device, precision)
        row = train_step_row(labeler, sentences, device, args.repeats)
        row.update({"base": "bf16" if precision == "bf16" else "fp32",
                    "lora": lora_facts(labeler)})
        del labeler
    except Exception as err:  # noqa: BLE001 - record and go on
        row = _error(err)
    _print_step("lora", row)
    return row


def _qlora(args: argparse.Namespace, layers: int, sentences: list, device: Any,
           precision: str, versions: dict[str, str | None]) -> dict[str, Any]:
    if args.no_train:
        row: dict[str, Any] = {"skipped": "--no-train"}
    elif versions.get("bitsandbytes") is None:
        row = {"skipped": "bitsandbytes is not installed"}
    elif _version("bitsandbytes", load=True) is None:
        row = {"skipped": "bitsandbytes is installed but does not import"}
    elif versions.get("peft") is None:
        row = {"skipped": "peft is not installed"}
    else:
        try:
            row = qlora_row(args.config, layers, sentences, device, "bf16"
                            if device.type == "cuda" else precision, args.repeats,
                            args.qlora_method, args.tmp, make_tokenizer())
        except Exception as err:  # noqa: BLE001 - record and go on
            row = _error(err)
        reset_memory(device)
    _print_step("qlora", row)
    return row


# ----------------------------------------------------------------------------- printing
HEADER = (f"{'L':>3} {'r':>2} {'maxtok':>6} {'tokens/s':>11} {'sent/s':>9} {'TFLOP/s':>8} "
          f"{'%peak':>6} {'%meas':>6} {'peakGB':>7} {'waste':>6}")


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def _print_row(row: dict[str, Any]) -> None:
    if "error" in row:
        print(f"{row['exit_layer']:>3} {row['repetitions']:>2} {row['max_tokens']:>6}  "
              f"FAILED {row['error']}", flush=True)
        return
    gb = "-" if row["peak_memory_gb"] is None else f"{row['peak_memory_gb']:.2f}"
    print(f"{row['layers_computed']:>3} {row['repetitions']:>2} {row['max_tokens']:>6} "
          f"{row['tokens_per_second']:>11,.0f} {row['sentences_per_second']:>9,.1f} "
          f"{row['tflops_per_second']:>8.3f} {_pct(row['share_of_peak']):>6} "
          f"{_pct(row['share_of_measured_ceiling']):>6} {gb:>7} "
          f"{_pct(row['padding_waste']):>6}", flush=True)


def _print_step(kind: str, row: dict[str, Any]) -> None:
    if "skipped" in row:
        print(f"  {kind} step: skipped ({row['skipped']})", flush=True)
    elif "error" in row:
        print(f"  {kind} step: FAILED {row['error']}", flush=True)
    else:
        gb = "-" if row["peak_memory_gb"] is None else f"{row['peak_memory_gb']:.2f} GB peak"
        extra = f", {row['method']} quantization" if "method" in row else ""
        print(f"  {kind} step: {row['sentences']} sentences ({row['tokens']} tokens) r=1 "
              f"L={row['exit_layer']}: {1000 * row['seconds']:.1f} ms, {gb}{extra}",
              flush=True)


def print_summary(result: dict[str, Any]) -> None:
    print(HEADER)
    for row in result["rows"]:
        _print_row(row)
    for s in result["speedups"]:
        print(f"  r={s['repetitions']} maxtok={s['max_tokens']}: L={s['exit_layer']} vs "
              f"L={s['against']}: {s['speedup']:.2f}x (ideal {s['ideal_speedup']:.2f}x)")
    _print_step("lora", result["lora"])
    _print_step("qlora", result["qlora"])
    print(f"  total {result['total_seconds']} s")


def main(argv: list[str] | None = None) -> int:
    import warnings

    args = parse_args(argv)
    warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*")
    threads = None
    try:
        versions = check_requirements(args.device)
        threads = torch.get_num_threads()
        result = run(args, versions)
    except Missing as err:
        print(f"bench_gpu: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001 - seqrep's ConfigError and the like: one line
        if type(err).__name__ not in ("ConfigError", "ModelError"):
            raise
        print(f"bench_gpu: {err}", file=sys.stderr)
        return 2
    finally:
        if threads is not None:
            torch.set_num_threads(threads)  # as it was (a caller's process, e.g. a test)
    print_summary(result)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(f"  wrote {args.output}")
    failed = [r for r in result["rows"] + result["builds"] if "error" in r]
    failed += [r for r in (result["lora"], result["qlora"]) if "error" in r]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
