"""Quoting a bad value in a one-line error message: unprintable characters escaped, cut to a
length."""

from __future__ import annotations

import json
from typing import Any


def _printable(text: str) -> str:
    """``text`` with line breaks and other unprintable characters escaped."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text)


def cut(text: str, limit: int = 60) -> str:
    """``text`` for a one-line message: unprintable characters escaped, cut to ``limit``."""
    text = _printable(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def brief(text: str, limit: int = 60) -> str:
    """``repr(text)`` for a one-line message, cut to about ``limit`` characters."""
    r = repr(text)
    return r if len(r) <= limit else r[: limit - 4] + "..." + r[0]


def show(value: Any, limit: int = 60) -> str:
    """A JSON value as JSON (``true``, ``null``, ``"x"``) for a one-line message: unprintable
    characters escaped, cut to ``limit`` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return cut(text, limit)
