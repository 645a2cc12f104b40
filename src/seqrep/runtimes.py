"""What runs a labeler's forward pass: one small object per runtime, in one table.

``--runtime`` (predict, evaluate, serve), :func:`seqrep.export.load_labeler`, the stderr line
``running on ...`` and the benchmark's ONNX rows all ask these objects instead of comparing
runtime names. Adding a runtime is one entry here (and its loader in load_labeler).

Imports only seqrep.errors (and no torch), so the configs, the device module and the
loaders can all ask it without an import circle.
"""

from __future__ import annotations

from dataclasses import dataclass

# autocast precisions of the torch runtime (seqrep.model.device resolves ``auto``)
PRECISIONS = ("auto", "fp32", "bf16", "fp16")
AUTO = "auto"
DEVICES = (AUTO, "cpu", "cuda", "mps")  # what --device names (and cuda:N)


@dataclass(frozen=True)
class Runtime:
    """One way to run a labeler.

    Attributes:
        name: the ``--runtime`` value.
        title: what the ``running on ...`` line calls it.
        onnx: runs a ``seqrep export`` folder with ONNX Runtime (else a torch model).
        variant: the export's graph it runs (None: the fp32 ``model.onnx``; ``int8``: the
            graph ``seqrep export --int8`` adds).
    """

    name: str
    title: str
    onnx: bool = False
    variant: str | None = None

    @property
    def note(self) -> str | None:
        """What the ``running on`` line says instead of the autocast precision (the numerics
        are fixed by the graph), or None."""
        return f"{self.variant} graph" if self.variant else None


RUNTIMES = {r.name: r for r in (
    Runtime("torch", "PyTorch"),
    Runtime("onnx", "ONNX Runtime", onnx=True),
    Runtime("onnx-int8", "ONNX Runtime", onnx=True, variant="int8"),
)}
CHOICES = (AUTO, *RUNTIMES)  # what --runtime accepts


def check_runtime(name: str, flag: str = "--runtime") -> str:
    """``name`` if ``--runtime`` accepts it, else a ConfigError naming the option (``flag``)."""
    if name not in CHOICES:
        from seqrep.errors import ConfigError

        raise ConfigError(f"{flag} {name!r}; expected one of {', '.join(CHOICES)}")
    return name


def runtime(name: str, exported: bool = False) -> Runtime:
    """The runtime ``--runtime NAME`` picks; ``auto``: onnx for an ONNX export folder
    (``exported``), else torch."""
    check_runtime(name)
    if name == AUTO:
        return RUNTIMES["onnx" if exported else "torch"]
    return RUNTIMES[name]
