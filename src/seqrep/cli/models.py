"""``seqrep models``: the packaged offline models, and whether each is installed and cached."""

from __future__ import annotations

import json

import typer
from rich.console import Console
from rich.table import Table

from seqrep.model.packaged import cache_dir, model_table


def models(as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """List the packaged model aliases (usable offline) and their state."""
    rows = model_table()
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(title=f"packaged models (cache: {cache_dir()})")
    for col in ("alias", "kind", "hub id", "installed", "cached", "install with"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["alias"], r["kind"], r["hub_id"], "yes" if r["installed"] else "no",
                      "yes" if r["cached"] else "no", "" if r["installed"] else r["install"])
    Console().print(table)
    typer.echo("Any Hugging Face hub id or local model folder works as well.")
