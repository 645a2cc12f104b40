"""``seqrep push`` and ``seqrep card``: publish a trained labeler on the Hugging Face Hub, and
print the model card that goes with it (to read or edit before pushing)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer


def push(
    run: Path = typer.Argument(..., help="run folder (or a saved labeler folder)"),
    repo: str = typer.Argument(..., help="the Hugging Face Hub repository, as ORG/NAME"),
    private: bool = typer.Option(False, "--private",
                                 help="make the repository private when it is created"),
    revision: str | None = typer.Option(None, "--revision",
                                        help="branch to push to, made from main when new"),
    commit_message: str | None = typer.Option(None, "--commit-message",
                                              help="title of the commit"),
) -> None:
    """Publish RUN's labeler and its model card to the Hugging Face Hub.

    One commit holds what RUN/best holds (config, head, adapter or backbone, tokenizer) and
    the card `seqrep card` prints; never checkpoints, logs or the run's records. The token is
    HF_TOKEN's, or the one `hf auth login` saved. Others load it with `org/name` wherever a
    run folder is accepted."""
    from seqrep.model.publish import push as push_run

    info = push_run(run, repo, private=private, revision=revision,
                    commit_message=commit_message)
    typer.echo(f"{run} -> {repo}" + (f"@{revision}" if revision else ""), err=True)
    typer.echo(info.commit_url)


def card(
    run: Path = typer.Argument(..., help="run folder (or a saved labeler folder)"),
    repo: str | None = typer.Option(None, "--repo",
                                    help="the Hub name its usage examples load (ORG/NAME)"),
) -> None:
    """Print the model card `seqrep push` writes for RUN, as Markdown.

    The card holds the Hub's metadata (base model, dataset, scores as a model-index), the
    labels, the labeler's settings, the training configuration and time, and usage."""
    from seqrep.model.card import model_card
    from seqrep.model.hub import repo_name

    if repo is not None:
        repo_name(repo)
    sys.stdout.write(model_card(run, repo))
