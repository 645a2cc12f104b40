"""``seqrep score``: a prediction file scored as conlleval scores it, each tag column read by its
own scheme."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seqrep.data.tags import detect_scheme, split_tag
from seqrep.data.tasks import SPANS, TOKENS
from seqrep.data.types import Sentence


def score_file(path: str | Path) -> dict[str, Any]:
    """Score a prediction file as conlleval does: CoNLL columns ``word ... gold predicted``.

    Each of the two tag columns is read alike: its scheme is detected on its own (IOB1, IOB2,
    BIOES/BILOU, IO, plain labels; prefixes in either case) and converted to IOB2, so an IOB1
    file (the original CoNLL-2003 layout) or BIOES predictions score as conlleval scores them.
    Predictions detected as IOB2 are scored as written, by seqeval's strict rule: an ``I-``
    that continues no span is in none. Plain labels (``PER``, ``O``) are read as runs (one
    span per run of a label, as IO), except that plain labels in both columns with no gold
    ``O`` are token tagging (accuracy, see :meth:`seqrep.data.tasks.TokenTask.score`).

    Returns:
        :func:`seqrep.evaluate.score`'s result plus ``sentences``; ``per_label`` support
        counts gold spans (conlleval's per-type count is of predicted spans).

    Raises:
        DataError: a column no scheme reads (plain labels mixed with prefixed tags, an empty
            label, two prefixes ...), naming the file, the line and the column.
    """
    from seqrep.data.conll import read_conll
    from seqrep.data.textfile import read_text, split_lines

    # the columns and lines are checked here; the tags are read below, each column alike
    sents = read_conll(path, tag_column=-2, scheme="TOKEN").sentences
    lines = split_lines(read_text(Path(path)))  # as read_conll counts lines (a lone CR too)
    rows = [[lines[s.meta["line"] - 1 + j].split() for j in range(len(s))] for s in sents]
    gold = [[r[-2] for r in rs] for rs in rows]
    pred = [[r[-1] for r in rs] for rs in rows]
    schemes = detect_scheme(gold), detect_scheme(pred)
    if schemes == ("TOKEN", "TOKEN") and not any(t in ("O", "o") for g in gold for t in g):
        for name, column in (("gold", gold), ("predicted", pred)):
            _read_column(column, name, path, sents, as_written=True)  # checks them
        return {**TOKENS.score(gold, pred), "sentences": len(sents)}
    result = SPANS.score(_read_column(gold, "gold", path, sents, as_written=False),
                   _read_column(pred, "predicted", path, sents, as_written=True))
    return {**result, "sentences": len(sents)}


def _read_column(tags: list[list[str]], name: str, path: str | Path, sents: Sequence[Sentence],
                 as_written: bool) -> list[list[str]]:
    """One tag column of a prediction file as IOB2 (see :func:`score_file`); ``as_written``
    keeps IOB2 tags as they are (prefix case aside) instead of repairing them."""
    from seqrep.data.iob2 import to_iob2
    from seqrep.errors import DataError

    def line_of(i: int, j: int) -> int:
        return sents[i].meta["line"] + j

    try:
        scheme = detect_scheme(tags)
        if scheme == "TOKEN":
            to_iob2(tags, None, False, path, line_of)  # refuses plain labels mixed with tags
            tags, scheme = [[t if t in ("O", "o") else f"I-{t}" for t in s] for s in tags], "IO"
        iob2 = to_iob2(tags, scheme, False, path, line_of)[0]
    except DataError as err:
        where = f"{err.source}:{err.line}" if err.line is not None else err.source
        raise DataError(path, f"{name} column: {str(err).removeprefix(where + ': ')}",
                        err.line) from None
    if as_written and scheme == "IOB2":
        return [[_prefix_upper(t) for t in s] for s in tags]
    return iob2


def _prefix_upper(tag: str) -> str:
    prefix, label = split_tag(tag)
    return "O" if label is None else f"{prefix}-{label}"
