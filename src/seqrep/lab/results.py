"""The results store: one JSON line per finished run, safe against concurrent writers.

Appends take an exclusive ``flock`` and write a whole line with one ``write`` call, starting on
a fresh line if a crashed writer left the file without a final newline. The reader works on bytes:
it splits on ``b"\n"`` only (``json.dumps`` escapes ``\n`` and ``\r`` inside strings, but with
``ensure_ascii=False`` writes U+0085, U+2028 and U+2029 raw, which ``str.splitlines`` would take
for line breaks) and decodes each line on its own, so a line cut in the middle of a multi-byte
character by a killed writer loses that record only, never the ones before or after it.
"""

from __future__ import annotations

import fcntl
import json
import os
import warnings
from pathlib import Path
from typing import Any


def append_record(path: str | Path, record: dict[str, Any]) -> None:
    """Append one record under an exclusive lock."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        # a previous writer that crashed mid-line left no newline: start on a fresh line
        size = os.fstat(fd).st_size
        if size:
            with open(path, "rb") as f:
                f.seek(size - 1)
                if f.read(1) != b"\n":
                    line = b"\n" + line
        os.write(fd, line)
        os.fsync(fd)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _integer(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _optional(check: Any) -> Any:
    return lambda v: v is None or check(v)


def _layer(v: Any) -> bool:
    return v is None or v == "auto" or _integer(v)


def _setting(v: Any) -> bool:
    """An exit layer as a run was asked for it: a layer, or a setting the run resolved (auto,
    a fraction of the depth, default), whose layer ``metrics.exit_layer`` holds."""
    from seqrep.errors import ConfigError
    from seqrep.model.exit_layer import parse_exit_layer

    try:
        return not isinstance(v, bool) and v == parse_exit_layer(v)
    except (ConfigError, TypeError):
        return False


def _string(v: Any) -> bool:
    return isinstance(v, str)


# "a.b.c" -> (check, what it should be, required): the fields a report reads from a finished
# run; an optional field may be missing (a missing "metrics.test" skips its own fields)
_FINISHED = (
    ("config.labeler.model", _string, "a string", True),
    ("config.labeler.repetitions", _integer, "an integer", True),
    ("config.labeler.unmask", _string, "a string", True),
    ("config.labeler.finetune", _string, "a string", True),
    ("config.labeler.exit_layer", _setting, "an integer, \"auto\", a fraction, "
     "\"default\" or null", False),
    ("config.labeler.frozen_layers", _optional(_integer), "an integer or null", False),
    ("config.train.dataset", _string, "a string", True),
    ("config.train.seed", _integer, "an integer", True),
    ("config.train.epochs", _optional(_integer), "an integer or null", False),
    ("config.train.lr", _optional(_number), "a number or null", False),
    ("metrics.validation", lambda v: isinstance(v, dict), "an object", True),
    ("metrics.validation.f1", _number, "a number", True),
    ("metrics.test", _optional(lambda v: isinstance(v, dict)), "an object or null", False),
    ("metrics.test.f1", _number, "a number", True),
    ("metrics.test.sentences", _optional(_integer), "an integer or null", False),
    ("metrics.train_seconds", _number, "a number", False),
    ("metrics.train_sentences", _optional(_integer), "an integer or null", False),
    ("metrics.layer", _layer, "an integer or null", False),
    ("metrics.exit_layer", _layer, "an integer or null", False),
)


def record_problem(record: dict[str, Any]) -> str | None:
    """What makes a store record unreadable by a report (a field of the wrong type), or
    ``None``. Records of another ``kind`` (bench) and unfinished runs need less."""
    kind = record.get("kind", "run")
    if not isinstance(kind, str):
        return f'"kind" is {kind!r:.40}; expected a string'
    if kind != "run":
        return None
    for name in ("config", "metrics", "config.labeler", "config.train"):
        value = _at(record, name)
        if not isinstance(value, dict):
            return f'"{name}" is {"missing" if value is _MISSING else repr(value)[:40]}; ' \
                   "expected an object"
    if record["metrics"].get("status") != "finished":
        return None
    for name, ok, expected, required in _FINISHED:
        value = _at(record, name)
        if value is _MISSING:
            parent = _at(record, name.rsplit(".", 1)[0])
            if required and parent is not None and parent is not _MISSING:
                return f'"{name}" is missing; expected {expected}'
        elif not ok(value):
            return f'"{name}" is {value!r:.40}; expected {expected}'
    return None


_MISSING = object()


def _at(record: dict[str, Any], name: str) -> Any:
    """The value at a dotted path, or ``_MISSING``."""
    value: Any = record
    for key in name.split("."):
        if not isinstance(value, dict) or key not in value:
            return _MISSING
        value = value[key]
    return value


def read_records(path: str | Path, check: Any = None) -> list[dict[str, Any]]:
    """All complete records of a results store, in file order.

    A line that is not UTF-8, not JSON or not a JSON object (a writer killed mid-record) is
    skipped; if any are, one warning says how many and where the first one is. Blank lines are
    ignored, and a complete last line without a newline is kept. A complete line that no
    seqrep writer makes (a number of thousands of digits, nesting too deep for the parser) is
    an error, and so is a record ``check`` finds a problem in.

    Args:
        path: the store; a missing file has no records.
        check: ``record -> problem or None`` (:func:`record_problem`), or ``None``.

    Returns:
        the records, as dicts.

    Raises:
        DataError: naming the store and the line.
    """
    from seqrep.errors import DataError

    path = Path(path)
    if not path.exists():
        return []
    if not path.is_file():  # a FIFO would block, a device never end
        raise DataError(path, "not a regular file; expected a results store (JSONL)")
    data = path.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):  # a byte-order mark from an editor
        data = data[3:]
    out: list[dict[str, Any]] = []
    skipped: list[int] = []
    for n, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            record = None
        except RecursionError:
            raise DataError(path, "a record nested too deeply for the parser; expected a "
                                  "seqrep results record", n) from None
        except ValueError as err:  # an integer of more digits than Python converts (4300)
            raise DataError(path, f"unreadable number ({str(err).split(';')[0]}); expected a "
                                  "seqrep results record", n) from None
        if isinstance(record, dict):
            problem = check(record) if check is not None else None
            if problem is not None:
                raise DataError(path, f"{problem} (not a seqrep results record?)", n)
            out.append(record)
        else:
            skipped.append(n)
    if skipped:
        lines = "1 line" if len(skipped) == 1 else f"{len(skipped)} lines"
        warnings.warn(f"{path}: skipped {lines} holding no complete record (an incomplete "
                      f"record from a writer killed mid-write?); the first is line {skipped[0]}",
                      stacklevel=2)
    return out


def run_record(folder: str | Path) -> dict[str, Any]:
    """A finished ``seqrep train`` run folder as a store record (``run.json`` and
    ``metrics.json``), so a run made outside a grid (the CPU recipes) joins a report.

    The configuration is the one the run recorded; a run whose exit layer was picked by
    ``--exit-layer auto`` (its ``run.json`` holds the sweep) reads as ``auto``, as a grid
    records it, with the chosen layer in its metrics.

    Raises:
        ConfigError: the folder holds no finished run (named, with what is missing).
    """
    from seqrep.errors import ConfigError, first_line
    from seqrep.files.atomic import read_json
    from seqrep.lab.identity import config_hash

    folder = Path(folder)
    for name in ("run.json", "metrics.json"):
        if not ((folder / name).exists() or (folder / name).is_symlink()):
            raise ConfigError(f"{folder}: not a finished run ({name} is missing); expected a "
                              "results store (JSONL) or a run folder")
    # bounded reads: a link to /dev/zero or a FIFO is one line, not a hang
    run = read_json(folder / "run.json", "a seqrep run record", ConfigError)
    metrics = read_json(folder / "metrics.json", "a seqrep metrics record", ConfigError)
    try:
        config = {"labeler": dict(run["labeler"]), "train": dict(run["train"])}
    except (KeyError, TypeError, ValueError) as err:
        raise ConfigError(f"{folder}: run.json / metrics.json unreadable "
                          f"({first_line(err)[:120]})") from None
    if not isinstance(metrics, dict):
        raise ConfigError(f"{folder}: metrics.json is not an object")
    if metrics.get("status") != "finished":
        raise ConfigError(f"{folder}: the run has not finished (status "
                          f"{metrics.get('status')!r})")
    if "exit_search" in run:
        config["labeler"]["exit_layer"] = "auto"
    if isinstance(run.get("distill"), dict):  # a seqrep distill student: never pooled with
        config["distill"] = {k: run["distill"].get(k)  # plainly trained runs
                             for k in ("teacher", "temperature", "gold_weight", "unlabeled",
                                       "unlabeled_sentences")}
        if run["distill"].get("teacher_key"):  # the teacher's model; older records lack it
            config["distill"]["teacher_key"] = run["distill"]["teacher_key"]
    record = {"run_id": config_hash(config), "name": folder.name, "config": config,
              "metrics": metrics, "source": str(folder)}
    problem = record_problem(record)
    if problem is not None:
        raise ConfigError(f"{folder}: run.json / metrics.json: {problem}")
    return record


def read_sources(paths: list[str | Path]) -> list[dict[str, Any]]:
    """The records of results stores (JSONL files) and run folders, in the order given."""
    out: list[dict[str, Any]] = []
    for path in paths:
        out += [run_record(path)] if Path(path).is_dir() else read_records(path,
                                                                            record_problem)
    return out


def unique_runs(records: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The records with each run once, and the repeats left out, both in reading order.

    A record repeats one read before it when both carry the same ``run_id`` (and, for a probe,
    the same layer): one store given twice, or two ``grid`` processes that finished the same
    run. A run folder's record (it has a ``source``) also repeats a record of the same seed
    that holds the same metrics: the grid stored the run and the folder holds its
    ``metrics.json``, while the folder's configuration is the resolved one (labels and task
    filled in, learning rates resolved), so its id differs from the grid's.
    """
    ids: set[tuple[Any, Any]] = set()
    results: dict[tuple[Any, str], set[bool]] = {}
    kept, repeats = [], []
    for rec in records:
        metrics = rec.get("metrics") if isinstance(rec.get("metrics"), dict) else {}
        key = (rec["run_id"], metrics.get("layer")) if rec.get("run_id") else None
        seed = ((rec.get("config") or {}).get("train") or {}).get("seed")
        same = (seed, json.dumps(metrics, sort_keys=True))
        folder = "source" in rec
        if key in ids or (same in results and (folder or True in results[same])):
            repeats.append(rec)
            continue
        kept.append(rec)
        if key is not None:
            ids.add(key)
        results.setdefault(same, set()).add(folder)
    return kept, repeats


def environment() -> dict[str, Any]:
    """Package versions, the project's git commit and the machine, for a record."""
    import platform
    import subprocess
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for pkg in ("seqrep", "torch", "transformers", "peft", "seqeval"):
        try:
            versions[pkg] = version(pkg)
        except PackageNotFoundError:
            versions[pkg] = None
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).parent, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {"versions": versions, "git_commit": commit, "cpus": os.cpu_count(),
            "machine": platform.machine(), "python": platform.python_version()}
