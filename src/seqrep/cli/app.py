"""The ``seqrep`` command: one sub-command per module, each a thin wrapper over a library call.

User errors (:class:`seqrep.errors.SeqrepError`) are printed as one line on stderr with exit
code 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import sys

import typer

from seqrep.errors import SeqrepError

app = typer.Typer(
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
    help="Sequence labeling with decoder-only language models by sequence repetition.")


def _register() -> None:
    # Imported here so that `seqrep --help` stays fast and each command owns its module.
    from seqrep.cli import data, evaluate, experiments, models, predict, train

    app.add_typer(data.app, name="data")
    app.command("models")(models.models)
    app.command("train")(train.train)
    app.command("evaluate")(evaluate.evaluate)
    app.command("score")(evaluate.score)
    app.command("predict")(predict.predict)
    app.command("grid")(experiments.grid)
    app.command("report")(experiments.report)
    app.command("bench")(experiments.bench)


_register()


def main() -> None:
    """Entry point of the console script."""
    try:
        app(standalone_mode=False)
    except SeqrepError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    except typer.Exit as ex:
        sys.exit(ex.exit_code)
    except typer.Abort:
        print("aborted", file=sys.stderr)
        sys.exit(130)
    except Exception as err:  # click usage errors carry their own exit code
        import click

        if isinstance(err, click.ClickException):
            err.show()
            sys.exit(err.exit_code)
        raise
