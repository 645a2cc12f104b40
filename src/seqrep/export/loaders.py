"""The runtimes' loaders (:attr:`seqrep.core.runtimes.Runtime.loader`): a folder to a labeler.

Each takes ``(runtime, path, settings)`` and refuses, in one line, a folder that is not
one it runs, so :func:`seqrep.export.load_labeler` is a lookup and one call, with no branch
per runtime. Torch and ONNX Runtime are imported only by the loader that needs them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seqrep.core.runtimes import LoadSettings, Runtime
from seqrep.errors import ConfigError
from seqrep.export.files import META_FILE, require_onnx


def exported(path: str | Path) -> bool:
    """Whether ``path`` holds an ONNX export's metadata. A metadata "file" that is a folder,
    a device or a FIFO still marks an export: the ONNX runtime refuses it in one line, where
    torch would misread the folder."""
    meta = Path(path) / META_FILE
    return meta.exists() or meta.is_symlink()


def torch_labeler(runtime: Runtime, path: Path, settings: LoadSettings) -> Any:
    """A run or labeler folder as a :class:`~seqrep.model.labeler.SequenceLabeler`."""
    if exported(path):
        raise ConfigError(f"{path} is an ONNX export; use --runtime onnx (or auto)")
    from seqrep.model.labeler import SequenceLabeler

    return SequenceLabeler.from_pretrained(path, settings.trust_remote_code, settings.device,
                                           settings.precision)


def openvino_labeler(runtime: Runtime, path: Path, settings: LoadSettings) -> Any:
    """A run or labeler folder as an :class:`~seqrep.export.openvino.OpenVinoLabeler`, its
    backbone converted and compiled before it returns (a failure is one line here, not at
    the first text); ``settings.threads`` are OpenVINO's threads (default: torch's)."""
    if exported(path):
        raise ConfigError(f"{path} is an ONNX export; --runtime openvino reads a run or "
                          f"labeler folder (use --runtime onnx for an export)")
    from seqrep.core.extras import require

    require("openvino", "--runtime openvino")
    from seqrep.export.openvino import OpenVinoLabeler
    from seqrep.model.io import load_labeler

    labeler = load_labeler(OpenVinoLabeler, path, settings.trust_remote_code)
    return labeler.place(settings.device, settings.precision, settings.threads).compile()


def compiled_labeler(runtime: Runtime, path: Path, settings: LoadSettings) -> Any:
    """A run or labeler folder as a :class:`~seqrep.export.compiled.CompiledLabeler`, its
    pass compiled and checked before it returns (a failure is one line here, not at the
    first text)."""
    if exported(path):
        raise ConfigError(f"{path} is an ONNX export; --runtime compile reads a run or "
                          f"labeler folder (use --runtime onnx for an export)")
    from seqrep.export.compiled import CompiledLabeler
    from seqrep.model.io import load_labeler

    labeler = load_labeler(CompiledLabeler, path, settings.trust_remote_code)
    return labeler.place(settings.device, settings.precision).eval().compile()


def onnx_labeler(runtime: Runtime, path: Path, settings: LoadSettings) -> Any:
    """An export folder's graph (the runtime's ``variant``: fp32 or int8) as an
    :class:`~seqrep.export.runtime.OnnxLabeler`; ``settings.threads`` are ONNX Runtime's
    intra-op threads (default: its own)."""
    require_onnx("onnxruntime")
    from seqrep.export.runtime import OnnxLabeler

    return OnnxLabeler.from_pretrained(path, settings.threads, device=settings.device,
                                       precision=settings.precision, variant=runtime.variant)
