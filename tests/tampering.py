"""What the tampering tests share: a deadline around an in-process command (a FIFO or a device
would be read forever) and a release of the FIFOs a thread may block on, the command run
in-process with its exit code or traceback, and the edits a test makes to one file of a
folder (run, resume state, ONNX export)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Raise TimeoutError in this (main) thread after ``seconds``: a hang fails the test."""
    def hang(*_: object) -> None:
        raise TimeoutError(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def released(fifos: list[Path], after: float = 3.0) -> Iterator[None]:
    """Open each FIFO's writing end every 0.1 s once ``after`` seconds have passed: a reader
    blocked opening one (in a thread that :func:`deadline` cannot interrupt) then reads an
    empty file, so code that opens a FIFO fails its test instead of hanging it."""
    stop = threading.Event()

    def release() -> None:
        if stop.wait(after):
            return
        while not stop.wait(0.1):
            for fifo in fifos:
                with contextlib.suppress(OSError):  # ENXIO: nobody is reading it
                    os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    thread = threading.Thread(target=release, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def cli(*args: str, seconds: int = 60,
        around: Callable[[], Any] = contextlib.nullcontext) -> tuple[int | str, str, str]:
    """``seqrep ARGS`` in this process: (exit code or 'traceback: ...', stdout, stderr);
    ``around`` is a context (a memory cap, say) the command runs in."""
    from seqrep.cli.app import main

    out, err = io.StringIO(), io.StringIO()
    try:
        with deadline(seconds), around(), contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            main(list(args))
        code: int | str = 0
    except SystemExit as ex:
        code = ex.code if isinstance(ex.code, int) else 1
    except BaseException as ex:  # noqa: BLE001 - a traceback is what the test reports
        code = f"traceback: {type(ex).__name__}: {str(ex)[:200]}"
    return code, out.getvalue(), err.getvalue()


def edit_json(path: Path, change: Callable[[Any], object]) -> None:
    """Rewrite the JSON file at ``path`` with ``change`` applied (it edits in place or returns
    the new value)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    new = change(data)
    path.write_text(json.dumps(data if new is None else new), encoding="utf-8")


def replace(path: Path, content: bytes | str) -> None:
    """Put ``content`` where ``path`` was: bytes, text, ``<dir>``, ``<fifo>``, ``<gone>`` or
    ``<link>TARGET``."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    if content == "<dir>":
        path.mkdir()
    elif content == "<fifo>":
        os.mkfifo(path)
    elif content == "<gone>":
        pass
    elif isinstance(content, str) and content.startswith("<link>"):
        path.symlink_to(content[6:])
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")


def truncate(path: Path, keep: int) -> None:
    """Keep the first ``keep`` bytes of the file at ``path``."""
    path.write_bytes(path.read_bytes()[:keep])
