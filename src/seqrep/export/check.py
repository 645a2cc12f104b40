"""The check every ONNX export passes before it is written: ONNX Runtime and PyTorch label a
fixed set of sentences (one long enough to be cut into windows) at several batch sizes; with
document context, also those sentences as one document (rows of several sentences, cut into
windows of the labeler's budget). :func:`~seqrep.export.onnx.export_labeler` refuses the
export when a logit differs by more than its tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from seqrep.core.contexts import labeler_context
from seqrep.errors import ModelError

CHECK_SENTENCES = [
    ["Obama", "visited", "Paris", "and", "Berlin", "last", "week", "."],
    ["The", "European", "Commission", "said", "on", "Thursday", "it", "disagreed", "with",
     "German", "advice", "to", "consumers", "."],
    ["Peter", "Blackburn"],
    ["BRUSSELS", "1996-08-22"],
    ["Emoji", "🙂", "and", "naïve", "café", ",", "東京", "and", "Москва", "!"],
]
_LONG_BASE = ["Nadim", "Ladki", "reported", "from", "Al-Ain", ",", "United", "Arab", "Emirates",
              ",", "for", "Reuters", "on", "Monday", "."]


def long_sentence(labeler: Any, base: Sequence[str] = _LONG_BASE) -> list[str]:
    """A sentence the labeler's encoder cuts into two or more windows."""
    words = list(base)
    while len(labeler.encoder.segments(words)) < 2:
        if len(words) > 20_000:
            raise ModelError("could not build a sentence long enough to be windowed")
        words = words + list(base)
    return words + list(base[: len(base) // 2])


def check_sentences(labeler: Any) -> list[list[str]]:
    """The fixed sentences an export is checked on, with a windowed long one."""
    return [list(s) for s in CHECK_SENTENCES] + [long_sentence(labeler)]


def _worse(worst: float, diff: float) -> float:
    """The larger logit difference, a NaN over any number (max() would keep 0.0 over a NaN)."""
    return diff if math.isnan(diff) or diff > worst else worst


def parity(labeler: Any, onnx_labeler: Any, sentences: Sequence[Sequence[str]],
           docs: Sequence[Any] | None, batch_sizes: Sequence[int] = (1, 4, 32)
           ) -> dict[str, Any]:
    """Largest absolute logit difference and greedy-tag agreement of ``onnx_labeler``
    against ``labeler`` on ``sentences`` at each batch size (PyTorch at batch size 32);
    ``docs``: the sentences' document ids (document context; None: each alone, said at
    each call)."""
    import torch

    ref = labeler.word_logits(sentences, 32, docs=docs)
    worst, same = 0.0, True
    for bs in batch_sizes:
        got = onnx_labeler.word_logits(sentences, bs, docs=docs)
        for a, b in zip(ref, got):
            if a.shape != b.shape:
                raise ModelError(f"ONNX logits of shape {tuple(b.shape)} for PyTorch's "
                                 f"{tuple(a.shape)}")
            if a.numel():
                worst = _worse(worst, float((a - b).abs().max()))
                same = same and bool(torch.equal(a.argmax(-1), b.argmax(-1)))
    return {"max_abs_logit_diff": worst, "same_argmax": same, "sentences": len(sentences),
            "words": sum(len(s) for s in sentences), "batch_sizes": list(batch_sizes)}


def check_export(labeler: Any, onnx_labeler: Any) -> dict[str, Any]:
    """:func:`parity` on :func:`check_sentences`; with document context, also on them as one
    document (under ``"documents"``), and the top-level figures are the worse of both."""
    sentences = check_sentences(labeler)
    result = parity(labeler, onnx_labeler, sentences, None)
    if labeler_context(labeler).documents:
        doc = parity(labeler, onnx_labeler, sentences, [0] * len(sentences))
        result["documents"] = dict(doc)
        result["max_abs_logit_diff"] = _worse(result["max_abs_logit_diff"],
                                              doc["max_abs_logit_diff"])
        result["same_argmax"] = result["same_argmax"] and doc["same_argmax"]
    return result
