"""Inference benchmark: our cut model against the full-forward way of reading layer L, an
encoder, and this machine's matrix-multiply rate; the cut model under each precision or
runtime side by side (PyTorch fp32 and bf16 autocast, ONNX Runtime fp32 and int8; the
encoders in fp32 and on the ONNX runtimes asked, each from its own export); with
``--context sentence,document`` the PyTorch rows (cut model and encoders) also run with
document context (rows of consecutive sentences of the split's documents), and
``context_ratios`` gives document against sentence sentences/s of each setting, measured in
the same run.

Each configuration runs in a fresh process, so its peak resident memory is its own.
FLOPs per sentence are counted analytically by :mod:`seqrep.lab.speed` (the primitives
``scripts/bench_gpu.py`` runs on a GPU too): ``2 * tokens * (weights of the Linear layers in
the used blocks) + 4 * blocks * tokens^2 * attention width`` (attention scores and their
weighted sum, computed in full as fused kernels do).
"""

from __future__ import annotations

import multiprocessing as mp
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from seqrep.config import InferenceConfig
from seqrep.contexts import CONTEXTS, DOCUMENT, SENTENCE, context_of
from seqrep.lab.speed import block_linears, flops_per_token, forward_flops, matmul_rate
from seqrep.lab.tables import bench_markdown  # noqa: F401 - its home before
from seqrep.model.tuning import FROZEN
from seqrep.runtimes import RUNTIMES, Runtime


def _f(default: Any, help: str) -> Any:
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class BenchConfig:
    """What to measure (the ``seqrep bench`` options); batch size, token budget and threads
    start from :class:`~seqrep.config.InferenceConfig`'s, as on the other commands."""

    model: str = _f("smollm2-135m", "decoder to measure")
    repetitions: tuple[int, ...] = _f((0, 1, 2, 4), "comma list of r")
    exit_layers: tuple[int | None, ...] = _f((10, 20, 30), "comma list of exit layers")
    dataset: str = _f("conll2003", "sentences to run")
    split: str = _f("test", "split of the dataset")
    sentences: int = _f(256, "first N sentences of the split")
    batch_size: int = _f(InferenceConfig.batch_size, "sentences per batch")
    max_tokens: int | None = _f(InferenceConfig.batch_tokens, "padded tokens per batch "
                                "(batches are sorted by length and close at it; 0: no limit)")
    repeats: int = _f(3, "timed passes; the fastest counts")
    latency_sentences: int = _f(32, "sentences timed one by one")
    encoder: str | None = _f("minilm-l6", "encoder baseline, or a comma list of them ('' "
                                          "for none)")
    baseline: bool = _f(True, "also time the full forward with all hidden states, then "
                              "layer L")
    threads: int | None = _f(InferenceConfig.threads, "torch threads (default: all cores)")
    precisions: tuple[str, ...] = _f(("fp32",), (
        "comma list of how the cut model runs, each measured side by side: PyTorch fp32 or "
        "bf16 autocast (each against the matmul ceiling of its own precision), or ONNX "
        "Runtime: onnx (fp32), onnx-int8 (the shipped int8 recipe); the encoders run in fp32 "
        "and on each ONNX runtime asked"))
    device: str = _f(InferenceConfig.device, (
        "where the models and the matmul ceiling run: auto, cpu, cuda, cuda:N or mps (auto "
        "as on the other commands, but the CPU when an ONNX row is asked: ONNX Runtime runs "
        "there only)"))
    context: tuple[str, ...] = _f((SENTENCE.name,), (
        "comma list of contexts the PyTorch cut rows and the encoders run at: sentence, "
        "document (windows of 256 subtokens of the split's documents; the first --sentences "
        "sentences, so the last document may be cut)"))

    def __post_init__(self) -> None:
        from seqrep.errors import ConfigError

        if not self.context or any(c not in CONTEXTS for c in self.context):
            raise ConfigError(f"--context {','.join(self.context)!r}: expected a comma list "
                              f"of {', '.join(CONTEXTS)}")
        bad = [p for p in self.precisions if p not in PRECISIONS]
        if bad or not self.precisions:
            raise ConfigError(f"--precision {','.join(self.precisions)!r}: expected a comma "
                              f"list of {', '.join(PRECISIONS)}")
        InferenceConfig.check("batch_size", self.batch_size)
        InferenceConfig.check("threads", self.threads)
        if self.max_tokens is not None and self.max_tokens < 0:
            raise ConfigError(f"--max-tokens {self.max_tokens}; expected 0 (no limit) or more")
        if self.max_tokens == 0:
            object.__setattr__(self, "max_tokens", None)
        for name in ("sentences", "repeats"):
            if getattr(self, name) < 1:
                raise ConfigError(f"--{name} {getattr(self, name)}; expected 1 or more")
        InferenceConfig.check("device", self.device)
        self.resolved_device()  # a device this machine lacks fails before anything runs

    def resolved_device(self) -> str:
        """The device the rows run on (``cuda:0``, ``cpu``), checked against this machine;
        ``auto`` is the CPU when an ONNX row is asked, so every row and ceiling of a run are
        on one device."""
        from seqrep.errors import ConfigError
        from seqrep.model.device import resolve_device

        onnx = [p for p in self.precisions if _onnx(p)]
        if onnx and self.device.lower() == "auto":
            return "cpu"
        device = resolve_device(self.device)
        if onnx and device.type != "cpu":
            raise ConfigError(f"--device {self.device}: the --precision {onnx[0]} rows run on "
                              f"ONNX Runtime, on the CPU only; use --device cpu, or measure "
                              f"the ONNX rows in a run of their own")
        return str(device)


# What a row runs: a PyTorch autocast precision, or an ONNX runtime of seqrep.runtimes (its
# graph variant; measured against the fp32 ceiling)
TORCH_PRECISIONS = ("fp32", "bf16")
PRECISIONS = (*TORCH_PRECISIONS, *(r.name for r in RUNTIMES.values() if r.onnx))
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def _onnx(setting: str) -> Runtime | None:
    """The ONNX runtime a bench setting names, or None for a PyTorch precision."""
    found = RUNTIMES.get(setting)
    return found if found is not None and found.onnx else None


def _ceiling_precision(precision: str) -> str:
    """The matmul ceiling a row is measured against: ONNX Runtime rows against fp32's."""
    return "fp32" if _onnx(precision) else precision


def matmul_gflops(m: int, k: int, n: int, repeats: int = 20, precision: str = "fp32",
                  device: torch.device | str = "cpu") -> float:
    """Measured GFLOP/s of ``x @ w.T`` with ``x`` of shape ``(m, k)`` and ``w`` of
    shape ``(n, k)``: the product an ``nn.Linear(k, n)`` runs on ``m`` tokens, in fp32 or
    in bf16 (the operands autocast would hand the kernel)."""
    return matmul_rate(m, k, n, device, DTYPES[precision], repeats) / 1e9


def linear_shapes(model: nn.Module) -> list[tuple[int, int]]:
    """The distinct ``(in, out)`` shapes of the Linear layers in the model's blocks."""
    return sorted({(m.in_features, m.out_features) for m in block_linears(model)})


def matmul_ceiling(model: str, tokens: int, threads: int | None,
                   repeats: int = 20, precision: str = "fp32",
                   device: str = "cpu") -> dict[str, Any]:
    """The device's rate in ``precision`` on the model's own matrix products: the fastest of
    its Linear shapes on ``tokens`` rows (one full batch). Runs in a child process like the
    measured passes, so both see the same threads."""
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
             batch_size: int, max_tokens: int | None, latency_sentences: int, mode: str,
             threads: int | None, repeats: int = 1, precision: str = "fp32",
             exported: str | None = None, docs: list[Any] | None = None,
             device: str = "cpu") -> dict[str, Any]:
    """One configuration, in a child process. ``mode``: cut, full_hidden_states or encoder.
    ONNX rows run the export in ``exported`` (made by :func:`_export`). ``docs`` (each
    sentence's document id) runs the labeler with document context; the latency is still
    that of each sentence labeled alone. On CUDA the row adds the device's peak memory
    (outputs come back on the CPU, so each timed pass ends when the device is done)."""
    import resource

    from seqrep.model.labeler import SequenceLabeler

    if threads:
        torch.set_num_threads(threads)
    cut = exit_layer if mode == "cut" else None
    context = (SENTENCE if docs is None else DOCUMENT).name
    lab = SequenceLabeler.from_model(model, labels=["O"], repetitions=repetitions,
                                     exit_layer=cut, finetune=FROZEN, context=context).eval()
    lab.place(device, _ceiling_precision(precision))
    # padding of the very batches the timed pass runs
    masks = [batch.attention_mask for batch, _ in lab.batches(words, batch_size, max_tokens,
                                                               docs=docs)]
    lengths = [int(n) for m in masks for n in m.sum(1)]
    waste = 1.0 - sum(lengths) / sum(m.numel() for m in masks)
    terms = flops_per_token(lab.backbone)
    blocks, flops = terms[1], forward_flops(lengths, terms)
    onnx = _onnx(precision)
    if onnx is not None:
        if exported is None:
            raise ValueError(f"an {precision} row needs the folder _export wrote")
        from seqrep.export.runtime import OnnxLabeler

        lab = OnnxLabeler.from_pretrained(exported, intra_op_num_threads=threads
                                          or torch.get_num_threads(), variant=onnx.variant)

    def run(batch_words: list[list[str]], bs: int, ids: list[Any] | None = None
            ) -> list[torch.Tensor]:
        if mode != "full_hidden_states":
            return lab.word_states(batch_words, bs, max_tokens, **({"docs": ids} if ids
                                                                    else {}))
        return _authors_way(lab, batch_words, bs, max_tokens, exit_layer)

    run(words[:batch_size], batch_size, docs[:batch_size] if docs else None)  # warm-up
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
            "context": context,
            "exit_layer": exit_layer if mode != "encoder" else None,
            "layers_computed": blocks, "sentences": len(words), "tokens": sum(lengths),
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
    from seqrep.export import META_FILE
    from seqrep.export.onnx import export_labeler
    from seqrep.export.runtime import read_meta
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


def _authors_way(lab: Any, words: list[list[str]], bs: int, max_tokens: int | None,
                 layer: int) -> list[torch.Tensor]:
    """Full forward with every hidden state, then layer ``layer`` (+ final norm), as the
    authors' code reads an early-exit state."""
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

    return lab.map_words(words, fn, bs, max_tokens)


def run_bench(cfg: BenchConfig, echo: Any = print) -> dict[str, Any]:
    """Measure every configuration of ``cfg`` on its device; returns rows, the ceilings and
    speed-ups."""
    from seqrep.data import load_corpus

    device = cfg.resolved_device()

    sents = [s for s in load_corpus(cfg.dataset, cfg.split).sentences if len(s)][: cfg.sentences]
    words = [list(s.words) for s in sents]
    docs = [s.doc_id for s in sents]
    # (model, r, layer, mode, precision, context): document context on PyTorch rows only
    jobs = [(cfg.model, r, layer, "cut", p, c) for p in cfg.precisions for r in cfg.repetitions
            for layer in cfg.exit_layers for c in cfg.context
            if not context_of(c).documents or _onnx(p) is None]
    if cfg.baseline:
        jobs += [(cfg.model, r, layer, "full_hidden_states", "fp32", SENTENCE.name)
                 for r in cfg.repetitions for layer in cfg.exit_layers if layer is not None]
    # encoders: PyTorch fp32 at each context, and the run's ONNX runtimes (sentence context)
    jobs += [(name.strip(), 0, None, "encoder", p, c)
             for name in (cfg.encoder or "").split(",") if name.strip()
             for p in ("fp32", *filter(_onnx, cfg.precisions)) for c in cfg.context
             if not context_of(c).documents or _onnx(p) is None]
    ceilings = {}
    for precision in dict.fromkeys(("fp32", *map(_ceiling_precision, cfg.precisions))):
        with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
            ceilings[precision] = pool.submit(
                matmul_ceiling, cfg.model, cfg.max_tokens or cfg.batch_size * 32, cfg.threads,
                20, precision, device).result()
        echo(f"{precision} matmul ceiling on {device}: {ceilings[precision]['gflops']} GFLOP/s "
             f"(fastest "
             f"of {ceilings[precision]['shapes']})")
    rows = []
    scratch = tempfile.TemporaryDirectory(prefix="seqrep-bench-")  # the ONNX exports
    models: dict[str, int] = {}  # an export folder per model (the decoder, each encoder)
    for model, r, layer, mode, precision, context in jobs:
        exported = None
        onnx = _onnx(precision)
        if onnx is not None:
            index = models.setdefault(model, len(models))
            exported = str(Path(scratch.name) / f"{index}-r{r}-L{layer}")
            with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
                pool.submit(_export, model, r, layer, exported, onnx.variant,
                            cfg.threads).result()
        with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
            row = pool.submit(_measure, model, r, layer, words, cfg.batch_size, cfg.max_tokens,
                              cfg.latency_sentences, mode, cfg.threads, cfg.repeats,
                              precision, exported,
                              context_of(context).docs(docs), device).result()
        rows.append(row)
        echo(f"{mode:>18} {precision} {context} {model} r={r} L={layer}: "
             f"{row['sentences_per_second']} "
             f"sent/s, {row['latency_ms']} ms/sent, waste {row['padding_waste']:.1%}")
    scratch.cleanup()
    for row in rows:  # each against the ceiling of its own precision
        row["share_of_ceiling"] = round(
            row["gflops_per_second"] / ceilings[_ceiling_precision(row["precision"])]["gflops"],
            3)
    return {"kind": "bench", "config": asdict(cfg), "device": device,
            "matmul_gflops": ceilings["fp32"]["gflops"],
            "matmul_shapes": ceilings["fp32"]["shapes"],
            "ceilings": {p: c["gflops"] for p, c in ceilings.items()}, "rows": rows,
            "speedups": speedups(rows), "precision_speedups": precision_speedups(rows),
            "context_ratios": context_ratios(rows)}


def context_ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per model, mode, precision, r and exit layer measured at both contexts: document
    context's sentences/s and tokens per sentence against sentence context's."""
    def key(r: dict[str, Any]) -> tuple:
        return (r["model"], r["mode"], r.get("precision") or "fp32", r["repetitions"],
                r["exit_layer"])

    sentence = {key(r): r for r in rows if not context_of(r.get("context")).documents}
    out = []
    for r in rows:
        base = sentence.get(key(r))
        if not context_of(r.get("context")).documents or base is None:
            continue
        out.append({"model": r["model"], "mode": r["mode"],
                    "precision": r.get("precision") or "fp32", "repetitions": r["repetitions"],
                    "exit_layer": r["exit_layer"],
                    "speed_ratio": round(r["sentences_per_second"]
                                         / base["sentences_per_second"], 3),
                    "token_ratio": round(r["tokens"] / base["tokens"], 3)})
    return out


def precision_speedups(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per r and exit layer: each precision's time against fp32's, and how far its states are
    from fp32's (relative difference of their checksums)."""
    cuts = [r for r in rows if r["mode"] == "cut"
            and not context_of(r.get("context")).documents]
    fp32 = {(r["repetitions"], r["exit_layer"]): r for r in cuts if r["precision"] == "fp32"}
    out = []
    for r in cuts:
        base = fp32.get((r["repetitions"], r["exit_layer"]))
        if r["precision"] == "fp32" or base is None:
            continue
        rel = abs(r["checksum"] - base["checksum"]) / abs(base["checksum"])
        out.append({"precision": r["precision"], "repetitions": r["repetitions"],
                    "exit_layer": r["exit_layer"],
                    "speedup_vs_fp32": round(base["seconds"] / r["seconds"], 2),
                    "checksum_rel_diff": float(f"{rel:.3g}")})
    return out


def speedups(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per r and exit layer: time against the deepest cut, and against the full forward."""
    out = []
    cuts = {(r["repetitions"], r["exit_layer"]): r for r in rows
            if r["mode"] == "cut" and r.get("precision", "fp32") == "fp32"
            and not context_of(r.get("context")).documents}
    full = {(r["repetitions"], r["exit_layer"]): r for r in rows
            if r["mode"] == "full_hidden_states"}
    for (rep, layer), row in sorted(cuts.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
        deepest = max((v for (r2, _), v in cuts.items() if r2 == rep),
                      key=lambda v: v["layers_computed"])
        item = {"repetitions": rep, "exit_layer": layer,
                "layer_share": round(row["layers_computed"] / deepest["layers_computed"], 3),
                "time_share": round(row["seconds"] / deepest["seconds"], 3),
                "speedup_vs_deepest": round(deepest["seconds"] / row["seconds"], 2)}
        if (rep, layer) in full:
            base = full[(rep, layer)]
            item["speedup_vs_full_forward"] = round(base["seconds"] / row["seconds"], 2)
            item["same_states"] = abs(base["checksum"] - row["checksum"]) <= 1e-4 * abs(
                row["checksum"])
        out.append(item)
    return out
