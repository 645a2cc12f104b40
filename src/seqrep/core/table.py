"""The one table type of seqrep's strategy families: contexts, decodings, runtimes, fine-tuning
modes and tasks.

Each family is a :class:`Table` of small objects that carry their behaviour (a decoding
decodes, a context builds its rows, a runtime loads, a mode prepares a backbone). A config
stores a name; callers look the object up and ask it instead of comparing names, so adding a
strategy is one entry (``TABLE.register(entry)``, from inside seqrep or outside it) and the
function it names. What every family needs of its table is here once: the names a setting
takes, a lookup and a check that fail in one line naming the field or option and listing
the choices, and a help text generated from the entries, so a registered entry shows up in
all of them.

An entry may name its behaviour by reference (``"package.module:function"``, see
:func:`resolve`) so that the tables import no torch: the configs validate against them
before any model code is loaded.

Imports only seqrep.errors, so every package can ask a table without an import circle.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NoReturn, Protocol, TypeVar

AUTO = "auto"  # "decide from the data / the folder": the names a setting takes may add it


class Named(Protocol):
    """What a table entry has: its setting's value and what the option's help says."""

    @property
    def name(self) -> str: ...

    @property
    def help(self) -> str: ...


T = TypeVar("T", bound=Named)


class Table(dict[str, T]):
    """Entries by name, in registration order (a dict, so ``in``, iteration and
    ``monkeypatch.setitem`` work as on the plain dicts the families were).

    Args:
        field: the config field the names are the values of (``context``, ``decoding``):
            what errors name when no command-line option is given.
        entries: the entries, each with a ``name``.
        default: the entry name None stands for (a record stored before the setting).
        aliases: other names for entries (``auto`` -> the entry it means when nothing
            decides it).
    """

    def __init__(self, field: str, entries: Iterable[T] = (), default: str | None = None,
                 aliases: Mapping[str, str] | None = None) -> None:
        super().__init__((e.name, e) for e in entries)
        self.field = field
        self.default = default
        self.aliases = dict(aliases or {})

    def register(self, entry: T) -> T:
        """Add (or replace) ``entry`` under its name; returns it, so it can decorate."""
        self[entry.name] = entry
        return entry

    def names(self, auto: bool = False) -> tuple[str, ...]:
        """The names the setting takes, ``auto`` first where something may choose."""
        return (AUTO,) * auto + tuple(self)

    def message(self, value: object, flag: str | None = None, auto: bool = False) -> str:
        """The one line that refuses ``value``: ``decoding='x'; expected one of ...`` for the
        config field, ``--decoding 'x'; expected one of ...`` for a command-line ``flag``."""
        given = f"{flag} {value!r}" if flag else f"{self.field}={value!r}"
        return f"{given}; expected one of {', '.join(self.names(auto))}"

    def check(self, value: str, flag: str | None = None, auto: bool = False) -> str:
        """``value`` if the setting takes it (``auto`` too where allowed), else a ConfigError
        (:meth:`message`)."""
        if value not in self.names(auto):
            from seqrep.errors import ConfigError

            raise ConfigError(self.message(value, flag, auto))
        return value

    def __missing__(self, name: str) -> NoReturn:
        from seqrep.errors import ConfigError

        raise ConfigError(self.message(name))

    def of(self, value: str | T | None) -> T:
        """The entry a config or a stored record names: an entry is returned as it is, None
        is :attr:`default`, an alias is the entry it stands for.

        Raises:
            ConfigError: no such entry (one line naming the field and the choices).
        """
        if value is None and self.default is not None:
            value = self.default
        if value is None or isinstance(value, str):
            return self[self.aliases.get(value, value)]  # type: ignore[arg-type]
        return value

    def help(self, lead: str = "") -> str:
        """An option's help text: ``lead`` then each entry with its help, ``a (..), b (..)
        or c (..)``."""
        items = [f"{e.name} ({e.help})" for e in self.values()]
        return lead + (", ".join(items[:-1]) + " or " + items[-1] if len(items) > 1
                       else "".join(items))


def resolve(ref: str | Callable[..., Any]) -> Callable[..., Any]:
    """The function an entry names: a callable as it is, or ``"package.module:name"``
    imported on first use (so a table can name code that needs torch without importing
    it)."""
    if callable(ref):
        return ref
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)
