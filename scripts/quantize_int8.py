"""int8 for the exported labeler, only with accuracy kept: CoNLL-2003 test F1 and speed of
ONNX Runtime int8 variants against fp32 ONNX Runtime and PyTorch fp32, side by side, in one run.

    . scripts/env.sh && python scripts/quantize_int8.py              # results/int8.json

Variants (all on the linear layers' MatMuls, whose second input is a weight; the attention
products, the embedding and the head stay fp32):

- ``dynamic``: onnxruntime.quantization.quantize_dynamic, int8 per-channel weights with
  activations quantized per tensor at run time (MatMulInteger); ``dynamic-rr`` the same with
  7-bit weights (``reduce_range``, ONNX Runtime's advice against u8s8 saturation on AVX2
  without VNNI); ``dynamic-keep`` the better of the two with the most sensitive nodes kept in
  fp32 (``nodes_to_exclude``: every linear of the first and last layers and every down_proj,
  the layers that carry outlier activations).
- ``static``: quantize_static, QDQ, per-channel int8 weights and uint8 activations with
  MinMax ranges calibrated on training sentences; ``static-rr`` with 7-bit weights;
  ``static-keep`` the better of the two with the same nodes in fp32.
- ``weight-only``: MatMulNBits with 8-bit symmetric weights in blocks of 32 and fp32 compute.

Every variant labels the same sentences with the same batches; the F1 is the labeler's own
decoding (constrained) and greedy, the speed is sentences per second of one timed pass after
a warm-up. The rule: int8 ships as an option only if its F1 stays within 0.5 points of fp32 (loses
at most 0.5).
The CPU is shared with other work, so speeds are indicative (each pass is timed once).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHIP_POINTS = 0.5  # largest F1 loss (points) that an int8 variant may have to ship


class Calibration:
    """onnxruntime's CalibrationDataReader over the labeler's batches of some sentences."""

    def __init__(self, onnx_labeler: Any, sentences: list[list[str]], batch_size: int) -> None:
        import numpy as np

        self.feeds = []
        for batch, _ in onnx_labeler.batches(sentences, batch_size):
            feed = {k: getattr(batch, k).numpy() for k in (
                "input_ids", "attention_mask", "position_ids", "read_batch", "read_pos",
                "read_word")}
            feed["read_weight"] = batch.read_weight.numpy().astype(np.float32)
            feed["words"] = np.zeros(batch.num_words, dtype=np.float32)
            self.feeds.append(feed)
        self._it = iter(self.feeds)

    def get_next(self) -> dict | None:
        return next(self._it, None)

    def rewind(self) -> None:
        self._it = iter(self.feeds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", default="runs/serve-demo", help="trained run folder")
    ap.add_argument("--onnx", default="runs/serve-demo-onnx",
                    help="its fp32 export (made if missing); the variants are written beside it")
    ap.add_argument("--sentences", type=int, default=1000, help="first N test sentences")
    ap.add_argument("--calibration", type=int, default=64,
                    help="training sentences for static calibration")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2, help="torch and ONNX Runtime threads")
    ap.add_argument("--budget-s", type=float, default=900,
                    help="skip the remaining variants past this many seconds")
    ap.add_argument("--only", default="", help="comma list of variants (default: all)")
    ap.add_argument("--output", default="results/int8.json")
    args = ap.parse_args()

    os.chdir(ROOT)
    start_all = time.perf_counter()
    load_start = os.getloadavg()
    import logging

    logging.getLogger().setLevel(logging.ERROR)  # quantize_*'s advice to pre-process
    import onnx
    import onnxruntime
    import torch
    from onnxruntime.quantization import (
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )

    from seqrep.data import load_corpus
    from seqrep.evaluate import check_labels, evaluate_logits
    from seqrep.export.files import META_FILE
    from seqrep.export.onnx import export_onnx
    from seqrep.export.quantize import linear_matmuls, sensitive
    from seqrep.export.runtime import OnnxLabeler
    from seqrep.model.device import cpu_features
    from seqrep.model.labeler import SequenceLabeler

    torch.set_num_threads(args.threads)
    run, out = Path(args.run), Path(args.onnx)
    if not (out / META_FILE).is_file():
        t = time.perf_counter()
        export_onnx(run, out)
        print(f"exported {run} -> {out} in {time.perf_counter() - t:.0f} s", flush=True)
    meta = json.loads((out / META_FILE).read_text(encoding="utf-8"))
    fp32_path = out / meta["model_file"]

    pt = SequenceLabeler.from_pretrained(run, device="cpu", precision="fp32")
    corpus = load_corpus("conll2003", "test")
    gold = check_labels([s for s in corpus.sentences if len(s)], pt.config.labels,
                        "conll2003", None, pt.config.task)[: args.sentences]
    words = [list(s.words) for s in gold]
    train = [list(s.words) for s in load_corpus("conll2003", "train").sentences if len(s)]
    calib = random.Random(0).sample(train, args.calibration)
    warm = words[:16]

    def measure(name: str, lab: Any, extra: dict[str, Any]) -> dict[str, Any]:
        lab.word_logits(warm, args.batch_size, docs=None)
        t = time.perf_counter()
        logits = lab.word_logits(words, args.batch_size, docs=None)
        seconds = time.perf_counter() - t
        res = evaluate_logits(lab, gold, logits)
        greedy = evaluate_logits(lab, gold, logits, "greedy")
        row = {"variant": name, "f1": round(100 * res["f1"], 2),
               "f1_greedy": round(100 * greedy["f1"], 2), "seconds": round(seconds, 2),
               "sentences_per_s": round(len(words) / seconds, 2), **extra}
        print(f"{name:>14}: F1 {row['f1']:.2f} (greedy {row['f1_greedy']:.2f}), "
              f"{row['sentences_per_s']:.2f} sent/s", flush=True)
        return row | {"_logits": logits}

    rows: list[dict[str, Any]] = []
    rows.append(measure("pytorch-fp32", pt, {"runtime": "torch " + torch.__version__}))
    ref = rows[0]["_logits"]
    del pt

    def compare(logits: list) -> dict[str, Any]:
        n = same = 0
        worst = 0.0
        for a, b in zip(ref, logits):
            if a.numel():
                n += a.shape[0]
                same += int((a.argmax(-1) == b.argmax(-1)).sum())
                worst = max(worst, float((a - b).abs().max()))
        return {"argmax_same_as_pytorch": round(same / max(n, 1), 6),
                "identical_argmax": same == n, "max_abs_logit_diff_vs_pytorch": worst}

    def ort(name: str, model_file: str, recipe: str, build_s: float) -> dict[str, Any]:
        lab = OnnxLabeler.from_pretrained(out, args.threads, model_file=model_file)
        size = (out / model_file).stat().st_size / 2**20
        row = measure(name, lab, {"runtime": "onnxruntime " + onnxruntime.__version__,
                                  "recipe": recipe, "model_mib": round(size, 1),
                                  "build_seconds": round(build_s, 1)})
        row.update(compare(row["_logits"]))
        return row

    rows.append(ort("onnx-fp32", fp32_path.name, "the exported graph", 0.0))
    model = onnx.load(str(fp32_path))
    modules = linear_matmuls(model)
    linears = list(modules)
    keep = sensitive(modules, meta["backbone"]["num_layers"])
    del model
    print(f"{len(linears)} linear MatMuls; {len(keep)} kept fp32 by the -keep variants",
          flush=True)
    onnx_fp32 = OnnxLabeler.from_pretrained(out, args.threads)

    def dynamic(reduce_range: bool, exclude: list[str]) -> None:
        quantize_dynamic(str(fp32_path), str(target), per_channel=True,
                         reduce_range=reduce_range, weight_type=QuantType.QInt8,
                         nodes_to_quantize=linears, nodes_to_exclude=exclude or None,
                         op_types_to_quantize=["MatMul"])

    def static(reduce_range: bool, exclude: list[str]) -> None:
        quantize_static(str(fp32_path), str(target),
                        Calibration(onnx_fp32, calib, 16), quant_format=QuantFormat.QDQ,
                        per_channel=True, reduce_range=reduce_range,
                        activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8, nodes_to_quantize=linears,
                        nodes_to_exclude=exclude or None, op_types_to_quantize=["MatMul"],
                        calibrate_method=CalibrationMethod.MinMax,
                        extra_options={"WeightSymmetric": True, "ActivationSymmetric": False})

    def weight_only() -> None:
        from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

        q = MatMulNBitsQuantizer(str(fp32_path), bits=8, block_size=32, is_symmetric=True,
                                 nodes_to_include=linears, op_types_to_quantize=("MatMul",))
        q.process()
        q.model.save_model_to_file(str(target), use_external_data_format=False)

    def better_rr(kind: str) -> bool:
        f1 = {r["variant"]: r.get("f1", -1) for r in rows}
        return f1.get(f"{kind}-rr", -1) > f1.get(kind, -1)

    variants = [
        ("dynamic", "quantize_dynamic: int8 per-channel weights, per-tensor dynamic uint8 "
                    "activations (MatMulInteger)", lambda: dynamic(False, [])),
        ("dynamic-rr", "as dynamic with 7-bit weights (reduce_range)", lambda: dynamic(True, [])),
        ("dynamic-keep", "the better of dynamic / dynamic-rr with the first and last layers' "
                         "linears and every down_proj in fp32",
         lambda: dynamic(better_rr("dynamic"), keep)),
        ("weight-only", "MatMulNBits: 8-bit symmetric weights in blocks of 32, fp32 compute",
         weight_only),
        ("static", f"quantize_static QDQ: int8 per-channel weights, uint8 activations, MinMax "
                   f"calibration on {args.calibration} training sentences",
         lambda: static(False, [])),
        ("static-rr", "as static with 7-bit weights (reduce_range)", lambda: static(True, [])),
        ("static-keep", "the better of static / static-rr with the first and last layers' "
                        "linears and every down_proj in fp32",
         lambda: static(better_rr("static"), keep)),
    ]
    only = {x for x in args.only.split(",") if x}
    skipped = []
    for name, recipe, build in variants:
        if only and name not in only:
            continue
        elapsed = time.perf_counter() - start_all
        if elapsed > args.budget_s:
            skipped.append(name)
            print(f"{name:>14}: skipped (time budget, {elapsed:.0f} s used)", flush=True)
            continue
        target = out / f"model.{name}.onnx"
        t = time.perf_counter()
        try:
            build()
        except Exception as err:  # noqa: BLE001 - a recipe that fails is a result too
            rows.append({"variant": name, "recipe": recipe,
                         "error": f"{type(err).__name__}: {str(err).splitlines()[0][:300]}"})
            print(f"{name:>14}: failed to build: {rows[-1]['error']}", flush=True)
            continue
        rows.append(ort(name, target.name, recipe, time.perf_counter() - t))
        if name.endswith("-keep"):
            rr = better_rr(name.split("-")[0])
            rows[-1]["recipe"] += " (reduce_range)" if rr else " (full range)"
            rows[-1]["fp32_nodes"] = len(keep)

    pt_row, fp_row = rows[0], rows[1]
    for r in rows:
        r.pop("_logits", None)
        if "f1" not in r:
            continue
        r["f1_delta_vs_onnx_fp32"] = round(r["f1"] - fp_row["f1"], 2)
        r["speedup_vs_onnx_fp32"] = round(r["sentences_per_s"] / fp_row["sentences_per_s"], 2)
        r["speedup_vs_pytorch"] = round(r["sentences_per_s"] / pt_row["sentences_per_s"], 2)
        if r["variant"] not in ("pytorch-fp32", "onnx-fp32"):
            r["ships"] = r["f1_delta_vs_onnx_fp32"] >= -SHIP_POINTS
    ok = [r for r in rows if r.get("ships")]
    best = max(ok, key=lambda r: r["sentences_per_s"]) if ok else None
    decision = (f"ship {best['variant']} as an option: F1 {best['f1']:.2f} vs fp32 "
                f"{fp_row['f1']:.2f}, {best['speedup_vs_onnx_fp32']:.2f}x fp32 ONNX Runtime"
                if best else f"no int8 variant kept F1 within {SHIP_POINTS} points of fp32; "
                             f"int8 does not ship")
    report = {
        "what": "int8 ONNX Runtime variants of the exported labeler vs fp32 ONNX Runtime and "
                "PyTorch fp32: CoNLL-2003 test F1 and throughput, one run",
        "command": "python scripts/quantize_int8.py " + " ".join(sys.argv[1:]),
        "run": str(run), "labeler": meta["labeler"], "export": {
            "opset": meta["opset"], "exporter": meta["exporter"], "sha256": meta["sha256"]},
        "sentences": len(words), "words": sum(map(len, words)),
        "sentences_note": f"the first {len(words)} non-empty sentences of the CoNLL-2003 "
                          f"test split ({sum(1 for s in corpus.sentences if len(s))} in all)",
        "batch_size": args.batch_size, "threads": args.threads,
        "machine": {**cpu_features(), "cores": os.cpu_count(),
                    "python": platform.python_version(), "shared": True},
        "rule": f"int8 ships only if its F1 stays within {SHIP_POINTS} points of fp32 ONNX "
                f"(a loss of at most {SHIP_POINTS}; a gain counts as kept)",
        "load_average": {"start": load_start, "end": os.getloadavg()},
        "fp32_onnx_vs_pytorch": {k: fp_row.get(k) for k in (
            "identical_argmax", "argmax_same_as_pytorch", "max_abs_logit_diff_vs_pytorch",
            "speedup_vs_pytorch")},
        "variants": rows, "skipped": skipped, "decision": decision,
        "seconds": round(time.perf_counter() - start_all, 1),
    }
    path = Path(args.output)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\n{'variant':>14} {'F1':>6} {'dF1':>6} {'sent/s':>7} {'x onnx':>7} {'x torch':>7}")
    for r in rows:
        if "f1" in r:
            print(f"{r['variant']:>14} {r['f1']:6.2f} {r['f1_delta_vs_onnx_fp32']:+6.2f} "
                  f"{r['sentences_per_s']:7.2f} {r['speedup_vs_onnx_fp32']:7.2f} "
                  f"{r['speedup_vs_pytorch']:7.2f}")
        else:
            print(f"{r['variant']:>14} {r['error']}")
    print(decision)
    print(f"-> {path} ({report['seconds']:.0f} s)")


if __name__ == "__main__":
    main()
