"""How a results row is shown: the cells the tables of report and frontier share, and the
way their figures are written (atomically, then closed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seqrep.core.contexts import context_of


def unmask_of(row: dict[str, Any]) -> str:
    """A row's unmasking (a run or a bench row): records from before the field are causal."""
    return row.get("unmask") or "none"


def layer_cell(row: dict[str, Any]) -> str:
    """A row's exit layer as a table shows it: ``20``, ``11 (auto)`` or ``all``."""
    if row.get("auto_exit"):
        return f"{row['exit_layer']} (auto)"
    return str(row["exit_layer"] or "all")


def context_cell(row: dict[str, Any]) -> str:
    """A row's context: ``sentence``, or ``document 256`` (its window budget in subtokens),
    with its separator where it is not the default newline, and ``row batches`` where its
    training batches counted model rows, not sentences."""
    context = context_of(row.get("context"))
    if not context.documents:
        return context.name
    separator = row.get("context_separator")
    return f"{context.name} {row.get('context_tokens')}" \
        + ("" if separator in (None, "\n") else f", separator {separator!r}") \
        + (", row batches" if row.get("batch_rows") else "")


# What a lab run's name adds for its context (sentence runs keep the names they had before
# the setting existed); a context not named here adds its own name.
RUN_SUFFIXES = {"sentence": "", "document": "-doc", "document-focus": "-docf"}


def run_suffix(context: str | None) -> str:
    """What a lab run's name adds for ``context`` (a name of :data:`seqrep.core.contexts.CONTEXTS`;
    None: sentence)."""
    name = context_of(context).name
    return RUN_SUFFIXES.get(name, f"-{name}")


def has_document(rows: list[dict[str, Any]]) -> bool:
    """Whether any row read document context: only then do the tables show the column (so
    a report of sentence-level stores reads as it did before the setting existed)."""
    return any(context_of(r.get("context")).documents for r in rows)


def budget(row: dict[str, Any]) -> tuple[str, int, int]:
    """A setting's budget: its dataset, training sentences and test sentences (0: unknown)."""
    return row["dataset"], row.get("train_sentences") or 0, row.get("test_sentences") or 0


def lr_cell(row: dict[str, Any]) -> str:
    """A row's body learning rate: ``5e-05``, or ``-`` for a probe (no fine-tuning)."""
    return "-" if row.get("lr") is None else f"{row['lr']:g}"


def save_figure(fig: Any, path: Path) -> Path:
    """Write a matplotlib figure as a PNG through a temporary file, then close it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=110)
    tmp.replace(path)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path
