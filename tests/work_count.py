"""Counting the work of seqrep's text splitters, so that "takes linear time" is tested without
a clock: the same count on the same input on any machine, however fast or loaded.

The work of a call is the Python lines run in :mod:`seqrep.data.tokenize` plus the characters
each of its regular expressions was asked to cover: from where a ``search``/``match`` call
starts to the end of what it found (or to the end of the text when it found nothing), and for
``finditer`` from one match's end to the next. A rule that rescans the rest of the text from
each position, in Python or through repeated regex calls, makes this count grow with the
square of the length; a linear rule keeps it proportional.

Not seen: backtracking inside one regex call (the C engine exposes no step count), so each
pattern's own shape is the guard there (e.g. ``_SENT_END_RE`` starts a match only where a
run of terminal punctuation starts, which its own test checks).
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

import seqrep.data.tokenize as tokenize_module

_END = sys.maxsize


class _Counted:
    """A compiled pattern that adds the characters each call covers to ``counter[0]``."""

    def __init__(self, pattern: Any, counter: list[int]) -> None:
        self._p, self._n = pattern, counter

    def __getattr__(self, name: str) -> Any:
        return getattr(self._p, name)

    def _covered(self, text: str, pos: int, endpos: int, m: Any) -> None:
        self._n[0] += (m.end() if m else min(endpos, len(text))) - pos + 1

    def search(self, text: str, pos: int = 0, endpos: int = _END) -> Any:
        m = self._p.search(text, pos, endpos)
        self._covered(text, pos, endpos, m)
        return m

    def match(self, text: str, pos: int = 0, endpos: int = _END) -> Any:
        m = self._p.match(text, pos, endpos)
        self._covered(text, pos, endpos, m)
        return m

    def fullmatch(self, text: str, pos: int = 0, endpos: int = _END) -> Any:
        m = self._p.fullmatch(text, pos, endpos)
        self._n[0] += min(endpos, len(text)) - pos + 1
        return m

    def finditer(self, text: str, pos: int = 0, endpos: int = _END) -> Iterator[Any]:
        last = pos
        for m in self._p.finditer(text, pos, endpos):
            self._n[0] += m.end() - last + 1
            last = m.end()
            yield m
        self._n[0] += min(endpos, len(text)) - last


@contextlib.contextmanager
def _counting() -> Iterator[list[int]]:
    counter = [0]
    patterns = {name: value for name, value in vars(tokenize_module).items()
                if isinstance(value, re.Pattern) or type(value).__name__ == "Pattern"}
    source = tokenize_module.__file__

    def trace(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename != source:
            return None  # lines elsewhere are not counted (nor traced)
        if event == "line":
            counter[0] += 1
        return trace

    for name, pattern in patterns.items():
        setattr(tokenize_module, name, _Counted(pattern, counter))
    old = sys.gettrace()
    sys.settrace(trace)
    try:
        yield counter
    finally:
        sys.settrace(old)
        for name, pattern in patterns.items():
            setattr(tokenize_module, name, pattern)


def work(fn: Callable[[str], Any], text: str) -> int:
    """The work ``fn(text)`` does in seqrep.data.tokenize (see the module's docstring)."""
    with _counting() as counter:
        fn(text)
    return counter[0]


def assert_linear(fn: Callable[[str], Any], piece: str, n: int = 4000) -> None:
    """``fn`` on ``piece`` repeated to ``2n`` characters does at most 2.2 times its work on
    ``n`` (twice, plus a little for the ends): a rule quadratic in the run's length does 4."""
    small = piece * max(1, n // len(piece))
    big = small + small
    a, b = work(fn, small), work(fn, big)
    assert b <= 2.2 * a + 50, (fn.__name__, repr(piece), a, b)
