"""Inference benchmark: our cut model against the full-forward way of reading layer L, an
encoder, and this machine's matrix-multiply rate; the cut model under each precision or
runtime side by side (PyTorch fp32 and bf16 autocast, ONNX Runtime fp32 and int8; the
encoders in fp32 and on the ONNX runtimes asked, each from its own export); with
``--context sentence,document`` the PyTorch rows (cut model and encoders) also run with
document context (rows of consecutive sentences of the split's documents), and
``context_ratios`` gives document against sentence sentences/s of each setting, measured in
the same run.

Each configuration runs in a fresh process, so its peak resident memory is its own
(:mod:`seqrep.lab.bench_rows` measures one; this module plans the rows and sums them up).
FLOPs per sentence are counted analytically by :mod:`seqrep.lab.speed` (the primitives
``scripts/bench_gpu.py`` runs on a GPU too): ``2 * tokens * (weights of the Linear layers in
the used blocks) + 4 * blocks * tokens^2 * attention width`` (attention scores and their
weighted sum, computed in full as fused kernels do).
"""

from __future__ import annotations

import multiprocessing as mp
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from seqrep.config import InferenceConfig, LabelerConfig
from seqrep.core.contexts import CONTEXTS, SENTENCE, context_of
from seqrep.lab.bench_rows import (
    LABELER_ROWS,
    OPENVINO,
    PRECISIONS,
    _ceiling_precision,
    _export,
    _measure,
    _onnx,
    matmul_ceiling,
)
from seqrep.lab.cells import unmask_of
from seqrep.model.labeler_config import UNMASK_NAMES as UNMASKS

# No module imported here imports torch: the CLI builds `seqrep bench`'s options from
# BenchConfig at start-up, and `seqrep --help` must not wait seconds for torch. The rows
# (seqrep.lab.bench_rows) import it where they run, in their own processes.


def __getattr__(name: str) -> Any:
    """``DTYPES``, importable from here as before (it imports torch, so only when asked)."""
    if name == "DTYPES":
        from seqrep.lab import bench_rows

        return bench_rows.DTYPES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    max_tokens: int | None = _f(InferenceConfig.batch_tokens, "padded tokens per batch, "
                                "grouped by length (0: no limit)")
    repeats: int = _f(3, "timed passes; the fastest counts")
    latency_sentences: int = _f(32, "sentences timed one by one")
    encoder: str | None = _f("minilm-l6", "encoder baseline, or a comma list of them ('' "
                                          "for none)")
    baseline: bool = _f(True, "also time the full forward with all hidden states, then "
                              "layer L")
    threads: int | None = _f(InferenceConfig.threads, "torch threads (default: all cores)")
    precisions: tuple[str, ...] = _f(("fp32",), (
        f"comma list, each measured: {', '.join(PRECISIONS)} (openvino-*: OpenVINO, "
        f"compile-*: torch.compile, onnx*: ONNX Runtime)"))
    device: str = _f(InferenceConfig.device, (
        "auto, cpu, cuda, cuda:N or mps (auto: the CPU when an ONNX row is asked)"))
    unmask: tuple[str, ...] = _f(("none",), (
        "comma list of unmasking settings the PyTorch cut rows are timed at: none, full or "
        "middle"))
    context: tuple[str, ...] = _f((SENTENCE.name,), (
        f"comma list of contexts the PyTorch cut rows and the encoders are timed at: "
        f"{', '.join(CONTEXTS)}"))
    context_tokens: tuple[int, ...] = _f((LabelerConfig.context_tokens,), (
        "with a document context: comma list of window sizes (subtokens per copy) to time"))

    def __post_init__(self) -> None:
        from seqrep.errors import ConfigError

        if not self.context or any(c not in CONTEXTS for c in self.context):
            raise ConfigError(f"--context {','.join(self.context)!r}: expected a comma list "
                              f"of {', '.join(CONTEXTS)}")
        for tokens in self.context_tokens or (0,):
            if tokens < 1:
                raise ConfigError(f"--context-tokens {tokens}: expected a positive number "
                                  f"of subtokens (a comma list of them)")
        if not self.unmask or any(u not in UNMASKS for u in self.unmask):
            raise ConfigError(f"--unmask {','.join(self.unmask)!r}: expected a comma list of "
                              f"{', '.join(UNMASKS)}")
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

        onnx = [p for p in self.precisions if _onnx(p) or p in OPENVINO]
        if onnx and self.device.lower() == "auto":
            return "cpu"
        device = resolve_device(self.device)
        if onnx and device.type != "cpu":
            engine = "OpenVINO" if onnx[0] in OPENVINO else "ONNX Runtime"
            raise ConfigError(f"--device {self.device}: the --precision {onnx[0]} rows run on "
                              f"{engine}, on the CPU only; use --device cpu, or measure them "
                              f"in a run of their own")
        return str(device)


def run_bench(cfg: BenchConfig, echo: Any = print) -> dict[str, Any]:
    """Measure every configuration of ``cfg`` on its device; returns rows, the ceilings and
    speed-ups."""
    from seqrep.data import load_corpus
    from seqrep.model.device import cpu_features

    device = cfg.resolved_device()

    sents = [s for s in load_corpus(cfg.dataset, cfg.split).sentences if len(s)][: cfg.sentences]
    words = [list(s.words) for s in sents]
    docs = [s.doc_id for s in sents]
    jobs = bench_jobs(cfg)
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
    for model, r, layer, mode, precision, context, unmask, window in jobs:
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
                              context_of(context).docs(docs), device, context,
                              unmask, window).result()
        rows.append(row)
        echo(f"{mode:>18} {precision} {context}{'' if window is None else f' {window}'} "
             f"{model} r={r} L={layer}"
             f"{'' if unmask == 'none' else ' unmask=' + unmask}: "
             f"{row['sentences_per_second']} "
             f"sent/s, {row['tokens_per_word']} tokens/word, {row['latency_ms']} ms/sent, "
             f"waste {row['padding_waste']:.1%}")
    scratch.cleanup()
    for row in rows:  # each against the ceiling of its own precision
        row["share_of_ceiling"] = round(
            row["gflops_per_second"] / ceilings[_ceiling_precision(row["precision"])]["gflops"],
            3)
    return {"kind": "bench", "config": asdict(cfg), "device": device, "cpu": cpu_features(),
            "matmul_gflops": ceilings["fp32"]["gflops"],
            "matmul_shapes": ceilings["fp32"]["shapes"],
            "ceilings": {p: c["gflops"] for p, c in ceilings.items()}, "rows": rows,
            "speedups": speedups(rows), "precision_speedups": precision_speedups(rows),
            "context_ratios": context_ratios(rows), "unmask_ratios": unmask_ratios(rows)}


Job = tuple[str, int, int | None, str, str, str, str, int | None]


def bench_jobs(cfg: BenchConfig) -> list[Job]:
    """The rows a bench run measures, in order: ``(model, r, exit layer, mode, precision,
    context, unmask, window)``. The cut model at every precision, r, layer, context and
    unmasking; the full forward (``--baseline``) in fp32 at sentence level; each encoder in
    PyTorch fp32 and the run's ONNX runtimes. Document contexts and unmasking run on PyTorch
    rows only, a document context at each window (``--context-tokens``; None: sentences)."""
    def windows(context: str) -> tuple[int | None, ...]:
        return cfg.context_tokens if context_of(context).documents else (None,)

    jobs = [(cfg.model, r, layer, "cut", p, c, u, w) for p in cfg.precisions
            for r in cfg.repetitions for layer in cfg.exit_layers for c in cfg.context
            for u in cfg.unmask if _timed(p, c, u) for w in windows(c)]
    if cfg.baseline:
        jobs += [(cfg.model, r, layer, "full_hidden_states", "fp32", SENTENCE.name, "none",
                  None) for r in cfg.repetitions for layer in cfg.exit_layers
                 if layer is not None]
    jobs += [(name.strip(), 0, None, "encoder", p, c, "none", w)
             for name in (cfg.encoder or "").split(",") if name.strip()
             for p in dict.fromkeys(("fp32", *(p for p in cfg.precisions
                                               if _onnx(p) or p in LABELER_ROWS)))
             for c in cfg.context
             if _timed(p, c) for w in windows(c)]
    return jobs


def _timed(precision: str, context: str, unmask: str = "none") -> bool:
    """Whether bench times ``precision`` at ``context`` and ``unmask``: document context and
    unmasking on PyTorch only (bench exports causal sentence labelers)."""
    return (not context_of(context).documents and unmask == "none") or _onnx(precision) is None


def context_ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per model, mode, precision, r and exit layer measured at sentence context and one
    with documents: that context's sentences/s and tokens per sentence against sentence
    context's."""
    def key(r: dict[str, Any]) -> tuple:
        return (r["model"], r["mode"], r.get("precision") or "fp32", r["repetitions"],
                r["exit_layer"])

    rows = [r for r in rows if _causal(r)]
    sentence = {key(r): r for r in rows if not context_of(r.get("context")).documents}
    out = []
    for r in rows:
        base = sentence.get(key(r))
        if not context_of(r.get("context")).documents or base is None:
            continue
        out.append({"model": r["model"], "mode": r["mode"], "context": r["context"],
                    **_window(r), "precision": r.get("precision") or "fp32",
                    "repetitions": r["repetitions"], "exit_layer": r["exit_layer"],
                    "speed_ratio": round(r["sentences_per_second"]
                                         / base["sentences_per_second"], 3),
                    "token_ratio": round(r["tokens"] / base["tokens"], 3)})
    return out


def _window(row: dict[str, Any]) -> dict[str, Any]:
    """A document row's window as a ratio repeats it (rows stored before bench recorded
    windows have none)."""
    return {"context_tokens": row["context_tokens"]} if row.get("context_tokens") else {}


def _causal(row: dict[str, Any]) -> bool:
    """A row without unmasking (rows stored before bench timed unmasking have none)."""
    return unmask_of(row) == "none"


def unmask_ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per model, precision, context, r and exit layer measured causal and unmasked: the
    unmasked row's sentences/s against the causal row's."""
    def key(r: dict[str, Any]) -> tuple:
        return (r["model"], r.get("precision") or "fp32", context_of(r.get("context")).name,
                r.get("context_tokens"), r["repetitions"], r["exit_layer"])

    causal = {key(r): r for r in rows if r["mode"] == "cut" and _causal(r)}
    out = []
    for r in rows:
        base = causal.get(key(r))
        if r["mode"] != "cut" or _causal(r) or base is None:
            continue
        out.append({"model": r["model"], "precision": r.get("precision") or "fp32",
                    "context": context_of(r.get("context")).name, **_window(r),
                    "unmask": r["unmask"],
                    "repetitions": r["repetitions"], "exit_layer": r["exit_layer"],
                    "speed_ratio": round(r["sentences_per_second"]
                                         / base["sentences_per_second"], 3)})
    return out


def precision_speedups(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per r and exit layer: each precision's time against fp32's, and how far its states are
    from fp32's (relative difference of their checksums)."""
    cuts = [r for r in rows if r["mode"] == "cut" and _causal(r)
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
            if r["mode"] == "cut" and r.get("precision", "fp32") == "fp32" and _causal(r)
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
