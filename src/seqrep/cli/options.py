"""Help texts and defaults for CLI options come from the config dataclasses (one place each)."""

from __future__ import annotations

import dataclasses
from typing import Any

import typer


def option(config: type, name: str, *flags: str, **kw: Any) -> Any:
    """A ``typer.Option`` whose default and help are those of ``config``'s field ``name``."""
    f = {x.name: x for x in dataclasses.fields(config)}[name]
    default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
    return typer.Option(default, *flags, help=f.metadata.get("help", ""), **kw)


def parse_label_map(items: list[str] | None) -> dict[str, str]:
    """``["PERSON=PER", ...]`` -> ``{"PERSON": "PER"}``."""
    from seqrep.errors import ConfigError

    out = {}
    for item in items or []:
        if "=" not in item:
            raise ConfigError(f"--label-map {item!r}: expected OLD=NEW")
        old, new = item.split("=", 1)
        out[old.strip()] = new.strip()
    return out
