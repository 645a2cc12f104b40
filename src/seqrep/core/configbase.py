"""What every config dataclass shares: fields that carry their help text, the checks of a
value's type and of a choice, and the JSON round trip.

Imports only seqrep.errors, so configs at any layer (:class:`~seqrep.model.labeler_config.
LabelerConfig` in the model package, the run and inference configs in :mod:`seqrep.config`)
build on it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any

from seqrep.errors import ConfigError


def option(default: Any, help: str, shown: str | None = None, **kw: Any) -> Any:
    """A dataclass field with ``default`` and ``metadata["help"]`` (a list or dict default is
    copied for each instance); ``shown``: the default as ``--help`` says it, where the value
    itself would not say what it means."""
    meta = {"help": help, **({"shown": shown} if shown else {})}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata=meta, **kw)
    return field(default=default, metadata=meta, **kw)


def check_choice(name: str, value: Any, allowed: tuple) -> None:
    """Raise a ConfigError naming ``name`` where ``value`` is not one of ``allowed``."""
    if value not in allowed:
        raise ConfigError(f"{name}={value!r}; expected one of {', '.join(map(str, allowed))}")


def check_types(config: Any) -> None:
    """Refuse a field whose value is not of its annotated type (a config read from a file
    may hold anything: ``repetitions: 1.5``, ``separator: 5``, ``labels: "x"``)."""
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        kinds = str(f.type).replace(" ", "").split("|")
        ok = (value is None and "None" in kinds
              or isinstance(value, bool) and "bool" in kinds
              or not isinstance(value, bool) and (
                  isinstance(value, int) and ("int" in kinds or "float" in kinds)
                  or isinstance(value, float) and "float" in kinds
                  or isinstance(value, str) and "str" in kinds
                  or isinstance(value, list) and "list[str]" in kinds
                  and all(isinstance(x, str) for x in value)))
        if not ok:
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "..."
            raise ConfigError(f"{f.name}={shown}; expected {' or '.join(kinds)}")


class ConfigBase:
    """JSON round trip and copies with changes, shared by the config dataclasses."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        """Build from a dict, ignoring keys this version does not know (saved by a newer one)."""
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        return cls(**{k: v for k, v in data.items() if k in names})

    def replace(self, **changes: Any) -> Any:
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]
