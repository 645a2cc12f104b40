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
    "serve": ("fastapi", "uvicorn", "prometheus_client"),
    "spacy": ("spacy",),
    "onnx": ("onnxruntime", "onnx", "onnxscript"),
    "qlora": ("bitsandbytes",),
    "gguf": ("gguf",),
    "datasets": ("datasets", "pyarrow"),
}


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be found in this environment."""
    return [name for name in EXTRAS[extra] if importlib.util.find_spec(name) is None]


def require(extra: str, what: str) -> None:
    """Raise one :class:`ConfigError` line when ``extra`` is not installed: ``what`` (a command
    or option) needs it, and ``pip install 'seqrep[EXTRA]'`` installs it."""
    absent = missing(extra)
    if absent:
        raise ConfigError(f"{what} needs the {extra!r} extra ({', '.join(absent)} not "
                          f"installed): pip install 'seqrep[{extra}]'")
