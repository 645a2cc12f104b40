"""Errors that reach the user as one readable line (the CLI prints them without a traceback)."""

from __future__ import annotations


class SeqrepError(Exception):
    """Base class for every error caused by user input: bad files, options or models."""


class DataError(SeqrepError):
    """Bad input data. The message names the file, the line (or record) and what was expected."""

    def __init__(self, source: object, message: str, line: int | None = None) -> None:
        where = f"{source}:{line}" if line is not None else f"{source}"
        super().__init__(f"{where}: {message}")
        self.source = str(source)
        self.line = line


class ConfigError(SeqrepError):
    """A contradictory or unknown option; the message names the option and the allowed values."""


class ModelError(SeqrepError):
    """A model that cannot be found, installed or used as asked."""


def first_line(err: BaseException) -> str:
    """The first line of an error's message (its type's name when it has none): what a
    one-line refusal quotes of an error raised by a library reading an untrusted file."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
