"""Large-corpus prediction: read texts lazily, label them in chunks, append the records.

Memory stays constant (one chunk per process at a time). Output goes to ``OUT.partial`` and is
renamed to ``OUT`` when complete, so ``OUT`` is always whole; an interrupted run resumes from the
last complete line of ``OUT.partial``. ``OUT.partial.json`` records what the partial output is
made from (the input's path, size and SHA-256, and the labeler with its settings), and a partial
output is resumed only when all of them match. Under ``torchrun`` / ``accelerate launch`` each
process labels every N-th chunk and the main process writes them in input order.

An existing ``OUT`` is replaced only with ``overwrite`` (by a rename: a link there is replaced,
never written through); the input itself never is, nor is it ever ``OUT.partial`` or
``OUT.partial.json``, under any spelling or link (:func:`check_paths`). The bookkeeping files are
seqrep's own (:mod:`seqrep.files.owner`): ``OUT.partial`` is created exclusively, never through
a link, and its record names the very file (device and inode), so a file of the user's under one
of these names is refused, never overwritten or deleted, ``overwrite`` or not.

Input is read by :mod:`seqrep.predict.inputs` (one text per line, or JSONL records). With a
labeler of
document context, a chunk never ends inside a document (consecutive lines with one
``doc_id``: a chunk goes on until it is whole, so memory holds at least the longest
document), and a partial output that ends inside one resumes from the document's first
line, so every document is labeled whole, in one call.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seqrep.core.contexts import labeler_context
from seqrep.encode import BATCH_SENTENCES
from seqrep.errors import DataError
from seqrep.files.outputs import (
    PARTIAL_FORMAT,
    _meta,
    _own_bookkeeping,
    check_paths,
    complete_lines,
    keep_lines,
)
from seqrep.predict.inputs import chunks, document_start, read_records

if TYPE_CHECKING:
    from seqrep.model.labeler import SequenceLabeler

CHUNK = 256  # texts per chunk and process


def scan(path: Path) -> tuple[int, int, str]:
    """``(lines, bytes, SHA-256 hex)`` of a file, in one pass (a last line without ``\\n``
    counts)."""
    n, size, last, digest = 0, 0, b"\n", hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                n += block.count(b"\n")
                size += len(block)
                last = block[-1:]
                digest.update(block)
    except OSError as err:
        raise DataError(path, f"cannot read ({err.strerror})") from None
    return n + (last != b"\n"), size, digest.hexdigest()


def label_items(labeler: SequenceLabeler, items: Sequence[tuple[Any, ...]],
                decoding: str | None = None, batch_size: int = BATCH_SENTENCES
                ) -> list[dict[str, Any]]:
    """Prediction records of ``(text, pretokenized)`` or ``(text, pretokenized, doc_id)``
    items, in their order, in one call. With ``context="document"`` each text is a document,
    and so are consecutive items with the same ``doc_id`` together."""
    from seqrep.predict.tagger import predict_text

    return predict_text(labeler, [it[0] for it in items], decoding, batch_size,
                        pretokenized=[it[1] for it in items],
                        docs=[it[2] if len(it) > 2 else None for it in items])


@dataclass
class Plan:
    """What :func:`predict_file` will do: the input's line count and the record of what the
    output is made from."""

    total: int
    made_from: dict[str, Any]


def prepare(source: Path, output: Path, identity: dict[str, Any], overwrite: bool = False,
            main: bool = True) -> Plan:
    """Check the paths (:func:`check_paths`) and an existing ``OUT.partial``: it is resumed
    only when its record names this input (path, size, SHA-256) and ``identity``; otherwise
    it is an error, or with ``overwrite`` it is removed to start over. Only the ``main``
    process of a distributed launch looks at (and removes) the partial output.

    Raises:
        ConfigError: a path refused, or a partial output from another input or labeler.
    """
    source, output = Path(source), Path(output)
    check_paths(source, output, overwrite, bookkeeping=(
        *_meta(output), output.with_name(output.name + ".partial.parquet")))
    total, size, digest = scan(source)
    from seqrep.predict.inputs import count_records, is_parquet

    if is_parquet(source):  # its texts are rows, not lines (checked whole before a model loads)
        total = count_records(source)
    made_from = json.loads(json.dumps({"input": str(source.resolve()), "size": size,
                                       "sha256": digest, "labeler": identity}))
    made_from["output"] = str(output.resolve())
    if main:
        _own_bookkeeping(output, made_from, overwrite)
    return Plan(total, made_from)


def labeler_identity(labeler: Any, **settings: Any) -> dict[str, Any]:
    """What makes a labeler's output: its configuration and ``settings`` (decoding ...)."""
    config = getattr(labeler, "config", None)
    return {"config": config.to_dict() if hasattr(config, "to_dict") else repr(config),
            "runtime": getattr(labeler, "runtime", None), **settings}


def run_identity(run: Path, **settings: Any) -> dict[str, Any]:
    """A run folder's identity without loading it: its path and the size and modification
    time of its weight and config files (a training checkpoint apart), with ``settings``
    (runtime, precision, decoding). A labeler named on the Hugging Face Hub (``org/name``)
    is its snapshot (:func:`seqrep.model.hub.resolve`), and a snapshot names its repository
    and commit: a branch moved to another commit is another labeler."""
    from seqrep.model.hub import resolve, snapshot_of

    run = resolve(run)
    hub = snapshot_of(run) if run.is_dir() else None
    pinned = {} if hub is None else {"hub": {"repo": hub[0], "commit": hub[1]}}
    files = []
    if run.is_dir():
        for f in sorted(run.rglob("*")):
            rel = f.relative_to(run)
            if f.suffix in (".safetensors", ".onnx", ".json") and f.name not in (
                    "metrics.json", "run.json") and rel.parts[0] != "checkpoint" \
                    and f.is_file():
                st = f.stat()
                files.append([str(rel), st.st_size, st.st_mtime_ns])
    return {"run": str(run.resolve()), "files": files[:1000], **pinned, **settings}


def predict_file(labeler: SequenceLabeler, source: Path, output: Path,
                 decoding: str | None = None, batch_size: int = BATCH_SENTENCES,
                 chunk: int | None = None,
                 progress: Callable[[int, int], None] | None = None,
                 accelerator: Any = None, words: bool = False, plan: Plan | None = None,
                 overwrite: bool = False, log: Callable[[str], None] | None = None,
                 label: Callable[[Iterator[list[tuple[Any, ...]]]],
                                 Iterator[list[dict[str, Any]]]] | None = None) -> int:
    """Label every line of ``source`` into ``output`` (JSON lines, one per input line; a
    ``.parquet`` output is written from them when all are done).

    Args:
        chunk: texts per chunk and process (default :data:`CHUNK`).
        words: plain-text lines are pre-tokenized (whitespace-separated words).
        accelerator: under a distributed launch (``torchrun``), an ``accelerate``
            ``PartialState``: each process labels its share and process 0 writes. The
            caller leaves the process group when its work is done
            (:func:`seqrep.model.device.end_processes`); a gloo thread left alive can abort a
            process at exit.
        plan: from :func:`prepare` (the command checks before loading the model); default:
            prepared here, the labeler identified by its configuration and these settings.
        overwrite: replace an output that is no seqrep output, and start over from a partial
            output of another input or labeler.
        progress: ``(done, total)`` once before the first chunk (``done`` > 0 when
            resuming) and after each chunk.
        log: a line for the user (``resuming after N records``).
        label: another engine (:mod:`seqrep.integrations.ray`): the records of each chunk of
            :func:`seqrep.predict.inputs.read_records` items, chunk by chunk in their order; then
            ``labeler`` is not used, chunks and resumption keep every ``doc_id`` run whole
            whatever the labeler's context, and ``accelerator`` must be None.

    Returns:
        The number of records in ``output``.
    """
    chunk = chunk or CHUNK
    world = getattr(accelerator, "num_processes", 1)
    rank = getattr(accelerator, "process_index", 0)
    main = rank == 0
    output = Path(output)
    if plan is None:
        plan = prepare(source, output, labeler_identity(labeler, decoding=decoding,
                                                        words=words), overwrite, main)
    partial, meta = _meta(output)
    done = 0
    whole = label is not None or labeler_context(labeler).documents
    out = None
    if main:
        from seqrep.files import owner

        if partial.exists() or partial.is_symlink():  # checked as seqrep's by prepare
            done = complete_lines(partial)
            if whole and done:  # never resume inside a document
                done = keep_lines(partial, document_start(source, done, words))
            out = owner.open_own(partial, "a partial output")
        else:
            from seqrep.files.atomic import write_json

            out = owner.create_exclusive(partial, "a partial output")  # never a link
            write_json(meta, {**plan.made_from, "format": PARTIAL_FORMAT,
                              "partial": owner.identity(partial)})
    if world > 1:
        from accelerate.utils import broadcast_object_list

        done = broadcast_object_list([done])[0]
    total = plan.total
    if main and done and log:
        log(f"resuming after {done} records of {total} ({partial})")
    if progress:
        progress(done, total)
    pieces = chunks(read_records(source, words, skip=done), chunk, whole)
    label = label or _here(labeler, decoding, batch_size, world, rank)
    try:
        for records in label(pieces):
            done = _append(out, records, done, total, progress)
    finally:
        if out is not None:
            out.close()
    if main:
        if output.suffix == ".parquet":
            from seqrep.predict.records import jsonl_to_parquet

            jsonl_to_parquet(partial, output)  # written beside OUT, then renamed onto it
            partial.unlink()
        else:
            os.replace(partial, output)
        meta.unlink(missing_ok=True)
    return done


def _here(labeler: SequenceLabeler, decoding: str | None, batch_size: int, world: int,
          rank: int) -> Callable[[Iterator[list[tuple[Any, ...]]]],
                                 Iterator[list[dict[str, Any]]]]:
    """The local engine of :func:`predict_file`: this process labels every ``world``-th
    chunk and, under a distributed launch, gathers each round's records in input order."""

    def label(pieces: Iterator[list[tuple[Any, ...]]]) -> Iterator[list[dict[str, Any]]]:
        while True:
            rounds = [next(pieces, []) for _ in range(world)]
            if not any(rounds):
                return
            records = label_items(labeler, [x[1:] for x in rounds[rank]], decoding,
                                  batch_size)
            if world > 1:
                from accelerate.utils import gather_object

                parts = dict(gather_object([(rank, records)]))
                records = [r for k in range(world) for r in parts[k]]
            yield records

    return label


def _append(out: Any, records: list[dict[str, Any]], done: int, total: int,
            progress: Callable[[int, int], None] | None) -> int:
    """Append ``records`` as whole JSON lines, synced to disk (none when ``out`` is None: not
    the main process); the count of records done after them."""
    if out is not None:
        out.write(b"".join(json.dumps(r, ensure_ascii=False).encode("utf-8") + b"\n"
                           for r in records))
        out.flush()
        os.fsync(out.fileno())
    done += len(records)
    if progress:
        progress(done, total)
    return done


def stderr_progress() -> Callable[[int, int], None]:
    """A progress callback: texts done of the total, texts/s and ETA on stderr."""
    from tqdm.auto import tqdm

    bar = None

    def update(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:  # made before the first chunk: its rate counts the labeling time
            bar = tqdm(total=total, initial=done, unit="text", file=sys.stderr,
                       dynamic_ncols=True, mininterval=1.0)
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    return update
