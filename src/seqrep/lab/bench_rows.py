"""One row of ``seqrep bench``, measured in a child process of its own (so its peak resident
memory is its own): the cut model, the full forward with every hidden state, or an encoder,
under a PyTorch precision or on ONNX Runtime from the export :func:`_export` writes; and the
matrix-multiply ceiling each row is measured against. :mod:`seqrep.lab.bench` plans the rows
and sums them up.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seqrep.core.contexts import DOCUMENT, SENTENCE, context_of
from seqrep.core.runtimes import RUNTIMES, Runtime
from seqrep.model.tuning import FROZEN

if TYPE_CHECKING:  # torch is imported where a row runs: `seqrep --help` builds the bench
    import torch  # options from this module's names and must not wait seconds for torch
    from torch import nn

# What a row runs: a PyTorch autocast precision, or an ONNX runtime of seqrep.core.runtimes (its
# graph variant; measured against the fp32 ceiling)
TORCH_PRECISIONS = ("fp32", "bf16")
# the backbone on OpenVINO (seqrep.export.openvino), its graph in f32 or with bf16 products
OPENVINO = {"openvino-fp32": "fp32", "openvino-bf16": "bf16"}
# the forward pass compiled by torch.compile (seqrep.export.compiled), at a torch precision
COMPILED = {"compile-fp32": "fp32", "compile-bf16": "bf16"}
# the rows a labeler class of its own runs, and the precision of their products
LABELER_ROWS = {**OPENVINO, **COMPILED}
PRECISIONS = (*TORCH_PRECISIONS, *LABELER_ROWS,
              *(r.name for r in RUNTIMES.values() if r.onnx))


def _dtypes() -> dict[str, torch.dtype]:
    """The torch dtype of each PyTorch precision (torch imported on first use)."""
    import torch

    return {"fp32": torch.float32, "bf16": torch.bfloat16}


def __getattr__(name: str) -> Any:
    """``DTYPES`` (precision -> torch dtype) as before, made when asked for, so that
    importing this module does not import torch."""
    if name == "DTYPES":
        return _dtypes()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _onnx(setting: str) -> Runtime | None:
    """The ONNX runtime a bench setting names, or None for a PyTorch precision."""
    found = RUNTIMES.get(setting)
    return found if found is not None and found.onnx else None


def _ceiling_precision(precision: str) -> str:
    """The matmul ceiling a row is measured against: ONNX Runtime rows against fp32's, an
    OpenVINO or compiled row against that of its products' precision."""
    return "fp32" if _onnx(precision) else LABELER_ROWS.get(precision, precision)


def matmul_gflops(m: int, k: int, n: int, repeats: int = 20, precision: str = "fp32",
                  device: torch.device | str = "cpu") -> float:
    """Measured GFLOP/s of ``x @ w.T`` with ``x`` of shape ``(m, k)`` and ``w`` of
    shape ``(n, k)``: the product an ``nn.Linear(k, n)`` runs on ``m`` tokens, in fp32 or
    in bf16 (the operands autocast would hand the kernel)."""
    from seqrep.lab.speed import matmul_rate

    return matmul_rate(m, k, n, device, _dtypes()[precision], repeats) / 1e9


def linear_shapes(model: nn.Module) -> list[tuple[int, int]]:
    """The distinct ``(in, out)`` shapes of the Linear layers in the model's blocks."""
    from seqrep.lab.speed import block_linears

    return sorted({(m.in_features, m.out_features) for m in block_linears(model)})


def matmul_ceiling(model: str, tokens: int, threads: int | None,
                   repeats: int = 20, precision: str = "fp32",
                   device: str = "cpu") -> dict[str, Any]:
    """The device's rate in ``precision`` on the model's own matrix products: the fastest of
    its Linear shapes on ``tokens`` rows (one full batch). Runs in a child process like the
    measured passes, so both see the same threads."""
    import torch

    from seqrep.model.labeler import SequenceLabeler

    if threads:
        torch.set_num_threads(threads)
    lab = SequenceLabeler.from_model(model, labels=["O"], finetune=FROZEN)
    # three significant digits: a tiny test shape on a loaded CPU must not round to 0
    rates = {f"{tokens}x{k}x{n}":
             float(f"{matmul_gflops(tokens, k, n, repeats, precision, device):.3g}")
             for k, n in linear_shapes(lab.backbone)}
    return {"gflops": max(rates.values()), "shapes": rates}


def _measure(model: str, repetitions: int, exit_layer: int | None, words: list[list[str]],
             batch_size: int, batch_tokens: int | None, latency_sentences: int, mode: str,
             threads: int | None, repeats: int = 1, precision: str = "fp32",
             exported: str | None = None, docs: list[Any] | None = None,
             device: str = "cpu", context: str | None = None,
             unmask: str = "none", context_tokens: int | None = None) -> dict[str, Any]:
    """One configuration, in a child process. ``mode``: cut, full_hidden_states or encoder.
    ONNX rows run the export in ``exported`` (made by :func:`_export`). ``docs`` (each
    sentence's document id) runs the labeler with ``context`` (default: ``document``
    with ``docs``, else ``sentence``); the latency is still
    that of each sentence labeled alone. On CUDA the row adds the device's peak memory
    (outputs come back on the CPU, so each timed pass ends when the device is done)."""
    import resource

    import torch

    from seqrep.lab.speed import flops_per_token, forward_flops
    from seqrep.model.labeler import SequenceLabeler

    if threads:
        torch.set_num_threads(threads)
    cut = exit_layer if mode == "cut" else None
    context = context or (SENTENCE if docs is None else DOCUMENT).name
    window = {"context_tokens": context_tokens} if context_tokens else {}
    kind = SequenceLabeler
    if precision in OPENVINO:
        from seqrep.export.openvino import OpenVinoLabeler as kind
    elif precision in COMPILED:
        from seqrep.export.compiled import CompiledLabeler as kind
    lab = kind.from_model(model, labels=["O"], repetitions=repetitions, exit_layer=cut,
                          finetune=FROZEN, context=context,
                          unmask=unmask if mode == "cut" else "none", **window).eval()
    documents = context_of(context).documents
    window = {"context_tokens": lab.config.context_tokens} if documents else {}
    lab.place(device, _ceiling_precision(precision))
    # padding of the very batches the timed pass runs
    masks = [batch.attention_mask for batch, _ in lab.batches(words, batch_size, batch_tokens,
                                                               docs=docs)]
    lengths = [int(n) for m in masks for n in m.sum(1)]
    n_words = max(1, sum(len(w) for w in words))
    waste = 1.0 - sum(lengths) / sum(m.numel() for m in masks)
    terms = flops_per_token(lab.backbone)
    blocks, flops = terms[1], forward_flops(lengths, terms)
    onnx = _onnx(precision)
    if onnx is not None:
        if exported is None:
            raise ValueError(f"an {precision} row needs the folder _export wrote")
        from seqrep.core.runtimes import Settings

        lab = onnx.load(exported, Settings(threads=threads or torch.get_num_threads()))

    def run(batch_words: list[list[str]], bs: int, ids: list[Any] | None = None
            ) -> list[torch.Tensor]:
        if mode != "full_hidden_states":
            return lab.word_states(batch_words, bs, batch_tokens, docs=ids)
        return _authors_way(lab, batch_words, bs, batch_tokens, exit_layer, ids)

    run(words[:batch_size], batch_size, docs[:batch_size] if docs else None)  # warm-up
    run(words[:1], 1)  # and one row alone, as the latency passes run (a compiled pass
    # makes a graph for it)
    times = []
    for _ in range(max(1, repeats)):  # the fastest pass: least disturbed by other load
        start = time.perf_counter()
        states = run(words, batch_size, docs)
        times.append(time.perf_counter() - start)
    seconds = min(times)
    start = time.perf_counter()
    for w in words[:latency_sentences]:
        run([w], 1)
    latency = (time.perf_counter() - start) / max(1, min(latency_sentences, len(words)))
    return {"model": model, "mode": mode, "precision": precision, "repetitions": repetitions,
            "context": context, **window, "unmask": unmask if mode == "cut" else "none",
            "exit_layer": exit_layer if mode != "encoder" else None,
            "layers_computed": blocks, "sentences": len(words), "words": n_words,
            "tokens": sum(lengths), "tokens_per_word": round(sum(lengths) / n_words, 3),
            "seconds": round(seconds, 3), "seconds_all": [round(t, 3) for t in times],
            "sentences_per_second": round(len(words) / seconds, 2),
            "tokens_per_second": round(sum(lengths) / seconds, 1),
            "latency_ms": round(1000 * latency, 2), "padding_waste": round(waste, 4),
            "flops_per_sentence": int(flops / len(words)),
            "gflops_per_second": round(flops / seconds / 1e9, 2),
            "peak_memory_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            **({"peak_device_memory_mb": round(torch.cuda.max_memory_allocated(device) / 2**20,
                                               1)} if device.startswith("cuda") else {}),
            "checksum": float(sum(s.double().abs().sum() for s in states))}


def _export(model: str, repetitions: int, exit_layer: int | None, folder: str,
            variant: str | None, threads: int | None) -> None:
    """Export the cut labeler a bench row measures to ``folder`` (once: an ONNX fp32 row and
    an int8 row of the same setting share it) and add the int8 graph when ``variant`` asks;
    run in its own process, so the export's memory is in no row's peak."""
    import torch

    from seqrep.export.files import META_FILE
    from seqrep.export.folder import read_meta
    from seqrep.export.onnx import export_labeler
    from seqrep.model.labeler import SequenceLabeler

    if threads:
        torch.set_num_threads(threads)
    if not (Path(folder) / META_FILE).is_file():
        lab = SequenceLabeler.from_model(model, labels=["O"], repetitions=repetitions,
                                         exit_layer=exit_layer, finetune=FROZEN).eval()
        export_labeler(lab.place("cpu", "fp32"), folder, check=False)
    if variant == "int8" and "int8" not in read_meta(folder).get("variants", {}):
        from seqrep.export.quantize import quantize_int8

        quantize_int8(folder)


def _authors_way(lab: Any, words: list[list[str]], bs: int, batch_tokens: int | None,
                 layer: int, docs: list[Any] | None) -> list[torch.Tensor]:
    """Full forward with every hidden state, then layer ``layer`` (+ final norm), as the
    authors' code reads an early-exit state; ``docs``: the sentences' document ids (None:
    each alone), as the cut rows read them."""
    from seqrep.model.backbone import get_final_norm

    norm = get_final_norm(lab.backbone)
    n = lab.backbone_info.num_layers

    def fn(batch: Any) -> torch.Tensor:
        out = lab.backbone(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                           position_ids=lab.model_positions(batch.position_ids),
                           use_cache=False,
                           output_hidden_states=True)
        h = out.hidden_states[layer]
        h = h if layer == n else norm(h)  # the last entry is already normed
        return lab.pool(h, batch).float()

    return lab.map_words(words, fn, bs, batch_tokens, docs=docs)
