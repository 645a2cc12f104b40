"""``seqrep models``: the packaged offline models, and whether each is installed and cached."""

from __future__ import annotations

import json

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from seqrep.model.packaged import cache_dir, model_table


def models(as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """List the packaged model aliases (usable offline) and their state."""
    rows = model_table()
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    # 80 columns hold the table whole without breaking a hub id: the state is one column,
    # and an install command (up to 180 characters) is a line of its own below the table
    table = Table(title=f"packaged models (cache: {cache_dir()})", box=box.SIMPLE_HEAD,
                  show_edge=False, pad_edge=False,
                  padding=(0, 1))
    for col in ("alias", "kind", "hub id", "state"):
        table.add_column(col, no_wrap=True)
    for r in rows:
        state = ("ready" if r["cached"] else "installed") if r["installed"] else "not installed"
        table.add_row(r["alias"], r["kind"], r["hub_id"], state)
    console = Console()
    console.print(table)
    for r in rows:
        if not r["installed"]:
            console.print(f"{r['alias']}: {r['install']}", soft_wrap=True, markup=False,
                          highlight=False)
    typer.echo("Any Hugging Face hub id or local model folder works as well.")
