"""mkdocs hook: the source layout page, generated from the package at build time.

:data:`LAYERS` is the order of seqrep's parts, lowest first: a module imports only from its own
part or from one listed before it (``tests/test_structure.py`` walks every import and holds the
package to this list). The hook replaces the marker ``<!-- seqrep-layout -->`` in a page with
that list and, for each part, a table of its modules, each described by the first sentence of
its own docstring, so a module that is added, moved or renamed reaches the page on the next
build.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

MARKER = "<!-- seqrep-layout -->"
SRC = Path(__file__).resolve().parents[2] / "src" / "seqrep"

#: seqrep's parts, lowest first: each imports only from itself and the parts above it here.
LAYERS: tuple[str, ...] = (
    "errors", "__init__", "core", "files", "encode", "data", "model", "config", "predict",
    "export", "evaluate", "train", "labeling", "serve", "integrations", "lab", "cli",
    "__main__",
)


def first_sentence(path: Path) -> str:
    """The first sentence of a module's docstring, on one line ('' when it has none)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    text = " ".join(doc.split("\n\n")[0].split())
    for end in (". ", ".\n"):
        if end in text + "\n":
            return (text + "\n").split(end)[0] + "."
    return text


def _cell(text: str) -> str:
    """Docstring markup as Markdown (``x`` and :role:`~a.b` as code), safe in a table cell."""
    text = re.sub(r":\w+:`~?([^`]+)`", lambda m: f"`{m.group(1)}`", text.replace("``", "`"))
    return text.replace("|", "\\|")


def layout_markdown(src: Path = SRC) -> str:
    """The layers, then one table per part of the modules in it."""
    out = ["Imports point one way: each part below imports only from itself and the parts "
           "listed before it.", ""]
    for number, part in enumerate(LAYERS, 1):
        path = src / part / "__init__.py" if (src / part).is_dir() else src / f"{part}.py"
        shown = f"{part}/" if (src / part).is_dir() else f"{part}.py"
        out.append(f"{number}. `{shown}`: {_cell(first_sentence(path))}")
    for part in LAYERS:
        if not (src / part).is_dir():
            continue
        out += ["", f"### `{part}/`", "", "| module | what it does |", "|---|---|"]
        for path in sorted((src / part).rglob("*.py")):
            if path.name == "__init__.py":
                continue
            name = path.relative_to(src / part).as_posix()
            out.append(f"| `{name}` | {_cell(first_sentence(path))} |")
    return "\n".join(out) + "\n"


def on_page_markdown(markdown: str, **_: Any) -> str:
    """mkdocs calls this for every page; only a page holding the marker changes."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, layout_markdown())
