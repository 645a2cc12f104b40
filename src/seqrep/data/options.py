"""The options every reader checks the same way (a flag, a column index, a tag scheme): a bad
value is a ConfigError naming the option."""

from __future__ import annotations

from typing import Any

from seqrep.data.tags import SCHEMES, normalize_scheme
from seqrep.errors import ConfigError


def check_flag(name: str, value: Any) -> bool:
    """A true/false option; anything else raises ConfigError naming it."""
    if not isinstance(value, bool):
        raise ConfigError(f"{name}: expected true or false, got {value!r}")
    return value


def check_index(name: str, value: Any) -> int:
    """A column index option: an integer, or a string holding one (negative counts from the
    end); anything else raises ConfigError naming it."""
    if isinstance(value, str) and value.strip().lstrip("-").isdecimal():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigError(f"{name}: expected a column index (an integer), got {value!r}")
    return value


def check_scheme(scheme: str | None) -> str | None:
    """Resolve a scheme name (``None`` means detect); unknown names raise ConfigError."""
    if scheme is None:
        return None
    if not isinstance(scheme, str):
        raise ConfigError(f"scheme: expected a scheme name ({', '.join(SCHEMES)}), got "
                          f"{scheme!r}")
    try:
        return normalize_scheme(scheme)
    except ValueError as err:
        raise ConfigError(f"scheme: {err}") from None
