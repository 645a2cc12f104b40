"""Exporting a trained labeler to ONNX and running it with ONNX Runtime, without a torch model.

- :func:`~seqrep.export.onnx.export_onnx` writes the cut backbone, the word pooling and the
  head as one ONNX graph that maps a :class:`~seqrep.encode.batch.Batch`'s tensors to word
  logits (and word states), with the tokenizer, the labeler config and ``seqrep-onnx.json``
  (opset, exporter, versions, the graph's sha256, the parity measured at export) beside it.
- :class:`~seqrep.export.runtime.OnnxLabeler` loads such a folder and offers the inference
  interface of :class:`~seqrep.model.labeler.SequenceLabeler` (``config``, ``encoder``,
  ``word_logits``, ``word_states`` ...), so :func:`~seqrep.predict.tagger.predict_text`,
  evaluation and
  the server run on it unchanged.
- :mod:`~seqrep.export.folder` checks an export folder before anything runs (any folder
  with a ``seqrep-onnx.json`` is loaded by the default runtime, so it is checked like a run
  folder: bounded metadata, a graph inside the folder, a tokenizer that runs no code and has
  an embedding for every id).
- :func:`~seqrep.export.quantize.quantize_int8` adds the int8 graph that kept F1 (within 0.5
  points of fp32 on CoNLL-2003, see ``results/int8.json``) beside the fp32 one.
- :func:`load` loads a folder as a command's one :class:`~seqrep.config.InferenceConfig`
  says: its runtime loads it (:meth:`seqrep.core.runtimes.Runtime.load`, with the loaders of
  :mod:`~seqrep.export.loaders`); :func:`load_labeler` is the same from loose values, for a
  program.

Both need the ``onnx`` extra: ``pip install 'seqrep-labeler[onnx]'``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from seqrep.config import InferenceConfig


def load_labeler(path, runtime: str = "auto", trust_remote_code: bool = False,  # noqa: ANN001, ANN201
                 device: str = "auto", precision: str = "auto", threads: int | None = None,
                 context_overlap: float | None = None):
    """The labeler in ``path`` on the chosen runtime, for a program (the commands build one
    :class:`~seqrep.config.InferenceConfig` and call :func:`load`).

    Args:
        path: a run or labeler folder (torch), or a folder from ``seqrep export --onnx``.
        runtime: a name of :data:`seqrep.core.runtimes.RUNTIMES`: ``torch``
            (:class:`~seqrep.model.labeler.SequenceLabeler`), ``openvino``
            (:class:`~seqrep.export.openvino.OpenVinoLabeler`: the backbone on OpenVINO),
            ``onnx``
            (:class:`~seqrep.export.runtime.OnnxLabeler`), ``onnx-int8`` (its int8 graph,
            written by ``seqrep export --int8``), or ``auto`` (onnx when ``path`` is an ONNX
            export, else torch).
        trust_remote_code, device, precision: as for SequenceLabeler.from_pretrained (the
            ONNX runtime accepts only the CPU and fp32, or auto).
        threads: ONNX Runtime's intra-op threads (default: its own), or OpenVINO's
            (default: torch's thread count); torch keeps its setting.
        context_overlap: with document context, the share of a window the next one
            repeats (default: the labeler's own; less labels in fewer tokens).
    """
    from seqrep.config import InferenceConfig

    # checked once, by the config: a bad name reads as the command's (--runtime 'x'; ...)
    return load(path, InferenceConfig(runtime=runtime, trust_remote_code=trust_remote_code,
                                      device=device, precision=precision, threads=threads,
                                      context_overlap=context_overlap))


def load(path: str | Path, settings: InferenceConfig) -> Any:
    """The labeler in ``path`` as one validated :class:`~seqrep.config.InferenceConfig`
    says: its runtime (``auto``: onnx for an ONNX export folder, else torch) loads it, placed
    on its device and precision. The names were checked when ``settings`` was built, so this
    is a lookup and one call (:meth:`seqrep.core.runtimes.Runtime.load`)."""
    from seqrep.core.runtimes import pick
    from seqrep.export.loaders import exported

    labeler = pick(settings.runtime, exported(path)).load(path, settings)
    overlap = getattr(settings, "context_overlap", None)
    return labeler if overlap is None else with_overlap(labeler, overlap)


def with_overlap(labeler: Any, overlap: float) -> Any:
    """``labeler`` reading documents in windows that repeat ``overlap`` of each other
    (``--context-overlap``): its config and encoder say so, so a partial output's identity
    and the labeler's card see it; returns the labeler. A sentence-level labeler is
    unchanged in what it makes (its rows have no windows)."""
    from seqrep.encode.document import check_overlap

    overlap = check_overlap(overlap, "context_overlap=")
    labeler.config = labeler.config.replace(context_overlap=overlap)
    labeler.encoder.context_overlap = overlap
    return labeler
