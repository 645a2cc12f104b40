"""``mkdocs build --strict`` passes, and the pages the issue names are in the site.

The build itself is the check CI relies on: mkdocs in strict mode turns a link to a missing
page or anchor, a page left out of the navigation and an API reference to a name that does not
exist into errors. The command-line reference is generated at build time, so its presence in
the site shows the hook ran.
"""

from __future__ import annotations

from pathlib import Path

PAGES = ["index.html", "getting-started/index.html", "concepts/repetition/index.html",
         "concepts/exit-layer/index.html", "concepts/guarantees/index.html",
         "guides/data/index.html", "guides/training/index.html", "guides/serve/index.html",
         "reference/cli/index.html", "reference/python/index.html", "results/index.html",
         "results-notes/index.html", "research/index.html", "changelog/index.html"]


def test_the_strict_build_passes_and_holds_every_section(site: Path) -> None:
    missing = [page for page in PAGES if not (site / page).is_file()]
    assert not missing, f"pages missing from the built site: {missing}"


def test_the_cli_reference_lists_every_command_from_the_command_tree(site: Path) -> None:
    import typer.main

    from seqrep.cli.app import app

    html = (site / "reference/cli/index.html").read_text(encoding="utf-8")
    root = typer.main.get_command(app)
    for name, command in root.commands.items():
        assert f"seqrep {name}" in html, f"seqrep {name} is missing from the CLI reference"
        for sub in getattr(command, "commands", {}):
            assert f"seqrep {name} {sub}" in html
    # an option of train, by its declared name: the table is filled from the parameters
    train = root.commands["train"]
    assert all(opt in html for param in train.params for opt in param.opts), \
        "an option of seqrep train is missing from the CLI reference"
    assert "<!-- seqrep-cli-reference -->" not in html


def test_the_api_reference_documents_the_public_names(site: Path) -> None:
    html = (site / "reference/python/index.html").read_text(encoding="utf-8")
    names = ["model.labeler.SequenceLabeler", "model.labeler_config.LabelerConfig",
             "config.TrainConfig", "data.types.Sentence", "data.types.Span", "data.types.Corpus",
             "data.datasets.load_corpus", "predict.tagger.predict_text", "train.run.train",
             "model.labeler.SequenceLabeler.from_pretrained"]  # members, from the docstrings
    missing = [name for name in names if f'id="seqrep.{name}"' not in html]
    assert not missing, f"the API reference lacks {missing}"


def test_the_cli_reference_contents_list_every_command(site: Path) -> None:
    """The page's table of contents (the right-hand sidebar) names every command: a help
    line starting with '#' ("#hashtags kept whole" in predict's) once became a heading of
    its own, and the contents stopped at predict, 6 of 14 commands."""
    import re

    import typer.main

    from seqrep.cli.app import app

    html = (site / "reference/cli/index.html").read_text(encoding="utf-8")
    start = html.find("md-nav--secondary")
    contents = set(re.findall(r'href="#([^"]+)"', html[start:html.find("md-content", start)]))
    root = typer.main.get_command(app)
    missing = [name for name in root.commands if f"seqrep-{name}" not in contents]
    assert not missing, f"the CLI reference's contents lack {missing}"
    assert not re.search(r"<h1[^>]*>(?!Command line)", html), "a help line became a title"


def test_a_help_line_starting_with_a_hash_stays_text() -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "hooks"))
    import cli_reference

    text = cli_reference.help_markdown("split as in CoNLL, and\n#hashtags kept whole")
    assert not any(line.startswith("#") for line in text.splitlines()), text
