"""The ONNX export's file format: the names in an export folder, the graph's inputs and
outputs, and the helpers the exporter (:mod:`seqrep.export.onnx`), the runtime
(:mod:`seqrep.export.runtime`) and the int8 recipe (:mod:`seqrep.export.quantize`) share, so
none of them imports another for them."""

from __future__ import annotations

import hashlib
from pathlib import Path

META_FILE = "seqrep-onnx.json"
MODEL_FILE = "model.onnx"
FORMAT_VERSION = 1
# the graph's inputs, in order: the Batch's tensors, then a (W,) placeholder whose length is
# the number of words (ONNX needs the output's row count as a tensor shape, not an int)
INPUTS = ("input_ids", "attention_mask", "position_ids", "read_batch", "read_pos", "read_word",
          "read_weight", "words")
OUTPUTS = ("logits", "states")


def require_onnx(*modules: str) -> None:
    """Raise a one-line ConfigError naming the onnx extra when one of ``modules`` is missing
    (:func:`seqrep.core.extras.require`)."""
    from seqrep.core.extras import require

    require("onnx", "ONNX export and inference", modules)


def sha256(path: Path) -> str:
    """The hex sha256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
