"""int8 beside an fp32 export: the one recipe that kept CoNLL-2003 F1 in results/int8.json.

``quantize_dynamic`` with int8 per-channel weights and 7-bit range (``reduce_range``: on AVX2
CPUs without VNNI the u8 x s8 products saturate, and full-range int8 fell to F1 1.9), on the
linear layers' MatMuls only, with every linear of the first and last layers and every MLP
down-projection kept in fp32. Measured on SmolLM2-135M cut at layer 10 (r = 1), first 1,000
CoNLL-2003 test sentences: F1 44.34 against fp32's 44.16, 1.24x fp32 ONNX Runtime's speed.
Without the fp32 nodes it lost 1.9 points; static QDQ calibration lost 0.2 to 5.7 and ran no
faster (see ``scripts/quantize_int8.py``). On Gemma-3-270m's CPU recipe (r = 1, layer 11),
the full test set: F1 91.22 against 91.25, 1.28x (results/int8-gemma.json). Other models may
differ: check F1 before use.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

INT8_FILE = "model.int8.onnx"
INT8_RECIPE = ("onnxruntime quantize_dynamic: int8 per-channel weights (reduce_range), dynamic "
               "uint8 activations, linear MatMuls only; first and last layers' linears and "
               "every MLP down-projection (down_proj, an encoder's output.dense) in fp32")


def linear_matmuls(model: Any) -> dict[str, str]:
    """``{node name: module path}`` of the MatMuls whose second input is a weight (the
    linear layers), read from the exporter's name-scope metadata."""
    inits = {i.name for i in model.graph.initializer}
    out = {}
    for node in model.graph.node:
        if node.op_type != "MatMul" or len(node.input) < 2 or node.input[1] not in inits:
            continue
        meta = {p.key: p.value for p in node.metadata_props}
        module = ""
        try:
            scopes = ast.literal_eval(meta.get("pkg.torch.onnx.name_scopes", "[]"))
            module = next((s for s in reversed(scopes) if s.startswith("lab.")), "")
        except (ValueError, SyntaxError):
            pass
        out[node.name] = module
    return out


# the MLP's down-projection: a decoder's down_proj; a BERT-type encoder's (BERT, RoBERTa,
# MPNet) layer.N.output.dense (not the attention's attention.output.dense)
_DOWN = re.compile(r"(down_proj|\.layer\.\d+\.output\.dense)$")


def sensitive(modules: dict[str, str], num_layers: int) -> list[str]:
    """The nodes kept in fp32: every linear of the first and last layers (a decoder's
    ``layers.N``, a BERT-type encoder's ``layer.N``), and every MLP down-projection."""
    keep = []
    for name, module in modules.items():
        m = re.search(r"layers?\.(\d+)\.", module)
        layer = int(m.group(1)) if m else -1
        if layer in (0, num_layers - 1) or _DOWN.search(module):
            keep.append(name)
    return keep


def quantize_int8(export_dir: str | Path) -> Path:
    """Write ``model.int8.onnx`` beside an export's fp32 graph and record it (file, sha256,
    recipe) under ``variants.int8`` in ``seqrep-onnx.json``; returns the file.
    ``OnnxLabeler.from_pretrained(DIR, variant="int8")`` loads it."""
    import logging

    from seqrep.errors import ModelError
    from seqrep.export.files import META_FILE, require_onnx, sha256
    from seqrep.export.folder import backbone_info, graph_file, read_meta
    from seqrep.files.atomic import write_json

    require_onnx("onnx", "onnxruntime")
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    export_dir = Path(export_dir)
    meta = read_meta(export_dir)
    source, _ = graph_file(export_dir, meta, None, None)
    layers = backbone_info(export_dir, meta).num_layers
    modules = linear_matmuls(onnx.load(str(source), load_external_data=False))
    if not modules:
        raise ModelError(f"{source}: no linear MatMuls to quantize")
    keep = set(sensitive(modules, layers))
    from seqrep.files import owner

    owner.claim(export_dir, "onnx-export")  # the int8 graph is listed with the export
    target = export_dir / INT8_FILE
    tmp = owner.temporary(target)
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # quantize_dynamic's advice to pre-process
    try:
        quantize_dynamic(str(source), str(tmp), per_channel=True, reduce_range=True,
                         weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"],
                         nodes_to_quantize=[n for n in modules if n not in keep])
        tmp.replace(target)
    finally:
        root.setLevel(level)
        tmp.unlink(missing_ok=True)
    variants = meta.get("variants")
    meta["variants"] = {**(variants if isinstance(variants, dict) else {}), "int8": {
        "model_file": INT8_FILE, "sha256": sha256(target), "recipe": INT8_RECIPE,
        "quantized_nodes": len(modules) - len(keep), "fp32_nodes": len(keep)}}
    write_json(export_dir / META_FILE, meta)
    return target
