"""An output file and its bookkeeping: the checks on ``--output`` (and ``--predictions``)
before any work, and the partial output of :func:`seqrep.predict.stream.predict_file`
(``OUT.partial`` and its record ``OUT.partial.json``), which seqrep creates itself and
recognises by its record, so a file of the user's under either name is refused, never
written through or deleted (:mod:`seqrep.files.owner`)."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from seqrep.errors import ConfigError, DataError


def _same_file(a: Path, b: Path) -> bool:
    """Whether two spellings name one file: the same path once ``.``, ``..`` and links are
    resolved, or (both existing) one file under two names, a hard link."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist: then they are not one file
        return False


def check_paths(source: Path | None, output: Path, overwrite: bool = False,
                option: str = "--output",
                replaceable: Callable[[Path], bool] = Path.is_file,
                bookkeeping: Sequence[Path] = ()) -> None:
    """Refuse, before any work, an input that is not a readable regular file and an output
    that would lose data or fail at the end: the input itself (or a link to it), a folder, a
    path in a missing folder, or an existing file unless ``overwrite`` (then a device or FIFO
    that ``replaceable`` does not accept is still refused). The input may be none of ``bookkeeping``
    either (the files written, renamed and deleted beside the output: ``OUT.partial`` and
    ``OUT.partial.json``), or the run would overwrite or delete the very text it reads,
    ``overwrite`` or not.

    Raises:
        ConfigError: naming the option and the path.
    """
    output = Path(output)
    if source is not None:
        source = Path(source)
        try:
            st = os.stat(source)
        except OSError as err:
            raise DataError(source, "no such file" if isinstance(err, FileNotFoundError)
                            else f"cannot read ({err.strerror})") from None
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"--input {source}: expected a regular file (with --output the "
                              "input is read twice: to count and fingerprint it, then to label "
                              "it)")
        for kept in bookkeeping:  # OUT.partial, OUT.partial.json: never the input
            if _same_file(source, Path(kept)):
                raise ConfigError(f"--input {source}: this file is {kept}, where {option} "
                                  f"{output} keeps its progress (written, then renamed or "
                                  "deleted); expected another input or output path")
    if output.is_dir():
        raise ConfigError(f"{option} {output} is a folder; expected a file path")
    parent = output.parent
    if not parent.is_dir():
        raise ConfigError(f"{option} {output}: the folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise ConfigError(f"{option} {output}: the folder {parent} is not writable")
    if output.exists():
        if source is not None and _same_file(source, output):
            raise ConfigError(f"{option} {output} is the input file; expected another path")
        if not overwrite:
            raise ConfigError(f"{option} {output} exists; pass --overwrite to replace it, or "
                              f"choose another path")
        try:
            known = replaceable(output)
        except OSError as err:
            raise ConfigError(f"{option} {output}: cannot read it ({err.strerror})") from None
        if not known and not output.is_file():
            raise ConfigError(f"{option} {output} is not a regular file; expected a file "
                              f"path")


def _meta(output: Path) -> tuple[Path, Path]:
    return (output.with_name(output.name + ".partial"),
            output.with_name(output.name + ".partial.json"))


def _differs(old: Any, new: dict[str, Any]) -> str | None:
    """What ``old`` (a partial output's record) differs from ``new`` in, or ``None``."""
    if not isinstance(old, dict):
        return "has no readable record of what it was made from"
    if old.get("input") != new["input"]:
        return f"was made from another input ({str(old.get('input'))[:200]})"
    if (old.get("size"), old.get("sha256")) != (new["size"], new["sha256"]):
        return "was made from another version of the input (its size or hash differs)"
    if old.get("labeler") != new["labeler"]:
        return "was made by another labeler or with other settings"
    return None


PARTIAL_FORMAT = "seqrep-partial-output"


def _own_bookkeeping(output: Path, made_from: dict[str, Any], overwrite: bool) -> None:
    """An ``OUT.partial`` and ``OUT.partial.json`` are seqrep's when the record is one of a
    partial output of ``OUT`` naming the very partial file (device and inode): then one made
    from this input and labeler is resumed, another removed with ``overwrite``. Any other file
    under either name is the user's: refused, ``overwrite`` or not."""
    from seqrep.files import owner

    partial, meta = _meta(output)
    has_partial = partial.exists() or partial.is_symlink()
    has_meta = meta.exists() or meta.is_symlink()
    if not (has_partial or has_meta):
        return
    old = _record(meta) if has_meta else None
    ours = isinstance(old, dict) and old.get("format") == PARTIAL_FORMAT \
        and old.get("output") == made_from["output"] \
        and (old.get("partial") == owner.identity(partial) if has_partial
             else True) and not partial.is_symlink()
    if not ours:
        name = partial if has_partial and (not has_meta or old is not None) else meta
        raise ConfigError(f"{name} exists and was not written by seqrep for {output}; it is "
                          f"not overwritten or deleted: move it away, or choose another "
                          f"output path")
    if not has_partial:  # killed after the output was complete: its record alone is left
        meta.unlink()
        return
    if not partial.is_file():
        raise ConfigError(f"{partial} is not a regular file; expected a partial output of "
                          f"{output} (remove it to start over)")
    if not _holds_records(partial):  # a file of the user's given the freed inode's number
        raise ConfigError(f"{partial} exists and was not written by seqrep for {output} (its "
                          f"lines are no prediction records); it is not overwritten or "
                          f"deleted: move it away, or choose another output path")
    why = _differs(old, made_from)
    if why is not None and not overwrite:
        raise ConfigError(f"{partial} {why}; pass --overwrite to start over, or remove it")
    if why is not None:
        partial.unlink()
        meta.unlink()


MAX_RECORD_LINE = 1 << 26  # a prediction record of one text: far below 64 MiB


def _is_record(line: bytes) -> bool:
    try:
        value = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and set(value) == {"text", "sentences", "spans"}


def _holds_records(partial: Path) -> bool:
    """Whether the partial output's first and last complete lines are prediction records
    (empty: yes): a file that reuses the inode number of seqrep's removed partial output
    carries its identity but not its lines. Two lines read, however large the file."""
    with open(partial, "rb") as f:
        first = f.readline(MAX_RECORD_LINE)
        if not first.endswith(b"\n"):  # empty, or only a torn first record (cut off on
            return not first or first.startswith(b'{"text": ')  # resuming): as seqrep writes
        size = f.seek(0, 2)
        f.seek(max(0, size - MAX_RECORD_LINE))
        tail = f.read()
    lines = tail[:tail.rfind(b"\n")].rsplit(b"\n", 1)
    return _is_record(first) and _is_record(lines[-1])


def _record(meta: Path) -> Any:
    """A partial output's record, read bounded (a link to ``/dev/zero`` or a FIFO is no
    record, not an endless read); None when it is none."""
    from seqrep.files.atomic import read_json

    try:
        return read_json(meta, "a partial output's record", ConfigError)
    except ConfigError:
        return None


def complete_lines(path: Path) -> int:
    """Complete lines of a partial output; a torn last line is cut off."""
    if not path.exists():
        return 0
    data = path.read_bytes()
    keep = data.rfind(b"\n") + 1
    if keep != len(data):
        with open(path, "r+b") as f:
            f.truncate(keep)
    return data[:keep].count(b"\n")


def keep_lines(path: Path, n: int) -> int:
    """Cut a partial output to its first ``n`` lines; returns ``n``."""
    with open(path, "r+b") as f:
        data, keep = f.read(), 0
        for _ in range(n):
            keep = data.index(b"\n", keep) + 1
        f.truncate(keep)
    return n
