"""Tables and plots from a results store (never from file names: every record carries its
configuration): :func:`report` writes ``results.md`` and the PNG plots.

The work is split by job: statistics over seeds and pairings in :mod:`seqrep.lab.stats`,
Markdown tables in :mod:`seqrep.lab.tables`, plots in :mod:`seqrep.lab.plots`; their public
functions are importable from here as before.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from seqrep.errors import ConfigError, first_line
from seqrep.files.atomic import read_json, write_text
from seqrep.files.owner import MANIFEST, NotOwned, read_manifest, write_list
from seqrep.lab.plots import plots
from seqrep.lab.results import read_sources, unique_runs
from seqrep.lab.stats import VARIED, group, paired, strategy, summarize
from seqrep.lab.tables import bench_markdown, markdown, paired_markdown

__all__ = ["MARKER", "VARIED", "group", "markdown", "paired", "paired_markdown", "plots",
           "report", "strategy", "summarize"]

# written into every report folder, listing the files the report wrote: a later report
# replaces those and nothing else, so a folder of the user's own files is never written over
MARKER = MANIFEST  # the owner's list of what seqrep wrote (seqrep.files.owner)
LEGACY_MARKER = ".seqrep-report.json"  # the list an older seqrep kept, read once
_STAGING = ".seqrep-report.tmp-"  # the folder a report is made in before it is moved in
MAX_NOTES_BYTES = 1 << 22  # a page of Markdown is a few kB; docs/results-notes.md is 30


def report(results: str | Path | list[str | Path], out: str | Path,
           bench: str | Path | list[str | Path] | None = None,
           notes: str | Path | None = None) -> Path:
    """Write ``OUT/results.md`` and PNG plots from results stores; returns the Markdown path.

    ``OUT`` is a new or empty folder, or one a report wrote before (its :data:`MARKER` lists
    what it wrote); the report is made in a folder of its own inside it and moved in only
    when no file it made would replace one that no report wrote. Everything is read first:
    a bad input is refused before anything is written.

    Args:
        results: one results store (JSONL) or several, or finished run folders (a run made
            by ``seqrep train``), read together.
        out: output folder.
        bench: ``seqrep bench --output`` JSON files (one or several, from the same machine)
            whose cut-model rows are plotted and whose speeds place settings on the frontier.
        notes: Markdown placed above the generated tables.

    Raises:
        ConfigError: ``out`` is no folder a report may write into, or an input is unreadable.
    """
    out = Path(out)
    ours = report_files(out)
    stores = results if isinstance(results, list) else [results]
    records = [r for r in read_sources(stores) if r.get("kind", "run") == "run"]
    rows = group(records)
    benches = [] if bench is None else bench if isinstance(bench, list) else [bench]
    datas = [read_bench(b) for b in benches]
    all_rows = [b for data in datas for b in data["rows"]]
    bench_rows = [b for b in all_rows if b.get("mode") == "cut"]
    md = read_notes(notes) + "\n" if notes else ""
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
    points: list[Any] = []
    if datas:
        from seqrep.lab.frontier import frontier, frontier_markdown

        points = frontier(rows, all_rows)
        if points:
            md += "\n" + frontier_markdown(points)
    with _staging(out) as tmp:  # everything is read: now the plots and the page
        made = plots(rows, tmp, bench_rows)
        if points:
            from seqrep.lab.frontier import frontier_plots

            made += frontier_plots(points, tmp)
        if made:
            md += "\n" + "\n".join(f"![{p.stem}]({p.name})" for p in made) + "\n"
        write_text(tmp / "results.md", md)
        _publish(tmp, out, ours)
    return out / "results.md"


def report_files(out: Path) -> set[str]:
    """The files a report wrote into ``out`` before (its :data:`MARKER`'s list), which a new
    report may replace; an empty set for a new or empty folder.

    Raises:
        ConfigError: ``out`` is a file, or a folder holding files without a marker (the
            user's own), or its marker is no report record.
    """
    out = Path(out)
    if not out.exists():
        if out.is_symlink():
            raise ConfigError(f"--out {out} is a link to nothing; expected a folder path")
        return set()
    if not out.is_dir():
        raise ConfigError(f"--out {out} exists and is not a folder; expected a folder for "
                          "results.md and the plots (a new one, or one a report wrote)")
    try:
        entries = [n for n in os.listdir(out) if not n.startswith(_STAGING)]
    except OSError as err:
        raise ConfigError(f"--out {out}: cannot list it ({err.strerror})") from None
    if not entries:
        return set()
    marker = out / MARKER
    if marker.exists() or marker.is_symlink():
        try:
            listed = read_manifest(out)
        except NotOwned as err:
            raise ConfigError(str(err)) from None
        if listed is None or listed[0] != "report" or not all(_plain_name(f)
                                                             for f in listed[1]):
            raise ConfigError(f"{marker}: not a seqrep report's list (expected kind 'report' "
                              f"and the names of the files it wrote)")
        return set(listed[1])
    legacy = out / LEGACY_MARKER
    if not (legacy.exists() or legacy.is_symlink()):
        raise ConfigError(f"--out {out} holds files no seqrep report wrote (it has no "
                          f"{MARKER}); expected a new or empty folder, or one a report wrote "
                          "(a report folder from an older seqrep has no list: remove it)")
    data = read_json(legacy, "a seqrep report record", ConfigError)
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list) or not all(_plain_name(f) for f in files):
        raise ConfigError(f"{legacy}: not a seqrep report record (expected \"files\": a list "
                          "of the file names the report wrote)")
    return set(files)


def _plain_name(name: Any) -> bool:
    """A file name inside the folder: no path separator, not ``.`` or ``..``, not the
    marker itself."""
    return (isinstance(name, str) and name not in ("", ".", "..", MARKER, LEGACY_MARKER)
            and "/" not in name and "\\" not in name and "\0" not in name)


@contextlib.contextmanager
def _staging(out: Path) -> Iterator[Path]:
    """A folder inside ``out`` (made, with its parents, if missing) to make the report in;
    removed on the way out, with ``out`` itself when this made it and it is left empty."""
    made = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=_STAGING, dir=out))
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if made and not os.listdir(out):
            out.rmdir()


def _publish(tmp: Path, out: Path, ours: set[str]) -> None:
    """Move the report made in ``tmp`` into ``out``: only when none of its files would
    replace a file (or folder) no report wrote. The list (:data:`MARKER`, the owner's
    manifest) is written first, naming the report's files, so a report killed while moving
    them in leaves a folder a report may write into again."""
    names = sorted(p.name for p in tmp.iterdir())
    for name in names:
        there = out / name
        theirs = name not in ours or (there.is_dir() and not there.is_symlink())
        if theirs and (there.exists() or there.is_symlink()):
            raise ConfigError(f"--out {out}: {name} is there and no seqrep report wrote it "
                              f"(it is not in {MARKER}); move it away, or choose another "
                              "folder")
    kept = {n for n in ours if (out / n).exists() or (out / n).is_symlink()}
    write_list(out, "report", kept | set(names))  # listed before they arrive
    legacy = out / LEGACY_MARKER
    if legacy.is_file() and not legacy.is_symlink():
        legacy.unlink()  # an older seqrep's list, carried over into the one above
    for name in names:
        os.replace(tmp / name, out / name)  # a link in its place is replaced, never followed


def read_bench(path: str | Path) -> dict[str, Any]:
    """A ``seqrep bench --output`` file, read bounded (:func:`seqrep.files.atomic.read_json`): an
    object whose ``rows`` is a list of objects.

    Raises:
        ConfigError: naming the file and what is wrong.
    """
    data = read_json(Path(path), "a seqrep bench record", ConfigError)
    rows = data.get("rows", []) if isinstance(data, dict) else None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ConfigError(f"{path}: not a seqrep bench record (expected an object whose "
                          "\"rows\" is a list of objects)")
    return {**data, "rows": rows}


def read_notes(path: str | Path) -> str:
    """The ``--notes`` Markdown: a regular file of at most :data:`MAX_NOTES_BYTES`, UTF-8.

    Raises:
        ConfigError: naming the file and why it cannot be read.
    """
    path = Path(path)
    try:
        if not path.is_file():  # a FIFO would block, a device never end
            raise ValueError("not a regular file" if path.exists() else "missing")
        with open(path, "rb") as f:
            raw = f.read(MAX_NOTES_BYTES + 1)
        if len(raw) > MAX_NOTES_BYTES:
            raise ValueError(f"larger than {MAX_NOTES_BYTES} bytes")
        return raw.decode("utf-8")
    except (OSError, ValueError) as err:
        raise ConfigError(f"--notes {path}: not readable Markdown ({first_line(err)})") from None
