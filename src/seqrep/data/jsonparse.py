"""Parsing JSON from a data file: every way it can fail (bad syntax, nesting too deep, a
number too long, a lone surrogate) is a DataError naming the file and line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from seqrep.data.quote import cut, show
from seqrep.errors import DataError


def _lone_surrogate(value: Any) -> str | None:
    """The first string in a parsed JSON value that holds half of a UTF-16 pair, if any."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if any("\ud800" <= c <= "\udfff" for c in item):
                return item
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def parse_json(text: str, source: str | Path, line: int | None = None) -> Any:
    """Parse JSON; a syntax error, nesting too deep for the parser or a string that is not
    valid Unicode (an escaped lone surrogate such as ``"\\ud800"``) raises DataError.

    Args:
        text: the JSON text (a whole file, or one line of a JSON Lines file).
        source: the file, for error messages.
        line: the line ``text`` is; ``None`` for a whole file (a syntax error then names the
            line the parser stopped at).

    Raises:
        DataError: naming the file and line.
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        where = err.lineno if line is None else line
        raise DataError(source, f"invalid JSON ({err.msg.removesuffix(' at')}, column "
                                f"{err.colno})", where) from None
    except RecursionError:
        raise DataError(source, "invalid JSON (nested too deeply for the parser; expected "
                                "records nested a few levels)", line) from None
    except ValueError as err:  # an integer of more digits than Python converts (4300)
        raise DataError(source, f"invalid JSON ({cut(str(err).split(';')[0], 120)})",
                        line) from None
    bad = _lone_surrogate(value)
    if bad is not None:
        char = next(c for c in bad if "\ud800" <= c <= "\udfff")
        raise DataError(source, f"the string {show(bad)} holds a lone surrogate "
                                f"\\u{ord(char):04x}; expected valid Unicode (escape a character "
                                "outside the BMP as a pair, or write it as UTF-8)", line)
    return value
