"""What runs a labeler's forward pass: one small object per runtime, in one table.

A runtime loads (:meth:`Runtime.load`): ``--runtime`` (predict, evaluate, serve),
:func:`seqrep.export.load_labeler`, the stderr line ``running on ...`` and the benchmark's
ONNX rows all ask these objects instead of comparing runtime names. Adding a runtime is one
entry (``RUNTIMES.register(Runtime(...))``) and its loader.

Imports only seqrep.core.table (and no torch: the loaders, in :mod:`seqrep.export.loaders`, are
named by reference), so the configs, the device module and the loaders can all ask it
without an import circle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from seqrep.core.table import AUTO, Table, resolve

# autocast precisions of the torch runtime (seqrep.model.device resolves ``auto``)
PRECISIONS = ("auto", "fp32", "bf16", "fp16")
DEVICES = (AUTO, "cpu", "cuda", "mps")  # what --device names (and cuda:N)


class LoadSettings(Protocol):
    """What a runtime's loader reads of the inference settings (an
    :class:`~seqrep.config.InferenceConfig` has these fields, as :class:`Settings` does)."""

    trust_remote_code: bool
    device: str
    precision: str
    threads: int | None


@dataclass(frozen=True)
class Settings:
    """The inference settings a runtime loads a labeler with (see :class:`LoadSettings`)."""

    trust_remote_code: bool = False
    device: str = AUTO
    precision: str = AUTO
    threads: int | None = None


@dataclass(frozen=True)
class Runtime:
    """One way to run a labeler.

    Attributes:
        name: the ``--runtime`` value.
        title: what the ``running on ...`` line calls it.
        loader: ``(runtime, path, settings) -> labeler``, or its ``"module:function"``
            reference, imported on first use.
        onnx: runs a ``seqrep export`` folder with ONNX Runtime (else a torch model): what
            ``auto`` picks for an export folder, and what the benchmark's ONNX rows run.
        variant: the export's graph it runs (None: the fp32 ``model.onnx``; ``int8``: the
            graph ``seqrep export --int8`` adds).
        help: what it runs, as help texts say.
    """

    name: str
    title: str
    loader: str | Callable[..., Any] = "seqrep.export.loaders:torch_labeler"
    onnx: bool = False
    variant: str | None = None
    help: str = ""

    def load(self, path: str | Path, settings: LoadSettings = Settings()) -> Any:
        """The labeler in ``path`` on this runtime, placed and loaded as ``settings`` say;
        a ConfigError or ModelError in one line where the folder is not one it runs."""
        return resolve(self.loader)(self, Path(path), settings)

    @property
    def note(self) -> str | None:
        """What the ``running on`` line says instead of the autocast precision (the numerics
        are fixed by the graph), or None."""
        return f"{self.variant} graph" if self.variant else None


RUNTIMES: Table[Runtime] = Table("runtime", (
    Runtime("torch", "PyTorch", help="the PyTorch labeler of a run or labeler folder"),
    Runtime("openvino", "OpenVINO", "seqrep.export.loaders:openvino_labeler",
            help="a run or labeler folder's backbone converted to OpenVINO (CPU; the "
                 "openvino extra)"),
    Runtime("compile", "torch.compile", "seqrep.export.loaders:compiled_labeler",
            help="the PyTorch labeler with its forward pass compiled by inductor (about a "
                 "minute at the first pass of a process; kernels cached)"),
    Runtime("onnx", "ONNX Runtime", "seqrep.export.loaders:onnx_labeler", onnx=True,
            help="a seqrep export folder's graph on ONNX Runtime"),
    Runtime("onnx-int8", "ONNX Runtime", "seqrep.export.loaders:onnx_labeler", onnx=True,
            variant="int8", help="the int8 graph seqrep export --int8 adds"),
))


def runtime(name: str, exported: bool = False) -> Runtime:
    """The runtime ``--runtime NAME`` picks, the name checked first (for a program that
    passes a name; the commands' names are checked once, by their
    :class:`~seqrep.config.InferenceConfig`, and looked up with :func:`pick`)."""
    RUNTIMES.check(name, "--runtime", auto=True)
    return pick(name, exported)


def pick(name: str, exported: bool = False) -> Runtime:
    """The runtime a checked name picks; ``auto``: onnx for an ONNX export folder
    (``exported``), else torch."""
    return RUNTIMES["onnx" if exported else "torch"] if name == AUTO else RUNTIMES[name]
