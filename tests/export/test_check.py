"""The export check's document rows (issue 24), on stand-in labelers: with document context the
check also labels its sentences as one document, and the top-level figures are the worse of
the sentence and document checks. Needs neither ONNX nor a model."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import torch

from seqrep.export.check import CHECK_SENTENCES, check_export


class _Labeler:
    """Logits of zeros, except (``off_in_documents``) in document rows: one logit of ``off``
    (1.0) on another class, so both the largest difference (1.0) and the greedy tag change
    there."""

    def __init__(self, context: str, off_in_documents: bool = False, off: float = 1.0) -> None:
        self.config = SimpleNamespace(context=context)
        self.encoder = SimpleNamespace(segments=lambda words: [0, 1])  # "long" at once
        self.off_in_documents, self.off = off_in_documents, off
        self.docs_seen: list[Any] = []

    def word_logits(self, sentences: Any, batch_size: int = 32, docs: Any = None) -> list:
        self.docs_seen.append(None if docs is None else list(docs))
        out = [torch.zeros(len(s), 3) for s in sentences]
        if docs is not None and self.off_in_documents:
            for x in out:
                x[:, 1] = self.off
        return out


def test_a_document_labeler_is_also_checked_on_one_document() -> None:
    ref, onnx = _Labeler("document"), _Labeler("document", off_in_documents=True)
    result = check_export(ref, onnx)
    n = len(CHECK_SENTENCES) + 1  # and the long sentence
    assert result["documents"]["sentences"] == n
    assert result["documents"]["max_abs_logit_diff"] == 1.0
    assert result["documents"]["same_argmax"] is False
    # the sentence rows agree; the top level reports the worse, document, figures
    assert result["max_abs_logit_diff"] == 1.0 and result["same_argmax"] is False
    assert [0] * n in onnx.docs_seen and [0] * n in ref.docs_seen  # all of them one document


def test_a_sentence_labeler_is_checked_on_sentences_only() -> None:
    ref, onnx = _Labeler("sentence"), _Labeler("sentence", off_in_documents=True)
    result = check_export(ref, onnx)
    assert "documents" not in result
    assert result["max_abs_logit_diff"] == 0.0 and result["same_argmax"] is True
    assert onnx.docs_seen == [None, None, None]  # batch sizes 1, 4 and 32


def test_a_nan_logit_is_the_worst_difference() -> None:
    """A NaN in the ONNX logits is reported, not hidden: it beats the 0.0 of the words before
    it within the document check, and the sentence check's 0.0 in the top-level figures
    (max() would keep 0.0 in both places)."""
    ref, onnx = _Labeler("document"), _Labeler("document", True, off=float("nan"))
    result = check_export(ref, onnx)
    assert math.isnan(result["documents"]["max_abs_logit_diff"])
    assert math.isnan(result["max_abs_logit_diff"])
