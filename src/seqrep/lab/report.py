"""Tables and plots from a results store (never from file names: every record carries its
configuration): :func:`report` writes ``results.md`` and the PNG plots.

The work is split by job: statistics over seeds and pairings in :mod:`seqrep.lab.stats`,
Markdown tables in :mod:`seqrep.lab.tables`, plots in :mod:`seqrep.lab.plots`; their public
functions are importable from here as before.
"""

from __future__ import annotations

from pathlib import Path

from seqrep.fileio import write_text
from seqrep.lab.plots import plots
from seqrep.lab.results import read_sources, unique_runs
from seqrep.lab.stats import VARIED, group, paired, strategy, summarize
from seqrep.lab.tables import bench_markdown, markdown, paired_markdown

__all__ = ["VARIED", "group", "markdown", "paired", "paired_markdown", "plots", "report",
           "strategy", "summarize"]


def report(results: str | Path | list[str | Path], out: str | Path,
           bench: str | Path | list[str | Path] | None = None,
           notes: str | Path | None = None) -> Path:
    """Write ``OUT/results.md`` and PNG plots from results stores; returns the Markdown path.

    Args:
        results: one results store (JSONL) or several, or finished run folders (a run made
            by ``seqrep train``), read together.
        out: output folder.
        bench: ``seqrep bench --output`` JSON files (one or several, from the same machine)
            whose cut-model rows are plotted and whose speeds place settings on the frontier.
        notes: Markdown placed above the generated tables.
    """
    import json

    out = Path(out)
    stores = results if isinstance(results, list) else [results]
    records = [r for r in read_sources(stores) if r.get("kind", "run") == "run"]
    rows = group(records)
    benches = [] if bench is None else bench if isinstance(bench, list) else [bench]
    datas = [json.loads(Path(b).read_text(encoding="utf-8")) for b in benches]
    all_rows = [b for data in datas for b in data.get("rows", [])]
    bench_rows = [b for b in all_rows if b.get("mode") == "cut"]
    made = plots(rows, out, bench_rows)
    md = Path(notes).read_text(encoding="utf-8") + "\n" if notes else ""
    repeats = unique_runs(records)[1]
    if repeats:
        n = len(repeats)
        names = ", ".join(dict.fromkeys(str(r.get("source") or r.get("name") or r.get("run_id"))
                                        for r in repeats))
        md += (f"Note: {n} record{' repeats' if n == 1 else 's repeat'} a run already read "
               f"(the same run id, or a run folder holding a stored run's metrics) and "
               f"{'is' if n == 1 else 'are'} counted once: {names}.\n\n")
    md += markdown(rows)
    for against in ("causal", "depth", "context"):
        pairs = paired(records, against)
        if pairs:
            md += "\n" + paired_markdown(pairs, against)
    from seqrep.lab.exit_choice import auto_exit_markdown, auto_exit_rows

    auto = auto_exit_markdown(auto_exit_rows(rows))
    md += "\n" + auto if auto else ""
    for data in datas:
        md += "\n" + bench_markdown(data)
    if datas:
        from seqrep.lab.frontier import frontier, frontier_markdown, frontier_plots

        points = frontier(rows, all_rows)
        if points:
            md += "\n" + frontier_markdown(points)
            made += frontier_plots(points, out)
    if made:
        md += "\n" + "\n".join(f"![{p.stem}]({p.name})" for p in made) + "\n"
    path = out / "results.md"
    write_text(path, md)
    return path
