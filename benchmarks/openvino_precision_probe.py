"""A probe of OpenVINO's precision choices on a trained run: the bf16 products seqrep uses
(``mixed``, every product's output back in f32; ``mlp``, an MLP's inner products kept in
bf16, what ``--runtime openvino --precision bf16`` runs), OpenVINO's own bf16 hint
(``hint``), and the hint with op types marked to stay f32 (``Add+Multiply+...``, marked with
the runtime-info key ``$KEY``, default ``disable_fp16_compression_0``).

    N=300 python benchmarks/openvino_precision_probe.py RUN mixed mlp hint Add

Prints, per variant, the fastest of two passes over the first N CoNLL-2003 test sentences
(forward only), the states' largest and mean difference from PyTorch fp32 on real tokens,
and how many word tags (the run's head) differ from fp32's.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import openvino as ov
import openvino.opset13 as ops
import torch

from seqrep.data import load_corpus
from seqrep.encode import BATCH_TOKENS
from seqrep.export.openvino import OpenVinoLabeler, bf16_products
from seqrep.model.io import load_labeler
from seqrep.model.labeler import SequenceLabeler

torch.set_num_threads(2)
run = Path(sys.argv[1])
lab = load_labeler(OpenVinoLabeler, run / "best" if (run / "best").is_dir() else run,
                   False).place("cpu", "fp32").eval()
sents = load_corpus("conll2003", "test").sentences[: int(os.environ.get("N", 300))]
words = [s.words for s in sents]
batches = [b for b, _ in lab.batches(words, 32, BATCH_TOKENS, docs=[s.doc_id for s in sents])]
n_words = sum(map(len, words))
with torch.no_grad():
    ref = [SequenceLabeler.hidden(lab, b)[0] for b in batches]
    tags = [lab.head(lab.pool(h, b)).argmax(-1) for h, b in zip(ref, batches)]


def measure(name: str, model: ov.Model, hint: str) -> None:
    compiled = ov.Core().compile_model(model, "CPU", {
        "INFERENCE_PRECISION_HINT": hint, "INFERENCE_NUM_THREADS": 2,
        "PERFORMANCE_HINT": "LATENCY"})
    request = compiled.create_infer_request()

    def forward(b):  # noqa: ANN001, ANN202
        out = request.infer([x.numpy() for x in lab._inputs(b)])
        return torch.from_numpy(out[compiled.output(0)].copy())

    outs = [forward(b) for b in batches]
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        for b in batches:
            forward(b)
        best = min(best, time.perf_counter() - start)
    real = [b.attention_mask.bool() for b in batches]
    diff = max(float((o - r)[m].abs().max()) for o, r, m in zip(outs, ref, real))
    mean = sum(float((o - r)[m].abs().mean()) for o, r, m in zip(outs, ref, real)) / len(ref)
    changed = sum(int((lab.head(lab.pool(o, b)).argmax(-1) != t).sum())
                  for o, b, t in zip(outs, batches, tags))
    print(f"{name:32s} {n_words / best:7.1f} words/s  max {diff:.3g} mean {mean:.3g} "
          f"changed {changed}/{n_words}", flush=True)


def every_product_back_to_f32(model: ov.Model) -> None:
    """The first version of bf16_products: no product's output stays in bf16."""
    for op in model.get_ordered_ops():
        if op.get_type_name() != "MatMul":
            continue
        for i in range(op.get_input_size()):
            if op.input_value(i).get_element_type() == ov.Type.f32:
                op.input(i).replace_source_output(
                    ops.convert(op.input_value(i), ov.Type.bf16).output(0))
        targets = list(op.output(0).get_target_inputs())
        back = ops.convert(op.output(0), ov.Type.f32)
        for target in targets:
            target.replace_source_output(back.output(0))
    model.validate_nodes_and_infer_types()


for variant in sys.argv[2:]:
    model = lab._convert(batches[0])
    if variant == "mixed":
        every_product_back_to_f32(model)
        measure(variant, model, "f32")
    elif variant == "mlp":
        bf16_products(model)
        measure(variant, model, "f32")
    elif variant == "hint":
        measure(variant, model, "bf16")
    else:
        key = os.environ.get("KEY", "disable_fp16_compression_0")
        for op in model.get_ordered_ops():
            if op.get_type_name() in variant.split("+"):
                op.get_rt_info()[key] = ""
        measure(f"hint, {variant} kept ({key})", model, "bf16")
