"""The run folder: what may be replaced or resumed, the configuration it resumes with, the
clean-up a killed writer needs, and the report of a finished run.

Every record is read bounded (:func:`seqrep.files.atomic.read_json`); a folder that does not fit is
one line naming the file, and nothing in it is touched.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from seqrep.config import TRAIN_SAVED_BEFORE, LabelerConfig, TrainConfig
from seqrep.data.tasks import DECODINGS, TASKS
from seqrep.errors import SeqrepError, first_line
from seqrep.files.atomic import read_json
from seqrep.train.state import is_number, short_repr

# a run.json is a few kB; anything far larger is not one (and is not read whole)
MAX_RUN_JSON = 1 << 20
# a line of log.jsonl is one evaluation's scores and counts: well under a kilobyte
MAX_LOG_LINE = 1 << 20


def check_output(output: Path, overwrite: bool, resume: bool) -> None:
    """Refuse to clobber anything before a single file is touched.

    A non-empty folder is replaced only with ``overwrite`` and only when everything in it
    was written by seqrep (:func:`seqrep.files.owner.check_folder`: its manifest lists every
    file); the replacing itself waits until the data and the model have loaded
    (:func:`replace_output`), so a typo never deletes a finished run.
    """
    from seqrep.files import owner

    if output.is_symlink() or (output.exists() and not output.is_dir()):
        owner.check_folder(output, overwrite)  # one line: a link, or a file
    if resume:
        if not (output / "run.json").exists():
            raise SeqrepError(f"{output}: nothing to resume (no run.json)")
        return
    owner.check_folder(output, overwrite)


def read_run_json(output: Path) -> dict[str, Any]:
    """A run folder's ``run.json`` checked against its schema (``labeler`` and ``train``
    objects that build valid configs), or one line saying why it is not a seqrep run."""
    path = output / "run.json"
    saved = read_json(path, "a seqrep run configuration", SeqrepError, MAX_RUN_JSON)
    try:
        if not isinstance(saved, dict) or not all(isinstance(saved.get(k), dict)
                                                  for k in ("labeler", "train")):
            raise ValueError("expected an object with 'labeler' and 'train' objects")
        LabelerConfig.from_saved(saved["labeler"])
        TrainConfig.from_dict(saved["train"])
        if not isinstance(saved.get("reader_options") or {}, dict):
            raise ValueError("'reader_options' is not an object")
    except (ValueError, TypeError, SeqrepError) as err:
        raise SeqrepError(f"{path}: not a seqrep run configuration ({first_line(err)})"
                          ) from None
    return saved


def resumed_config(output: Path, labeler_config: LabelerConfig, train_config: TrainConfig,
                   expect_model: str | None = None, saved: dict[str, Any] | None = None,
                   source: str = "run.json"
                   ) -> tuple[LabelerConfig, TrainConfig, dict[str, Any]]:
    """The configuration a run resumes with: the folder's ``run.json``, except that
    ``trust_remote_code`` is the caller's (a shared folder never enables remote code) and
    ``max_steps`` is the caller's. The model the folder names is announced on stderr before
    anything loads it; with ``expect_model`` a folder naming another model is refused.
    ``saved``: the checked contents of another file of the folder that holds ``labeler``,
    ``train`` and ``reader_options`` (``source``, its name: a distillation's request)."""
    saved = read_run_json(output) if saved is None else saved
    lab = LabelerConfig.from_saved(saved["labeler"]).replace(
        trust_remote_code=labeler_config.trust_remote_code)
    if expect_model is not None and lab.model != expect_model:
        raise SeqrepError(f"{output / source} names model {lab.model!r}, not "
                          f"{expect_model!r} as this run should; refusing to resume it")
    print(f"resuming {output}: model {lab.model!r} as its {source} names it"
          f"{' (remote code allowed by the caller)' if lab.trust_remote_code else ''}",
          file=sys.stderr, flush=True)
    cfg = TrainConfig.from_dict({**TRAIN_SAVED_BEFORE, **saved["train"]}).replace(
        max_steps=train_config.max_steps)
    return lab, cfg, dict(saved.get("reader_options") or {})


def replace_output(output: Path, resume: bool) -> None:
    """Make ``output`` ready: an old run (checked by :func:`check_output`) is removed, file
    by file as its manifest lists them (:func:`seqrep.files.owner.remove`, which checks
    again), the folder is claimed (every file written in it is listed), and what a killed
    writer left goes: seqrep's temporary folders (``.best.tmp-*``, ``.checkpoint.tmp-*``) are
    removed, and a folder moved aside (``.checkpoint.old-*``) whose replacement never arrived
    is put back."""
    from seqrep.files import owner

    if not resume and output.exists():
        owner.remove(output)
    owner.claim(output, "run")
    listed = (owner.read_manifest(output) or ("run", set()))[1]
    for stale in output.glob(".*.tmp-*"):
        if owner.listed(stale.name, listed):
            shutil.rmtree(stale, ignore_errors=True)
    for old in output.glob(".*.old-*"):
        if not owner._own_temporary(old.name, listed):
            continue
        target = output / old.name[1:].rsplit(".old-", 1)[0]
        if not target.exists():
            os.replace(old, target)  # killed between atomic_dir's two renames
        else:
            shutil.rmtree(old, ignore_errors=True)


def trim_log(path: Path, keep: int) -> None:
    """Keep the first ``keep`` lines of ``log.jsonl``: evaluations logged after the checkpoint
    a run resumes from are replayed, and must not appear twice. Only those lines are read,
    each bounded (a link to ``/dev/zero`` is refused, not read)."""
    if not (path.exists() or path.is_symlink()):
        return
    if not path.is_file():
        raise SeqrepError(f"{path}: not a regular file; a run's log is one, so remove it "
                          f"or start the run over (--overwrite instead of --resume)")
    lines: list[bytes] = []
    with open(path, "rb") as f:
        while len(lines) < keep and (line := f.readline(MAX_LOG_LINE + 1)):
            if len(line) > MAX_LOG_LINE:
                raise SeqrepError(f"{path}: line {len(lines) + 1} is longer than "
                                  f"{MAX_LOG_LINE} bytes; not a seqrep training log")
            lines.append(line)
        more = f.read(1)
    if more or (lines and not lines[-1].endswith(b"\n")):
        from seqrep.files.atomic import write_text

        write_text(path, "".join(x.decode("utf-8", "replace").rstrip("\n") + "\n"
                                 for x in lines))


def finished_metrics(output: Path) -> dict[str, Any]:
    """The ``metrics.json`` of a finished run, what ``--resume`` of it answers with: read
    bounded, and the entries its callers print checked, so a damaged or planted file is one
    line naming the entry, never a traceback while the summary is printed."""
    path = output / "metrics.json"
    metrics = read_json(path, "a finished run's metrics", SeqrepError)

    def wrong() -> str | None:
        if not isinstance(metrics, dict):
            return f"{short_repr(metrics)}; expected an object"
        if metrics.get("status") != "finished":
            return f"'status' is {short_repr(metrics.get('status'))}; expected 'finished'"
        for key, ok, expected in (  # absent from the records of older versions
                ("task", lambda v: v in TASKS, f"one of {', '.join(TASKS)}"),
                ("decoding", lambda v: v in DECODINGS, f"one of {', '.join(DECODINGS)}"),
                ("train_seconds", lambda v: is_number(v) and v >= 0, "seconds, 0 or more")):
            if key in metrics and not ok(metrics[key]):
                return f"'{key}' is {short_repr(metrics.get(key))}; expected {expected}"
        for key in ("validation", "test"):
            value = metrics.get(key)
            if value is None and key == "test":  # a run without a test split
                continue
            if not isinstance(value, dict):
                return f"'{key}' is {short_repr(value)}; expected an object of scores"
            if not (is_number(value.get("f1")) and 0 <= value["f1"] <= 1):
                return f"'{key}.f1' is {short_repr(value.get('f1'))}; expected a score from 0 to 1"
        return None

    problem = wrong()
    if problem:
        raise SeqrepError(f"{path}: not a finished run's metrics ({problem}); the file is "
                          f"damaged, so start the run over (--overwrite instead of --resume)")
    return metrics


def log_lines(path: Path) -> Iterator[bytes]:
    """The lines of a run's ``log.jsonl``, each read bounded: a line longer than
    :data:`MAX_LOG_LINE` is skipped whole, and a log that is no regular file (a link to
    ``/dev/zero``, a FIFO) gives nothing. For figures read back from the log (a
    distillation's work time), where a damaged line must cost that line, not the run."""
    try:  # non-blocking, so a FIFO planted in its place cannot hang the open
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return
        while line := f.readline(MAX_LOG_LINE + 1):
            if len(line) <= MAX_LOG_LINE:
                yield line
                continue
            while line and not line.endswith(b"\n"):  # the rest of the overlong line
                line = f.readline(MAX_LOG_LINE + 1)


def logged_eval_seconds(path: Path) -> float:
    """The validations' seconds a run's ``log.jsonl`` records, summed over its good lines: a
    line that is no evaluation record with a finite, non-negative ``eval_seconds`` (not
    JSON, not an object, a text there, too long) counts 0 (see :func:`log_lines`)."""
    total = 0.0
    for line in log_lines(path):
        try:
            value = json.loads(line).get("eval_seconds")
        except (ValueError, AttributeError):  # not JSON (or not UTF-8), or not an object
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool) \
                and 0 <= value < float("inf"):
            total += value
    return total
