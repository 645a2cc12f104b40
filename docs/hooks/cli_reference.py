"""mkdocs hook: the command-line reference, generated from seqrep's command tree at build time.

Every command, argument and option of ``seqrep`` is written once, in its typer declaration; this
hook walks the click command that typer builds from :data:`seqrep.cli.app.app` and replaces the
marker ``<!-- seqrep-cli-reference -->`` in a page with one section per command (its help, its
usage line and a table of its parameters per help panel). A renamed or new option therefore
reaches the docs on the next build, and nothing in the docs can describe an option that no
longer exists.
"""

from __future__ import annotations

from typing import Any

MARKER = "<!-- seqrep-cli-reference -->"


def _cell(text: str) -> str:
    """Text safe inside one Markdown table cell: one line, pipes and HTML escaped."""
    text = " ".join(text.split())
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") \
        .replace("|", "\\|")


def _commands(command: Any, ctx: Any, path: list[str]) -> list[tuple[list[str], Any, Any]]:
    """(path, command, context) for ``command`` and every command below it, in the order a
    reader meets them in ``--help`` (groups first, then their sub-commands)."""
    from typer._click.core import Context

    found = [(path, command, ctx)]
    for name, sub in getattr(command, "commands", {}).items():
        if getattr(sub, "hidden", False):
            continue
        found += _commands(sub, Context(sub, info_name=name, parent=ctx), [*path, name])
    return found


def help_markdown(text: str) -> str:
    """A command's help as Markdown text: typer's no-rewrap marks dropped, and a line that
    starts with '#' (predict's "#hashtags kept whole") escaped, or it would be a heading."""
    lines = text.replace("\b\n", "\n").splitlines()
    return "\n".join("\\" + line if line.lstrip().startswith("#") else line for line in lines)


def _section(path: list[str], command: Any, ctx: Any) -> str:
    """One command's section: heading, help text, usage and its parameters by panel."""
    level = "#" * min(len(path) + 1, 4)
    lines = [f"{level} `{' '.join(path)}`", ""]
    help_text = (command.help or "").strip()
    if help_text:
        lines += [help_markdown(help_text), ""]
    usage = command.get_usage(ctx).strip()
    lines += ["```text", usage, "```", ""]
    panels: dict[str, list[tuple[str, str]]] = {}
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None or getattr(param, "hidden", False):
            continue
        kind = "Arguments" if param.param_type_name == "argument" else "Options"
        panel = getattr(param, "rich_help_panel", None) or kind
        panels.setdefault(panel, []).append(record)
    for panel, records in panels.items():
        lines += [f"**{panel}**", "", "| name | what it does |", "|---|---|"]
        lines += [f"| <code>{_cell(names)}</code> | {_cell(text)} |" for names, text in records]
        lines.append("")
    return "\n".join(lines)


def cli_reference() -> str:
    """The whole reference as Markdown: every command of ``seqrep``, in its tree order."""
    import typer.main
    from typer._click.core import Context

    from seqrep.cli.app import app

    root = typer.main.get_command(app)
    ctx = Context(root, info_name="seqrep")
    return "\n".join(_section(path, command, context)
                     for path, command, context in _commands(root, ctx, ["seqrep"]))


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """mkdocs event: fill the marker, where a page holds it, with the generated reference."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, cli_reference())
