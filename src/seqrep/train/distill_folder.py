"""The student's folder of a distillation (:mod:`seqrep.train.distill`): its request
(``distill.json``), the paths it may touch, and how an old run in it is replaced.

A student folder may be shared, so its ``distill.json`` is read like any record that anyone may
have written (bounded, every field's type checked, one line naming the file and field), and on
``--resume`` it cannot aim the cache's writes at another folder: its cache must pass the label
cache's check, and a teacher, cache or unlabeled file given on the command line that is not
the recorded one is refused rather than ignored (a student trained on two teachers' labels, or
a cache moved mid-way, would be silently wrong; start a new distillation to change them).

The output never is, holds or lies inside the teacher or the label cache, nor the cache the
teacher, nor either of them inside the huggingface_hub cache a Hub teacher is read from (its
snapshot's files are links into that cache's ``blobs/``, shared by every user of it); and
``--overwrite`` keeps the old run until the student has loaded, as ``train --overwrite``
does: the old run's files are moved into a temporary folder inside the output
(:data:`ASIDE`), which training's own clean-up (:func:`seqrep.train.folder.replace_output`)
removes once the student's model has loaded, and which is put back if the distillation fails
before that.
"""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path
from typing import Any

from seqrep.config import LabelerConfig, TrainConfig
from seqrep.errors import ConfigError, SeqrepError, first_line
from seqrep.files.atomic import read_json, write_json
from seqrep.train.teacher_cache import CACHE

REQUEST = "distill.json"
# an old run moved aside; the name is one of the ".*.tmp-*" folders replace_output removes
ASIDE = ".replaced.tmp-"
MAX_REQUEST_BYTES = 1 << 20  # a request is a few kB (a config with 2,048 labels: ~60 kB)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "..."


def read_request(output: Path) -> dict[str, Any]:
    """``OUTPUT/distill.json`` with every field checked, or one line naming the file and the
    field: ``teacher`` a path, ``unlabeled`` and ``cache`` a path or null, ``temperature``
    a positive number, ``gold_weight`` a share in [0, 1], ``labeler`` and ``train`` objects
    that build valid configs, ``reader_options`` an object or null."""
    path = output / REQUEST
    if not (path.exists() or path.is_symlink()):
        raise SeqrepError(f"{output}: nothing to resume (no {REQUEST})")
    req = read_json(path, "a seqrep distillation request", ConfigError, MAX_REQUEST_BYTES)
    keys = ("teacher", "temperature", "gold_weight", "labeler", "train")
    if not isinstance(req, dict) or any(k not in req for k in keys):
        raise ConfigError(f"{path}: not a seqrep distillation request (expected an object "
                          f"with {', '.join(keys)})")

    def bad(name: str, expected: str) -> ConfigError:
        return ConfigError(f"{path}: {name} {_short(req.get(name))}; expected {expected}")

    for name, optional in (("teacher", False), ("unlabeled", True), ("cache", True)):
        value = req.get(name)
        if not ((optional and value is None) or (isinstance(value, str) and value.strip()
                                                 and "\0" not in value)):
            raise bad(name, "the path of a file" if name == "unlabeled" else "a folder's path")
    for name, low, high in (("temperature", 0.0, math.inf), ("gold_weight", 0.0, 1.0)):
        value = req[name]
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not math.isfinite(value) or not low <= value <= high
                or (name == "temperature" and value == 0)):
            raise bad(name, "a positive number" if name == "temperature"
                      else "a share in [0, 1]")
    if not isinstance(req.get("reader_options", {}), (dict, type(None))):
        raise bad("reader_options", "an object")
    for name, kind in (("labeler", LabelerConfig), ("train", TrainConfig)):
        if not isinstance(req[name], dict):
            raise bad(name, "an object")
        try:
            kind.from_dict(req[name])
        except (TypeError, ValueError, AttributeError, RecursionError, SeqrepError) as err:
            raise ConfigError(f"{path}: {name}: {first_line(err)}") from None
    return req


def locate_teacher(teacher: str | Path) -> tuple[Path, str | None]:
    """The teacher's folder, resolved, and for a labeler on the Hugging Face Hub
    (``org/name[@rev]``, as predict takes it) its name pinned to the commit read,
    ``org/name@<commit>``; the folder is then its checked snapshot in huggingface_hub's
    cache (:func:`seqrep.model.hub.resolve`). A path that exists is always the folder."""
    from seqrep.model.hub import hub_name, resolve

    path = Path(teacher)
    parsed = None if path.exists() or path.is_symlink() else hub_name(str(teacher))
    if parsed is None:
        return path.resolve(), None
    snapshot = resolve(str(teacher))
    return snapshot.resolve(), f"{parsed[0]}@{snapshot.name}"


def recorded_cache(output: Path, req: dict[str, Any]) -> Path | None:
    """The cache a request names (relative to the student's folder when relative), or None
    for the default."""
    cache = req.get("cache")
    return None if cache is None else (output / cache).resolve()


def resumed_paths(output: Path, req: dict[str, Any], teacher: str | Path,
                  cache: str | Path | None, unlabeled: str | Path | None
                  ) -> tuple[Path, Path | None, str | None]:
    """The teacher, cache and unlabeled file a resume works with: the recorded ones; one line
    when the caller gives a teacher, a cache or an unlabeled file that is not the recorded
    one (see the module docstring)."""
    path = output / REQUEST
    recorded = (locate_teacher(req["teacher"])[0], recorded_cache(output, req),
                req.get("unlabeled"))
    given = (Path(teacher).resolve(), None if cache is None else Path(cache).resolve(),
             unlabeled)
    if given[0] != recorded[0]:
        raise ConfigError(f"teacher {teacher}: {path} records teacher {req['teacher']}; a "
                          f"resumed distillation keeps its teacher (to change it, start a "
                          f"new one with --overwrite)")
    if given[1] is not None and given[1] != (recorded[1] or output / CACHE):
        raise ConfigError(f"--teacher-labels {cache}: {path} records the cache "
                          f"{recorded[1] or output / CACHE}; a resumed "
                          f"distillation keeps its cache (leave --teacher-labels unset)")
    if unlabeled is not None and (recorded[2] is None or Path(unlabeled).resolve()
                                  != Path(recorded[2]).resolve()):
        raise ConfigError(f"--unlabeled {unlabeled}: {path} records "
                          f"{recorded[2] or 'no unlabeled file'}; a resumed distillation "
                          f"keeps its text (leave --unlabeled unset)")
    return recorded


def _overlap(a: Path, b: Path) -> bool:
    return a == b or a in b.parents or b in a.parents


def check_apart(output: Path, teacher: Path, cache: Path, names: tuple[str, str, str],
                hub: str | None = None) -> None:
    """The output, the teacher and the cache (all resolved) stay apart: the output is not,
    holds not and lies not inside the teacher or the cache (the default cache,
    ``OUTPUT/teacher-labels``, excepted), nor the cache the teacher. ``names``: what gave
    the output, the teacher and the cache (an option, or a field of ``distill.json``). For
    a teacher on the Hub (``hub``: its name; ``teacher`` its snapshot), neither the output
    nor the cache is, holds or lies inside the huggingface_hub cache that holds it."""
    o, t, c = names
    if hub is not None:
        hub_cache = teacher.parents[2]  # CACHE/models--org--name/snapshots/<commit>
        for name, path in ((o, output), (c, cache)):
            if _overlap(path, hub_cache):
                raise ConfigError(f"{name} {path} is, holds or lies inside the "
                                  f"huggingface_hub cache {hub_cache}, which holds teacher "
                                  f"{hub}; give a folder outside it")
    if _overlap(output, teacher):
        raise ConfigError(f"{o} {output} is, holds or lies inside {t} {teacher}; give the "
                          f"student a folder apart from its teacher")
    if _overlap(cache, teacher):
        raise ConfigError(f"{c} {cache} is, holds or lies inside {t} {teacher}; keep the "
                          f"teacher's labels apart from its run")
    if cache != output / CACHE and _overlap(cache, output):
        raise ConfigError(f"{c} {cache} is, holds or lies inside {o} {output}; give a folder "
                          f"apart from the student's (or leave it unset: "
                          f"OUTPUT/teacher-labels)")


def start(output: Path, request: dict[str, Any]) -> Path | None:
    """A student folder holding the request alone; an old run in it (checked by the caller)
    is moved into a temporary folder inside it, returned (None when there was none)."""
    from seqrep.files import owner

    aside = None
    if output.is_dir() and any(output.iterdir()):
        owner.check_folder(output, True)  # checked by the caller; again, just before moving
        aside = output / f"{ASIDE}{os.getpid()}"
        aside.mkdir()
        for entry in list(output.iterdir()):
            if entry != aside:
                os.replace(entry, aside / entry.name)
    owner.claim(output, "run")
    if aside is not None:
        owner.record(aside, folder=True)  # the old run, seqrep's whole
    write_json(output / REQUEST, request)
    return aside


def restore(output: Path, aside: Path | None) -> None:
    """Put an old run moved aside by :func:`start` back, removing what the new distillation
    wrote beside it; nothing when training already removed it (the student had loaded)."""
    from seqrep.files import owner

    if aside is None or not aside.is_dir():
        return
    for entry in list(output.iterdir()):  # all the new distillation's: start() moved the rest
        if entry == aside or entry.name == owner.MANIFEST:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    owner.release(output)
    for entry in list(aside.iterdir()):
        os.replace(entry, output / entry.name)  # the old manifest comes back with its run
    aside.rmdir()


def check_fresh(output: Path, overwrite: bool, check_output: Any) -> None:
    """``train``'s rule for a new run folder (a distillation interrupted before training is
    seqrep's as wholly as a run, so it may be replaced)."""
    check_output(output, overwrite, False)
