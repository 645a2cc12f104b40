"""Large-corpus prediction: read texts lazily, label them in chunks, append the records.

Memory stays constant (one chunk per process at a time). Output goes to ``OUT.partial`` and is
renamed to ``OUT`` when complete, so ``OUT`` is always whole; an interrupted run resumes from the
last complete line of ``OUT.partial``. Under ``torchrun`` / ``accelerate launch`` each process
labels every N-th chunk and the main process writes them in input order.

Input is one text per ``\\n`` line; a ``.jsonl`` file holds one JSON object per line with
``"text"`` (raw text) or ``"words"`` (a list of words).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seqrep.errors import DataError

if TYPE_CHECKING:
    from seqrep.model.labeler import SequenceLabeler

CHUNK = 256  # texts per chunk and process


def read_lines(path: Path, skip: int = 0) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each ``\\n`` line after the first ``skip``, decoded as UTF-8."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as err:
        raise DataError(path, f"cannot read ({err.strerror})") from None
    with f:
        for n, raw in enumerate(f, 1):
            if n <= skip:
                continue
            raw = raw[:-1] if raw.endswith(b"\n") else raw
            raw = raw[:-1] if raw.endswith(b"\r") else raw
            try:
                yield n, raw.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError as err:
                raise DataError(path, f"not valid UTF-8 (byte {err.start})", n) from None


def count_lines(path: Path) -> int:
    """Lines in a file (a last line without ``\\n`` counts)."""
    n, last = 0, b"\n"
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            n += block.count(b"\n")
            last = block[-1:]
    return n + (last != b"\n")


def _item(path: Path, n: int, line: str, jsonl: bool) -> tuple[str, bool]:
    """``(text, pretokenized)`` of one input line."""
    if not jsonl:
        return line, False
    from seqrep.data.sources import parse_json

    record = parse_json(line, path, n) if line.strip() else {"text": ""}
    if isinstance(record, dict) and isinstance(record.get("text"), str):
        return record["text"], False
    words = record.get("words") if isinstance(record, dict) else None
    if isinstance(words, list) and all(isinstance(w, str) and w and not any(
            c.isspace() for c in w) for w in words):
        return " ".join(words), True
    raise DataError(path, 'expected an object with "text" (a string) or "words" (a list of '
                          'words without spaces)', n)


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


def predict_file(labeler: SequenceLabeler, source: Path, output: Path,
                 decoding: str | None = None, batch_size: int = 32, chunk: int = CHUNK,
                 progress: Callable[[int, int], None] | None = None,
                 accelerator: Any = None) -> int:
    """Label every line of ``source`` into ``output`` (JSON lines, one per input line).

    Returns:
        The number of records in ``output``.
    """
    from seqrep.predict import predict_text

    world = getattr(accelerator, "num_processes", 1)
    rank = getattr(accelerator, "process_index", 0)
    main = rank == 0
    output = Path(output)
    partial = output.with_name(output.name + ".partial")
    done = complete_lines(partial) if main else 0
    if world > 1:
        from accelerate.utils import broadcast_object_list

        done = broadcast_object_list([done])[0]
    total = count_lines(source)
    jsonl = source.suffix == ".jsonl"
    lines = read_lines(source, skip=done)
    out = open(partial, "ab") if main else None  # noqa: SIM115 - closed below
    try:
        while True:
            rounds = [[next(lines, None) for _ in range(chunk)] for _ in range(world)]
            rounds = [[x for x in r if x is not None] for r in rounds]
            if not any(rounds):
                break
            mine = [_item(source, n, line, jsonl) for n, line in rounds[rank]]
            records = []
            for pre in (False, True):  # raw texts and word lists, each in one call
                idx = [i for i, (_, p) in enumerate(mine) if p == pre]
                got = predict_text(labeler, [mine[i][0] for i in idx], decoding, batch_size,
                                   pretokenized=pre)
                records += list(zip(idx, got))
            records = [r for _, r in sorted(records, key=lambda x: x[0])]
            if world > 1:
                from accelerate.utils import gather_object

                parts = dict(gather_object([(rank, records)]))
                records = [r for k in range(world) for r in parts[k]]
            if out is not None:
                out.write(b"".join(json.dumps(r, ensure_ascii=False).encode("utf-8") + b"\n"
                                   for r in records))
                out.flush()
                os.fsync(out.fileno())
            done += len(records)
            if progress:
                progress(done, total)
    finally:
        if out is not None:
            out.close()
    if main:
        os.replace(partial, output)
    return done


def stderr_progress() -> Callable[[int, int], None]:
    """A progress callback: texts done of the total, texts/s and ETA on stderr."""
    from tqdm.auto import tqdm

    bar = None

    def update(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, initial=0, unit="text", file=sys.stderr, dynamic_ncols=True,
                       mininterval=1.0)
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    return update
