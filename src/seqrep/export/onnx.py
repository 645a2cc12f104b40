"""``export_onnx``: a saved labeler -> one ONNX graph + tokenizer + config, for ONNX Runtime.

The graph is what :meth:`SequenceLabeler.forward` runs: the cut backbone (with its unmasked
layers), the pooling of the read positions and the linear head. It maps a
:class:`~seqrep.encode.batch.Batch`'s tensors to ``logits`` ``(W, labels)`` and ``states``
``(W, H)``, with the batch size, the length, the number of reads and the number of words all
dynamic. The repetition layout (r, what is read, windows) is not in the graph: it lives in
the Encoder, which :class:`~seqrep.export.runtime.OnnxLabeler` rebuilds from the saved config
and tokenizer, so the batches are those of PyTorch.

It is exported with ``torch.onnx.export(dynamo=True)`` (``torch.export`` in non-strict mode,
which runs the model's Python, so the :class:`~seqrep.model.masks.Unmasker`'s forward
pre-hooks are traced and unmasked layers stay bidirectional in the graph). The TorchScript
exporter (``dynamo=False``) is not used: with transformers 5 it bakes the traced batch's
lengths into the attention masks, and its logits on other shapes are wrong.

Every export is checked before it is written (:mod:`seqrep.export.check`): ONNX Runtime and
PyTorch label a fixed set of sentences (one of them long enough to be cut into windows; with
document context, also all of them as one document) at several batch sizes, and the export
is refused when a logit differs by more than ``tolerance`` (whether every greedy tag stays
the same is recorded too). A labeler's context setting travels in its config, so an export
of a document-context labeler labels documents as it does.

Layout::

    OUT/model.onnx          the graph (weights inside; model.onnx.data beside it past 1.5 GB)
    OUT/seqrep-onnx.json    opset, exporter, versions, the graph's sha256, inputs, the check
    OUT/config.json         the labeler config, as in a labeler folder (read_config reads it)
    OUT/tokenizer/          the tokenizer files
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import logging
import math
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import seqrep
from seqrep.errors import ConfigError, ModelError, first_line
from seqrep.export.check import check_export
from seqrep.export.files import (
    FORMAT_VERSION,
    INPUTS,
    META_FILE,
    MODEL_FILE,
    OUTPUTS,
    require_onnx,
    sha256,
)

if TYPE_CHECKING:
    import torch

    from seqrep.encode.batch import Batch
    from seqrep.model.backbone import BackboneInfo
    from seqrep.model.labeler import SequenceLabeler

DEFAULT_OPSET = 18
# export-time refusal threshold on the largest absolute logit difference (fp32 vs fp32;
# measured differences are about 1e-6 on the tiny test models)
TOLERANCE = 1e-3
# weights past this size go to an external data file (a protobuf holds at most 2 GB)
EXTERNAL_DATA_BYTES = 1_500_000_000
# a seqrep-onnx.json is a few kB; a larger one is not read whole
MAX_META_BYTES = 1 << 22

class _Graph:
    """Builds the traced module lazily (torch is imported only when exporting)."""

    @staticmethod
    def module(labeler: SequenceLabeler) -> torch.nn.Module:
        import torch

        class LabelerGraph(torch.nn.Module):
            def __init__(self, lab: SequenceLabeler) -> None:
                super().__init__()
                self.lab = lab

            def forward(self, input_ids, attention_mask, position_ids, read_batch,  # noqa: ANN001, ANN201
                        read_pos, read_word, read_weight, words):
                lab = self.lab
                with lab.unmasker.active(attention_mask):
                    out = lab.backbone(input_ids=input_ids, attention_mask=attention_mask,
                                       position_ids=lab.model_positions(position_ids),
                                       use_cache=False)
                hidden = out.last_hidden_state
                # SequenceLabeler.pool, with the word count read from a tensor's shape
                picked = hidden[read_batch, read_pos].float() * read_weight[:, None]
                states = picked.new_zeros(words.shape[0], hidden.shape[-1]).index_add(
                    0, read_word, picked)
                return lab.head(states), states

        return LabelerGraph(labeler).eval()


def _example(labeler: SequenceLabeler) -> Batch:
    """A batch whose dynamic sizes are all different and above 1 (torch.export specialises a
    dimension of size 0 or 1 to a constant)."""
    for n in range(3, 64):
        sentences = [["example"] * n, ["words", "."] * max(1, n // 3)]
        items = labeler.encoder.items(sentences)[:2]
        if len(items) < 2:
            continue
        batch = labeler.encoder.collate(items)
        B, T = batch.input_ids.shape
        R, W = batch.read_batch.shape[0], batch.num_words
        if len({B, T, R}) == 3 and len({B, T, W}) == 3 and min(B, T, R, W) >= 2:
            return batch
    raise ModelError("could not build an example batch for the export")


def _feeds(batch: Batch) -> tuple:
    import torch

    return (batch.input_ids, batch.attention_mask, batch.position_ids, batch.read_batch,
            batch.read_pos, batch.read_word, batch.read_weight,
            torch.zeros(batch.num_words, dtype=torch.float32))


@contextlib.contextmanager
def _quiet_exporter() -> Iterator[None]:
    """Silence the exporter's progress lines and its notes on axis names and deprecations,
    which say nothing about this export; errors still raise."""
    loggers = [logging.getLogger(n) for n in ("torch.onnx", "torch.export", "torch._dynamo",
                                               "onnxscript")]
    levels = [lg.level for lg in loggers]
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\.onnx")
        warnings.filterwarnings("ignore", category=FutureWarning)
        warnings.filterwarnings("ignore", message=r".*axis name.*")
        for lg in loggers:
            lg.setLevel(logging.ERROR)
        try:
            yield
        finally:
            for lg, level in zip(loggers, levels):
                lg.setLevel(level)


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"seqrep": seqrep.__version__}
    for name in ("torch", "transformers", "onnx", "onnxscript", "onnxruntime"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            pass
    return out


def is_export(folder: Path) -> bool:
    """Whether ``folder`` holds a seqrep ONNX export (its metadata file says so)."""
    from seqrep.files.atomic import read_json

    try:
        data = read_json(Path(folder) / META_FILE, "an export", ModelError, MAX_META_BYTES)
    except ModelError:
        return False
    return isinstance(data, dict) and data.get("format") == "seqrep-onnx"


def check_export_target(out_dir: str | Path, source: str | Path | None = None,
                        overwrite: bool = False) -> None:
    """Refuse an export folder whose replacing would lose data, before anything is loaded.

    ``out_dir`` may be missing or empty, or, with ``overwrite``, a folder holding only what
    seqrep wrote (:func:`seqrep.files.owner.check_folder`); it may not be ``source`` (the
    run exported), lie inside it or hold it.

    Raises:
        ConfigError: one line naming the folder and why.
    """
    out = Path(out_dir).resolve()
    if source is not None:
        src = Path(source).resolve()
        if out == src or src in out.parents or out in src.parents:
            raise ConfigError(f"--onnx {out_dir} is the run {source}, lies inside it or holds "
                              f"it; writing there would replace the run: choose a folder "
                              f"outside it")
    from seqrep.files import owner

    owner.check_folder(Path(out_dir), overwrite, option="--onnx")


def export_labeler(labeler: SequenceLabeler, out_dir: str | Path, opset: int = DEFAULT_OPSET,
                   check: bool = True, tolerance: float = TOLERANCE,
                   source: str | None = None, total_layers: int | None = None,
                   overwrite: bool = False) -> Path:
    """Export a loaded fp32 labeler (on the CPU) to ``out_dir``; see :func:`export_onnx`.

    ``total_layers``: the uncut model's layer count when the loaded backbone no longer knows
    it (a saved full fine-tune reloads already cut)."""
    require_onnx("onnx", "onnxscript", "onnxruntime")
    import torch

    from seqrep.files.atomic import atomic_dir, write_json
    from seqrep.model.backbone import quiet_transformers

    _check_exportable(labeler)
    check_export_target(out_dir, source, overwrite)
    labeler.eval()
    graph, example = _Graph.module(labeler), _example(labeler)
    out_dir = Path(out_dir)
    start = time.perf_counter()
    with atomic_dir(out_dir, "onnx-export") as tmp, quiet_transformers(), torch.no_grad(), \
            _quiet_exporter():
        _write_graph(labeler, graph, example, tmp / MODEL_FILE, opset)
        seconds = time.perf_counter() - start
        labeler.tokenizer.save_pretrained(str(tmp / "tokenizer"))
        info = labeler.backbone_info
        if total_layers:
            info = dataclasses.replace(info, total_layers=int(total_layers))
        write_json(tmp / "config.json", {"seqrep_version": seqrep.__version__,
                                         "total_layers": info.total_layers,
                                         "labeler": labeler.config.to_dict()})
        meta = _meta(labeler, info, tmp, opset, source, seconds)
        if check:
            meta["check"] = _parity_check(labeler, tmp / MODEL_FILE, meta, tolerance)
        write_json(tmp / META_FILE, meta)
    return out_dir


def _check_exportable(labeler: SequenceLabeler) -> None:
    """Refuse (ConfigError) a labeler the export cannot trace: a 4-bit backbone, weights
    other than fp32, a device other than the CPU."""
    import torch

    if getattr(labeler.backbone, "is_loaded_in_4bit", False):
        raise ConfigError("a 4-bit (qlora) backbone cannot be exported; export_onnx puts a "
                          "QLoRA run's adapter on the full-precision base and merges it")
    dtypes = {p.dtype for p in labeler.parameters()}
    if dtypes != {torch.float32}:
        raise ConfigError(f"ONNX export needs fp32 weights (found {sorted(map(str, dtypes))}); "
                          f"export_onnx converts a saved labeler itself")
    if labeler.placement.device.type != "cpu":
        raise ConfigError("export a labeler placed on the CPU")


def _write_graph(labeler: SequenceLabeler, graph: torch.nn.Module, example: Batch,
                 model_path: Path, opset: int) -> None:
    """Trace ``graph`` on ``example`` into ``model_path`` with every size dynamic (weights
    in an external data file past :data:`EXTERNAL_DATA_BYTES`); ModelError if it fails."""
    import torch
    from torch.export import Dim

    B, T, R, W = Dim("batch"), Dim("length"), Dim("reads"), Dim("words")
    rows = {0: B, 1: T}
    dynamic = {"input_ids": rows, "attention_mask": rows, "position_ids": rows,
               "read_batch": {0: R}, "read_pos": {0: R}, "read_word": {0: R},
               "read_weight": {0: R}, "words": {0: W}}
    weight_bytes = sum(p.numel() * p.element_size() for p in labeler.parameters())
    external = weight_bytes > EXTERNAL_DATA_BYTES
    try:
        torch.onnx.export(graph, _feeds(example), str(model_path), input_names=list(INPUTS),
                          output_names=list(OUTPUTS), dynamic_shapes=dynamic,
                          opset_version=opset, dynamo=True, external_data=external,
                          optimize=True, verify=False, report=False, verbose=False)
    except Exception as err:  # noqa: BLE001 - the exporter raises many types
        raise ModelError(f"torch.onnx.export failed for {labeler.config.model} "
                         f"({type(err).__name__}: {first_line(err)})") from err


def _meta(labeler: SequenceLabeler, info: BackboneInfo, folder: Path, opset: int,
          source: str | None, seconds: float) -> dict[str, Any]:
    """The export's ``seqrep-onnx.json`` (without the check): format, versions, the graph
    files in ``folder`` with their sha256, inputs and outputs, the backbone, the labeler."""
    files = sorted(p.name for p in folder.iterdir() if p.name.startswith(MODEL_FILE))
    return {
        "format": "seqrep-onnx", "format_version": FORMAT_VERSION,
        "seqrep_version": seqrep.__version__, "opset": opset,
        "exporter": "torch.onnx.export(dynamo=True): torch.export non-strict + onnxscript",
        "versions": _versions(), "source": source or info.source,
        "model_file": MODEL_FILE, "files": {name: sha256(folder / name) for name in files},
        "sha256": sha256(folder / MODEL_FILE), "dtype": "float32",
        "inputs": {"input_ids": ["batch", "length"], "attention_mask": ["batch", "length"],
                   "position_ids": ["batch", "length"], "read_batch": ["reads"],
                   "read_pos": ["reads"], "read_word": ["reads"],
                   "read_weight": ["reads"], "words": ["words"]},
        "input_note": "words: any float32 tensor of shape (W,), W the batch's word count",
        "outputs": {"logits": ["words", "labels"], "states": ["words", "hidden"]},
        "backbone": {"source": info.source, "total_layers": info.total_layers,
                     "num_layers": info.num_layers, "hidden_size": info.hidden_size,
                     "pad_id": info.pad_id, "is_encoder": info.is_encoder,
                     "first_position": info.first_position},
        "unmasked_layers": list(labeler.layers_unmasked),
        "labeler": labeler.config.to_dict(), "export_seconds": round(seconds, 2),
    }


def _parity_check(labeler: SequenceLabeler, model_path: Path, meta: dict[str, Any],
                  tolerance: float) -> dict[str, Any]:
    """:func:`~seqrep.export.check.check_export` of the written graph against ``labeler``,
    with ``tolerance``; ModelError (nothing is written) when a logit differs by more."""
    from seqrep.export.runtime import OnnxLabeler

    onnx_labeler = OnnxLabeler.from_folder_parts(model_path, labeler.tokenizer,
                                                 labeler.config, meta)
    result = check_export(labeler, onnx_labeler)
    del onnx_labeler
    # refused on the logits only: a greedy tag may flip on a near tie within tolerance
    if not math.isfinite(result["max_abs_logit_diff"]) or \
            result["max_abs_logit_diff"] > tolerance:
        raise ModelError(
            f"the ONNX graph does not compute what PyTorch does (largest logit "
            f"difference {result['max_abs_logit_diff']:.3g}, tolerance {tolerance:g}, "
            f"same greedy tags: {result['same_argmax']}; unmask="
            f"{labeler.config.unmask}); nothing was written")
    return {**result, "tolerance": tolerance}


def export_onnx(labeler_dir: str | Path, out_dir: str | Path, opset: int = DEFAULT_OPSET,
                trust_remote_code: bool = False, check: bool = True,
                tolerance: float = TOLERANCE, overwrite: bool = False) -> Path:
    """Export a saved labeler (or a run folder's best model) to ONNX.

    Args:
        labeler_dir: a labeler folder or a run folder.
        out_dir: the folder to write (replaced atomically); only a missing or empty folder,
            or with ``overwrite`` one holding only what seqrep wrote, never the run itself
            (:func:`check_export_target`).
        opset: the ONNX opset (default 18).
        trust_remote_code: run code shipped with the backbone (the caller's decision).
        check: label fixed sentences with ONNX Runtime and PyTorch and refuse the export if
            a logit differs by more than ``tolerance``.

    Returns:
        ``out_dir``; :meth:`OnnxLabeler.from_pretrained` loads it without a torch model.
    """
    require_onnx("onnx", "onnxscript", "onnxruntime")
    from seqrep.model.io import load_labeler
    from seqrep.model.labeler import SequenceLabeler

    check_export_target(out_dir, labeler_dir, overwrite)  # before any work

    # a QLoRA run's adapter goes on the full-precision base, where it can be merged
    labeler = load_labeler(SequenceLabeler, Path(labeler_dir), trust_remote_code,
                           full_precision=True).place("cpu", "fp32")
    if hasattr(labeler.backbone, "merge_and_unload"):  # (Q)LoRA: fold the adapter in
        labeler.backbone = labeler.backbone.merge_and_unload()
    labeler.float()
    return export_labeler(labeler, out_dir, opset, check, tolerance, str(labeler_dir),
                          _saved_total_layers(labeler_dir), overwrite=overwrite)


def _saved_total_layers(labeler_dir: str | Path) -> int | None:
    """The uncut model's layer count a saved labeler recorded, or None (not recorded or
    unreadable: the loaded backbone's own count is used)."""
    from seqrep.files.atomic import read_json
    from seqrep.model.io import model_dir

    try:
        data = read_json(model_dir(Path(labeler_dir)) / "config.json", "a labeler config")
        value = data["total_layers"]
    except (ModelError, KeyError, TypeError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        else None
