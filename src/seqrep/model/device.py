"""Where a model runs and at which precision: the one place for devices and autocast.

- ``device``: ``auto`` (CUDA when present, else Apple's MPS, else the CPU), ``cpu``, ``cuda``,
  ``cuda:N`` or ``mps``. Under a distributed launch (``torchrun``, ``accelerate launch``) each
  process takes its own local GPU.
- ``precision``: ``fp32``, ``bf16`` or ``fp16`` as autocast around the backbone; weights stay
  fp32 (the master copy when training) and the head, the loss and the decoders run in fp32.
  ``auto`` is bf16 on a GPU that supports it and fp16 on other GPUs (fp32 when training
  there); on a CPU with native bf16 (AVX512-BF16 or AMX) it is bf16 for inference (predict,
  evaluate, serve: CoNLL-2003 test F1 under bf16 autocast was 67.50 against 67.46 in fp32,
  results/bf16-f1.json) and fp32 for training; fp32 on other CPUs and on MPS.
  ``--precision fp32`` keeps fp32 anywhere. Training never runs fp16: it would need loss
  scaling (small gradients underflow to 0 in fp16), so ``fp16`` for training is refused.

Bad choices (``cuda`` without CUDA, ``bf16`` on a GPU without it, ``fp16`` on the CPU) are a
ConfigError that says what to do; ``bf16`` on a CPU without native bf16 runs (emulated) with a
warning that it is slower there. An error names the setting as the caller gave it: its message
as a Python parameter (``device='cuda'``), its ``option_message`` as the command line's option
(``--device cuda``), which the CLI prints instead.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from seqrep.core.runtimes import PRECISIONS, RUNTIMES
from seqrep.errors import ConfigError
from seqrep.model.casts import WeightCasts  # noqa: F401 - where it was first

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}



def _parameter(name: str, value: object, quote: bool = False) -> str:
    return f"{name}={value!r}"


def _option(name: str, value: object, quote: bool = False) -> str:
    return f"--{name} {value!r}" if quote else f"--{name} {value}"


def _refused(build: Callable[[Callable[..., str]], str]) -> ConfigError:
    """A ConfigError worded for Python, naming parameters (``device='cuda'``), that carries as
    ``option_message`` the same refusal worded for the command line (``--device cuda``), the
    line the CLI prints: ``build`` writes the message with the namer it is given."""
    err = ConfigError(build(_parameter))
    err.option_message = build(_option)  # type: ignore[attr-defined]
    return err


# the CPU features that change how fast a benchmark runs: AVX2 or AVX-512, native bf16
# (AVX512-BF16, AMX) and int8 dot products (VNNI, AMX)
SPEED_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni", "amx_bf16",
               "amx_int8")
BF16_FLAGS = {"avx512_bf16", "amx_bf16"}


def _cpuinfo() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def cpu_features(cpuinfo: str | None = None) -> dict[str, Any]:
    """What a benchmark records about the CPU it ran on (``/proc/cpuinfo``, or ``cpuinfo``'s
    text): its model name, which of SPEED_FLAGS it has, whether bf16 is native (the hardware,
    whatever ``SEQREP_CPU_BF16`` says) and the logical CPUs the process may use."""
    lines = (_cpuinfo() if cpuinfo is None else cpuinfo).splitlines()

    def field(name: str) -> str | None:
        line = next((x for x in lines if x.split(":", 1)[0].strip() == name), None)
        return line.split(":", 1)[1].strip() if line is not None and ":" in line else None

    flags = set((field("flags") or "").split())
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"model": field("model name"), "flags": [f for f in SPEED_FLAGS if f in flags],
            "native_bf16": bool(flags & BF16_FLAGS), "cpus": cpus}


@functools.cache
def cpu_has_bf16() -> bool:
    """Whether this CPU computes bf16 natively (AVX512-BF16 or AMX), read from /proc/cpuinfo;
    ``SEQREP_CPU_BF16=0`` (or ``1``) overrides the detection, e.g. to keep fp32 everywhere."""
    forced = os.environ.get("SEQREP_CPU_BF16", "").strip()
    if forced in ("0", "1"):
        return forced == "1"
    return cpu_features()["native_bf16"]


def resolve_device(name: str = "auto") -> torch.device:
    """The torch device a ``--device`` value names, checked against this machine."""
    name = (name or "auto").lower()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", local % max(1, torch.cuda.device_count()))
        if torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if name == "cpu":
        return torch.device("cpu")
    if name == "mps":
        if not torch.backends.mps.is_available():
            raise _refused(lambda n: f"{n('device', 'mps')}: this machine has no Apple MPS "
                                     f"device; use {n('device', 'cpu')}")
        return torch.device("mps")
    if name == "cuda" or name.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise _refused(lambda n: f"{n('device', name)}: CUDA is not available here (no "
                                     f"GPU, or a CPU build of torch); use {n('device', 'cpu')}")
        try:
            index = int(name.split(":", 1)[1]) if ":" in name else local
        except ValueError:
            raise _refused(lambda n: f"{n('device', name, True)}: expected cuda or cuda:N"
                           ) from None
        if not 0 <= index < torch.cuda.device_count():
            count = torch.cuda.device_count()
            raise _refused(lambda n: f"{n('device', name)}: there are {count} GPUs "
                                     f"(cuda:0..cuda:{count - 1})")
        return torch.device("cuda", index)
    raise _refused(lambda n: f"{n('device', name, True)}; expected auto, cpu, cuda, cuda:N "
                             f"or mps")


def resolve_precision(name: str, device: torch.device, training: bool = False) -> str:
    """``fp32``, ``bf16`` or ``fp16`` for ``device``; ``auto`` picks by the rules above
    (``training``: for a training run, which keeps fp32 on a CPU unless asked)."""
    name = (name or "auto").lower()
    if name not in PRECISIONS:
        raise _refused(lambda n: f"{n('precision', name, True)}; expected one of "
                                 f"{', '.join(PRECISIONS)}")
    if training and name == "fp16":
        raise _refused(lambda n: f"{n('precision', 'fp16')}: training in fp16 needs loss "
                                 f"scaling, which seqrep does not do (small gradients would "
                                 f"underflow to 0); use bf16 or fp32")
    if device.type == "cuda":
        bf16 = torch.cuda.is_bf16_supported()
        if name == "auto":
            return "bf16" if bf16 else ("fp32" if training else "fp16")
        if name == "bf16" and not bf16:
            gpu = torch.cuda.get_device_name(device)
            raise _refused(lambda n: f"{n('precision', 'bf16')}: {gpu} has no bf16; use "
                                     f"{n('precision', 'fp16')} or fp32")
        return name
    if name == "auto":
        return "bf16" if device.type == "cpu" and not training and cpu_has_bf16() else "fp32"
    if device.type == "cpu" and name == "fp16":
        raise _refused(lambda n: f"{n('precision', 'fp16')} is not supported on the CPU; use "
                                 f"bf16 (on CPUs with AVX512-BF16 or AMX) or fp32")
    if device.type == "cpu" and name == "bf16" and not cpu_has_bf16():
        import warnings

        warnings.warn("bf16 precision: this CPU has no native bf16 (AVX512-BF16 or AMX), so "
                      "torch emulates it, slower than fp32", stacklevel=2)
    return name


@dataclass(frozen=True)
class Placement:
    """A device and a precision, and the autocast context that applies them."""

    device: torch.device = torch.device("cpu")
    precision: str = "fp32"

    @classmethod
    def resolve(cls, device: str | torch.device = "auto", precision: str = "auto",
                training: bool = False) -> Placement:
        dev = device if isinstance(device, torch.device) else resolve_device(device)
        return cls(dev, resolve_precision(precision, dev, training))

    @contextlib.contextmanager
    def autocast(self) -> Iterator[None]:
        """Autocast to the precision on the device (nothing for fp32)."""
        if self.precision == "fp32":
            yield
            return
        with torch.autocast(self.device.type, dtype=DTYPES[self.precision]):
            yield


def qlora_device() -> str:
    """Where a 4-bit (QLoRA) base is loaded: the local process's GPU when there is one, else
    the CPU (bitsandbytes places it at load time; the labeler keeps it there)."""
    return f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}" if torch.cuda.is_available() \
        else "cpu"


def ran_on(labeler: object) -> dict[str, str | None]:
    """What runs a labeler's forward pass: ``{"runtime", "device", "autocast"}``, each None
    where the object does not say (a labeler-like object, or none yet)."""
    where = getattr(labeler, "placement", None)
    return {"runtime": getattr(labeler, "runtime", None),
            "device": str(where.device) if where else None,
            "autocast": where.precision if where else None}


def ran_on_line(labeler: object) -> str:
    """:func:`ran_on` as the line a command prints on stderr before it evaluates or predicts,
    e.g. ``running on cpu, PyTorch, bf16 autocast (native)``: a score is never read without
    the numerics that produced it (bf16 on a CPU says whether the CPU computes it natively)."""
    r = ran_on(labeler)
    if r["device"] is None:
        return "running on an unknown device"
    parts = [r["device"]]
    known = RUNTIMES.get(r["runtime"] or "")
    if r["runtime"]:
        parts.append(known.title if known else r["runtime"])
    own = getattr(labeler, "numerics_note", None)  # a runtime that says its numerics itself
    if own:
        parts.append(own)
    elif known and known.note:
        parts.append(known.note)
    elif r["autocast"] == "fp32":
        parts.append("fp32")
    elif r["autocast"]:
        note = ""
        if r["autocast"] == "bf16" and r["device"] == "cpu":
            note = (" (native)" if cpu_has_bf16()
                    else " (emulated: this CPU has no native bf16)")
        parts.append(f"{r['autocast']} autocast{note}")
    return "running on " + ", ".join(parts)


def end_processes() -> None:
    """Leave the process group of a distributed launch (torchrun, ``accelerate launch``).

    Called once a command's work is done: every process meets at a barrier, then the group is
    destroyed, so no gloo or NCCL thread outlives the interpreter (left alive, one can abort a
    process at exit with "terminate called without an active exception"). Nothing happens in
    a single process, or where ``torch.distributed`` was never loaded.
    """
    import sys

    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return
    dist.barrier()
    dist.destroy_process_group()
