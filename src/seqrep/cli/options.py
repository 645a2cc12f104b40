"""Command-line options derived from the config dataclasses, so every field is reachable and
each default and help text lives in one place (the field's ``metadata["help"]``).

:func:`config_params` turns dataclass fields into typer options (``exit_layer`` becomes
``--exit-layer``, booleans get ``--x/--no-x``); :func:`command` builds a typer command from such
parameters and a body that receives them as one dict.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import typer

Params = list[inspect.Parameter]


def field_default(f: dataclasses.Field) -> Any:
    """A dataclass field's default value (calling its factory)."""
    return f.default if f.default is not dataclasses.MISSING else f.default_factory()


def config_params(config: type, skip: Iterable[str] = (),
                  short: dict[str, str] | None = None,
                  names: dict[str, str] | None = None) -> Params:
    """One keyword parameter with a ``typer.Option`` per field of ``config``.

    Args:
        config: a config dataclass (every field has a default and ``metadata["help"]``).
        skip: fields the command sets itself.
        short: extra flags by field name (``{"repetitions": "-r"}``).
        names: flags other than the field's name (``{"exit_layers": "--exit-layer"}``).

    A ``tuple[int, ...]`` or ``tuple[str, ...]`` field is a comma list (``--repetitions
    0,1,2``) that arrives as a tuple; a bad item is one line naming the option.
    """
    hints = typing.get_type_hints(config)
    out = []
    for f in dataclasses.fields(config):
        if f.name in skip:
            continue
        flag = (names or {}).get(f.name, f"--{f.name.replace('_', '-')}")
        extra: dict[str, Any] = {}
        default = field_default(f)
        if typing.get_origin(hints[f.name]) is tuple:
            hints[f.name], extra["parser"] = CommaList, comma_list(hints[f.name], flag)
            extra["metavar"] = "A,B,..."
            default = ",".join(str(x) for x in default)
        elif type(None) in typing.get_args(hints[f.name]) and len(typing.get_args(
                hints[f.name])) > 2:  # int | str | None: typer takes one type, str
            hints[f.name] = str | None
        if hints[f.name] is bool:
            flag = f"{flag}/--no-{flag[2:]}"
        flags = [flag] + ([short[f.name]] if short and f.name in short else [])
        info = typer.Option(None if isinstance(default, list) and not default else default,
                            *flags, help=f.metadata.get("help", ""), show_default=True, **extra)
        out.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=info,
                                     annotation=hints[f.name]))
    return out


class CommaList(tuple):
    """The type of a comma-list option (its values: a tuple)."""


def comma_list(hint: Any, flag: str) -> Callable[[Any], tuple]:
    """A parser of ``"0,1,2"`` into a tuple of the items' type (``tuple[int | None, ...]``:
    ints); a bad item is a ConfigError naming ``flag``."""
    from seqrep.errors import ConfigError

    item = typing.get_args(hint)[0]  # tuple[X, ...] -> X
    kind = next(k for k in typing.get_args(item) or (item,) if k is not type(None))

    def parse(value: Any) -> tuple:
        if not isinstance(value, str):
            return tuple(value)
        try:
            return tuple(kind(x.strip()) for x in value.split(",") if x.strip())
        except ValueError:
            raise ConfigError(f"{flag} {value!r}: expected a comma list of "
                              f"{kind.__name__}s") from None

    return parse


def config_values(config: type, values: dict[str, Any], skip: Iterable[str] = ()
                  ) -> dict[str, Any]:
    """The entries of ``values`` that are fields of ``config``; for optional string fields an
    empty string means None (``--test-split ""``: no test split)."""
    hints = typing.get_type_hints(config)
    out = {}
    for f in dataclasses.fields(config):
        if f.name not in values or f.name in skip:
            continue
        v = values[f.name]
        if v == "" and type(None) in typing.get_args(hints[f.name]):
            v = None
        if v is None and isinstance(field_default(f), list):
            v = []
        out[f.name] = v
    return out


def command(body: Callable[[dict[str, Any]], None], params: Sequence[inspect.Parameter],
            doc: str) -> Callable[..., None]:
    """A typer command with ``params`` whose values reach ``body`` as one dict."""
    def run(**values: Any) -> None:
        body(values)

    run.__signature__ = inspect.Signature(list(params))  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in params}
    run.__doc__ = doc
    run.__name__ = body.__name__
    return run


def option(config: type, name: str, *flags: str, **kw: Any) -> Any:
    """A ``typer.Option`` whose default and help are those of ``config``'s field ``name``."""
    f = {x.name: x for x in dataclasses.fields(config)}[name]
    return typer.Option(field_default(f), *flags, help=f.metadata.get("help", ""), **kw)


def inference_option(name: str, *flags: str, **kw: Any) -> Any:
    """The ``typer.Option`` of :class:`~seqrep.config.InferenceConfig`'s field ``name``, the
    same on every command that has it: its default, its help, and its check while the options
    are read (a bad value is one line naming the option, exit 2, before any model loads)."""
    from seqrep.config import InferenceConfig

    flags = flags or (f"--{name.replace('_', '-')}",)

    def check(value: Any) -> Any:
        return InferenceConfig.check(name, value, flags[0])

    return option(InferenceConfig, name, *flags, callback=check, show_default=True, **kw)


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
