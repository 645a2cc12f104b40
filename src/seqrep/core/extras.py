"""The optional parts of seqrep and the packages each needs (pyproject.toml's extras).

A command whose extra is missing stops with one line naming the extra to install, before it
loads a model or reads a file, instead of an ImportError traceback from deep inside.
"""

from __future__ import annotations

import importlib.util

from seqrep.errors import ConfigError

# extra -> the modules it installs that seqrep imports
EXTRAS: dict[str, tuple[str, ...]] = {
    "lab": ("matplotlib", "scipy", "yaml"),
    "serve": ("fastapi", "uvicorn", "prometheus_client", "fastapi_offline"),
    "spacy": ("spacy",),
    "onnx": ("onnxruntime", "onnx", "onnxscript"),
    "openvino": ("openvino",),
    "qlora": ("bitsandbytes",),
    "gguf": ("gguf",),
    "datasets": ("datasets", "pyarrow"),
    "ray": ("ray",),
}


def missing(extra: str, modules: tuple[str, ...] = ()) -> list[str]:
    """The modules of ``extra`` (or just ``modules`` of it) that cannot be found here."""
    return [name for name in modules or EXTRAS[extra] if importlib.util.find_spec(name) is None]


def require(extra: str, what: str, modules: tuple[str, ...] = ()) -> None:
    """Raise one :class:`ConfigError` line when ``extra`` (or the ``modules`` of it that
    ``what`` uses) is not installed: ``what`` (a command or option) needs it, and
    ``pip install 'seqrep-labeler[EXTRA]'`` installs it."""
    absent = missing(extra, modules)
    if absent:
        raise ConfigError(f"{what} needs the {extra!r} extra ({', '.join(absent)} not "
                          f"installed): pip install 'seqrep-labeler[{extra}]'")
