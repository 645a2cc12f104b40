"""Run the ``seqrep`` console script's entry point (:func:`seqrep.cli.app.main`) in this
process, with its own stdin, stdout, stderr and environment, and read the exit code and the
output as a subprocess would give them.

A ``python -m seqrep`` subprocess costs seconds (a fresh interpreter importing torch and
transformers); this costs milliseconds and goes through the same ``main``: its error handling
(one line, exit 2), its usage errors and its exit codes. One test per entry point still runs
the real process (``test_cli.py::test_console_script_smoke``).
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Mapping
from dataclasses import dataclass

import torch
from typer.testing import CliRunner


@dataclass
class Ran:
    """What a finished ``seqrep`` process leaves: exit code, stdout and stderr as text."""

    returncode: int
    stdout: str
    stderr: str


def seqrep(*args: str, input: str | bytes | None = None,  # noqa: A002 - subprocess's name
           env: Mapping[str, str | None] | None = None) -> Ran:
    """``seqrep ARGS`` with ``input`` on stdin and ``env`` over the environment (None unsets a
    variable). An exception ``main`` lets through is printed with its traceback and gives exit
    code 1, as the interpreter does; the torch thread count is restored (``train`` and
    ``serve`` set it for the process)."""
    from seqrep.cli.app import main

    threads = torch.get_num_threads()
    with CliRunner().isolation(input=input, env=env) as (out, err, _):
        try:
            main(list(args))
            code = 0
        except SystemExit as ex:
            if ex.code is None or isinstance(ex.code, int):
                code = ex.code or 0
            else:  # sys.exit("message"): printed on stderr, exit 1
                print(ex.code, file=sys.stderr)
                code = 1
        except Exception:  # noqa: BLE001 - an uncaught error: what the interpreter prints
            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        stdout, stderr = out.getvalue(), err.getvalue()
    torch.set_num_threads(threads)
    return Ran(code, stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace"))
