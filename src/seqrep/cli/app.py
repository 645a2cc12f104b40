"""The ``seqrep`` command: one sub-command per module, each a thin wrapper over a library call.

User errors (:class:`seqrep.errors.SeqrepError`) are printed as one line on stderr with exit
code 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

import typer

from seqrep.cli.options import group_options
from seqrep.errors import SeqrepError

app = typer.Typer(
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
    help="Sequence labeling with decoder-only language models by sequence repetition.")


def _show_version(value: bool) -> None:
    if value:
        import seqrep

        print(f"seqrep {seqrep.__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", is_eager=True,
                                       callback=_show_version,
                                       help="Print seqrep's version and exit.")) -> None:
    """Sequence labeling with decoder-only language models by sequence repetition."""


def _register() -> None:
    # Imported here so that `seqrep --help` stays fast and each command owns its module.
    from seqrep.cli import (
        data,
        distill,
        evaluate,
        experiments,
        export,
        hub,
        models,
        predict,
        serve,
        train,
    )

    app.add_typer(data.app, name="data")
    app.command("models")(models.models)
    app.command("train")(train.train)
    app.command("distill")(distill.distill)
    app.command("evaluate")(evaluate.evaluate)
    app.command("score")(evaluate.score)
    app.command("predict")(predict.predict)
    app.command("export")(export.export)
    app.command("grid")(experiments.grid)
    app.command("report")(experiments.report)
    app.command("bench")(experiments.bench)
    app.command("serve")(serve.serve)
    app.command("push")(hub.push)
    app.command("card")(hub.card)


_register()
group_options(app)  # the --help panels of every command's options (seqrep.cli.options)


@functools.cache
def _command() -> Any:
    """The click command typer builds from ``app`` (about 9 ms): once per process, not once
    per :func:`main` call (the suite calls main in-process hundreds of times). Typer's own
    ``app()`` adds only its pretty-exception hook, which ``pretty_exceptions_enable=False``
    turns into the interpreter's hook anyway."""
    import typer.main

    return typer.main.get_command(app)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the console script.

    Exit codes: 0 success, 2 a usage error (one usage line and the problem) or a user error
    (one line naming the file, option or model), 130 interrupted; anything else is a bug and
    keeps its traceback.
    """
    from typer._click.exceptions import NoArgsIsHelpError

    try:
        code = _command()(args=argv, standalone_mode=False)
        if isinstance(code, int) and not isinstance(code, bool) and code:
            # typer returns a raised Exit's code (130 for Ctrl-C) instead of exiting with it
            if code == 130:
                print("aborted", file=sys.stderr)
            sys.exit(code)
        if "torch.distributed" in sys.modules:  # torch was loaded: leave a distributed launch
            from seqrep.model.device import end_processes

            end_processes()
    except SeqrepError as err:
        # a refusal worded for the command line where it has one (--device cuda) rather than
        # for Python (device='cuda'): seqrep.model.device's errors carry both
        print(f"error: {getattr(err, 'option_message', None) or err}", file=sys.stderr)
        sys.exit(2)
    except NoArgsIsHelpError as err:  # bare `seqrep` (or a group): the help, not an error
        err.show()
        sys.exit(0)
    except typer.Exit as ex:
        sys.exit(ex.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        print("aborted", file=sys.stderr)
        sys.exit(130)
    except typer.TyperException as err:  # typer's (vendored click) usage errors
        show = getattr(err, "show", None)
        if show is not None:
            show()
        else:
            print(f"error: {err}", file=sys.stderr)
        sys.exit(err.exit_code if err.exit_code else 2)
