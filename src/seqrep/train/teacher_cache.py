"""The teacher's labels of a distillation (:mod:`seqrep.train.distill`), cached in chunks.

``teacher-labels/NNNNN.safetensors`` holds, per chunk of sentences, ``logp`` (words x labels,
the teacher's log-probabilities at temperature 1) and ``lengths``; its metadata records the
SHA-256 of the chunk's sentences (and their document ids, for a teacher with document
context) and of the teacher's identity (:func:`teacher_key`), and the seconds the teacher took
to label it. A chunk is reused only when its digest matches, so a resumed distillation labels
only what is missing, students of one teacher can share a folder, and the labeling speed is a
measured figure even when earlier sessions labeled part of it.

With document ids (a teacher with ``context="document"``) a chunk holds whole documents
(:func:`seqrep.encode.document.documents`), so the teacher reads every document as a whole,
exactly as ``word_logits(sentences, docs=...)`` reads it on the whole text.

A cache is a folder of its own, marked by ``seqrep-labels.json``: labels are written only into
a new or empty folder or one so marked (or, from before the mark, holding label chunks and
nothing else), and the only files ever removed are the cache's own temporary chunks, so
``--teacher-labels`` aimed at a user's folder is one line, not lost files. Chunks take the
umask's mode, as every file of a run does, so a cache shared by students can be read by the
accounts the umask lets read.

The teacher's identity (:func:`teacher_key`) is its model's content, hashed; a chunk's digest
adds the device type and precision the teacher labeled at, as resolved (``auto`` on a CPU
with native bf16 is bf16), so a student never trains on labels made at another precision
without knowing it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any

import torch

from seqrep.config import LabelerConfig, TrainConfig
from seqrep.core.contexts import context_of
from seqrep.errors import ConfigError
from seqrep.files.atomic import read_json, umask, write_json

CHUNK = 512  # sentences per cache file (a longer document makes a longer one)
CACHE = "teacher-labels"
MARKER = "seqrep-labels.json"  # what makes a folder a label cache seqrep made
MARK = {"kind": "seqrep teacher labels", "version": 1}
CHUNK_FILE = re.compile(r"\d{5,}\.safetensors")
TEMP_FILE = re.compile(r"\.\d{5,}\.safetensors\.tmp")  # a chunk being written
READ_BLOCK = 1 << 20  # bytes hashed at a time: a model of any size in bounded memory


def _digest(sentences: Sequence[tuple[str, ...]], docs: Sequence[Any] | None,
            teacher: str = "") -> str:
    body: Any = list(sentences) if docs is None else [list(sentences), list(docs)]
    body = [teacher, body] if teacher else body
    return hashlib.sha256(json.dumps(body, ensure_ascii=False).encode()).hexdigest()


_FILE_HASHES: dict[tuple[Any, ...], str] = {}


def _file_sha256(path: Path) -> str:
    """A file's SHA-256, read in blocks; remembered for this process while the file's
    identity, size and times are unchanged (a stat is the cheap check), so a distillation
    that needs the key twice reads a model once."""
    st = path.stat()
    seen = (str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if seen not in _FILE_HASHES:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            while block := f.read(READ_BLOCK):
                h.update(block)
        _FILE_HASHES[seen] = h.hexdigest()
    return _FILE_HASHES[seen]


def teacher_key(run: Path) -> str:
    """The identity of a teacher's model (``run/best``, or a labeler folder such as a Hub
    teacher's snapshot): the SHA-256 over each of its files' name and content (never their
    times: a copy made by ``cp -r`` or scp is the same teacher), so a cache shared by the
    students of one teacher is never read for another (or a retrained one), and a report
    never pools the students of two models. Only regular files count (a link to a device is
    not read)."""
    best = Path(run) / "best"
    best = best if best.is_dir() else Path(run)
    h = hashlib.sha256(b"seqrep teacher files\n")
    for f in sorted(best.rglob("*")):
        if f.is_file():
            h.update(f"{f.relative_to(best).as_posix()}\0{_file_sha256(f)}\n".encode())
    return h.hexdigest()


def labeling_placement(train_config: TrainConfig) -> str:
    """The device type and precision the teacher labels at, resolved as its loading resolves
    them (``cpu fp32``, ``cpu bf16``, ``cuda bf16``): part of a chunk's digest."""
    import warnings

    from seqrep.model.device import Placement

    with warnings.catch_warnings():  # an emulated bf16 is said once, when the teacher loads
        warnings.simplefilter("ignore")
        where = Placement.resolve(train_config.device, train_config.precision)
    return f"{where.device.type} {where.precision}"


def _is_legacy_cache(entries: list[Path]) -> bool:
    """A cache made before the mark: label chunks (and their temporary files) only, each
    chunk a safetensors file holding exactly ``logp`` and ``lengths`` with a digest."""
    from safetensors import safe_open

    for entry in entries:
        if TEMP_FILE.fullmatch(entry.name) and entry.is_file():
            continue
        if not (CHUNK_FILE.fullmatch(entry.name) and entry.is_file()):
            return False
        try:
            with safe_open(str(entry), framework="pt") as f:
                if set(f.keys()) != {"logp", "lengths"} or "sha256" not in (f.metadata() or {}):
                    return False
        except Exception:  # noqa: BLE001 - not a safetensors file: not a chunk
            return False
    return True


def check_cache_folder(folder: Path, what: str = "label cache") -> None:
    """``folder`` may receive labels: missing, empty, marked as a seqrep label cache, or a
    cache from before the mark; else one line naming ``what`` (the option or field that
    gave it). Nothing is written."""
    if not (folder.exists() or folder.is_symlink()):
        return
    if not folder.is_dir():
        raise ConfigError(f"{what} {folder}: not a folder; expected a seqrep label cache or a "
                          f"new or empty folder")
    from seqrep.files.owner import MANIFEST

    entries = [e for e in folder.iterdir() if e.name != MANIFEST]  # listed what seqrep wrote
    if not entries:
        return
    try:
        if read_json(folder / MARKER, "a seqrep label cache mark", ConfigError, 1 << 12) == MARK:
            return
    except ConfigError:
        pass
    if not _is_legacy_cache(entries):
        raise ConfigError(f"{what} {folder}: a folder seqrep did not make as a label cache "
                          f"(no valid {MARKER}); expected a seqrep label cache or a new or "
                          f"empty folder, so that nothing in it is overwritten or deleted")


def open_cache(folder: Path) -> None:
    """Make ``folder`` a label cache (checked by :func:`check_cache_folder`), marked, and
    clear what a killed chunk write left (the cache's own temporary names only)."""
    from seqrep.files import owner

    check_cache_folder(folder)
    owner.claim(folder, "label-cache")
    if not (folder / MARKER).is_file():
        write_json(folder / MARKER, MARK)
    for stale in folder.iterdir():
        if TEMP_FILE.fullmatch(stale.name) and stale.is_file():
            stale.unlink(missing_ok=True)


def _cached(path: Path, digest: str, lengths: list[int], n_labels: int
            ) -> tuple[list[torch.Tensor], float | None] | None:
    """A cache chunk's per-sentence tensors and labeling seconds (None where not recorded),
    or None when it is missing, unreadable or made from other sentences or labels."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
            if meta.get("sha256") != digest:
                return None
            logp, lens = f.get_tensor("logp"), f.get_tensor("lengths")
        seconds = float(meta["seconds"]) if "seconds" in meta else None
    except Exception:  # noqa: BLE001 - missing or truncated: label the chunk again
        return None
    if lens.tolist() != lengths or tuple(logp.shape) != (sum(lengths), n_labels):
        return None
    return list(torch.split(logp.float(), lengths)), seconds


def label_cache(load_teacher: Callable[[], Any], sentences: list[tuple[str, ...]],
                folder: Path, n_labels: int, batch_size: int = 64, chunk: int = CHUNK,
                quiet: bool = False, *, docs: Sequence[Hashable | None] | None,
                teacher_id: str = "") -> tuple[list[torch.Tensor], dict[str, Any]]:
    """The teacher's log-probabilities for every sentence (one ``(words, labels)`` tensor
    each), from ``folder``'s chunks where they hold them and from the teacher
    (``load_teacher()``, called only when a chunk is missing) otherwise; each new chunk is
    written atomically before the next is labeled. ``folder`` must be a label cache or new
    (:func:`open_cache`). ``docs``: each sentence's document id, for a teacher with
    document context (see the module docstring), or None for each sentence alone
    (required). ``teacher_id``: the teacher's identity (:func:`teacher_key` and
    :func:`labeling_placement`), part of each chunk's digest, so a folder shared by several
    students of one teacher holds only that teacher's labels at one precision (one
    distillation at a time per folder).

    Returns:
        The tensors, and the labeling's figures: ``teacher_sentences`` (all of them),
        ``teacher_seconds`` (the teacher's time on them, summed over the chunks whichever
        session labeled them; model loading not included), ``teacher_sentences_per_second``
        (None when a chunk has no time recorded) and ``teacher_labeled_sentences`` (labeled
        by this call).
    """
    from safetensors.torch import save_file

    open_cache(folder)
    teacher, out, labeled, seconds = None, [], 0, 0.0
    from seqrep.encode.document import chunk_spans

    spans = chunk_spans(len(sentences), chunk, docs)
    for k, (a, b) in enumerate(spans):
        part, part_docs = sentences[a:b], None if docs is None else list(docs[a:b])
        path, digest = folder / f"{k:05d}.safetensors", _digest(part, part_docs, teacher_id)
        got = _cached(path, digest, [len(s) for s in part], n_labels)
        if got is None:
            teacher = teacher or load_teacher()
            start = time.perf_counter()
            logp = [torch.log_softmax(x.float(), -1) for x in
                    teacher.word_logits([list(s) for s in part], batch_size, docs=part_docs)]
            took = time.perf_counter() - start
            labeled += len(part)
            from seqrep.files import owner

            tmp = owner.temporary(path)  # a fresh name: never a link or a user's file
            save_file({"logp": torch.cat(logp).contiguous(),
                       "lengths": torch.tensor([len(s) for s in part], dtype=torch.long)},
                      str(tmp), metadata={"sha256": digest, "seconds": repr(took)})
            os.chmod(tmp, 0o666 & ~umask())  # safetensors writes 0600: share it as a run
            os.replace(tmp, path)
            got = (logp, took)
            if not quiet:
                print(f"teacher labeled {b}/{len(sentences)} sentences "
                      f"({len(part) / max(took, 1e-9):.1f} sentences/s)",
                      file=sys.stderr, flush=True)
        out += got[0]
        seconds = None if seconds is None or got[1] is None else seconds + got[1]
    speed = {"teacher_sentences": len(sentences),
             "teacher_seconds": None if seconds is None else round(seconds, 3),
             "teacher_sentences_per_second": round(len(sentences) / seconds, 2)
             if seconds else None,
             "teacher_labeled_sentences": labeled}
    return out, speed


def teacher_logp(teacher: Path, tcfg: LabelerConfig, train_config: TrainConfig,
                 words: list[tuple[str, ...]], data: Any,
                 extra: list[tuple[tuple[str, ...], str]], cache: Path, chunk: int,
                 quiet: bool, key: str | None = None
                 ) -> tuple[list[torch.Tensor], dict[str, Any]]:
    """The teacher's log-probabilities for each of ``words`` (the training split's sentences,
    then the unlabeled ones), read from or added to its label cache, and its labeling speed.
    ``key``: the teacher's :func:`teacher_key`, when the caller has it already."""
    if context_of(tcfg.context).documents:  # every sentence in its document: no two alike
        sentences, docs = words, [s.doc_id for s in data.train] + [d for _, d in extra]
    else:  # a sentence's labels are its own: each distinct sentence once
        sentences, docs = list(dict.fromkeys(words)), None

    def load_teacher() -> Any:
        from seqrep.model.labeler import SequenceLabeler

        return SequenceLabeler.from_pretrained(teacher, device=train_config.device,
                                               precision=train_config.precision)

    identity = f"{key or teacher_key(teacher)} {labeling_placement(train_config)}"
    logp, speed = label_cache(load_teacher, sentences, cache, len(tcfg.labels),
                              train_config.eval_batch_size, chunk, quiet, docs=docs,
                              teacher_id=identity)
    if docs is None:
        by_words = dict(zip(sentences, logp))
        logp = [by_words[w] for w in words]
    return logp, speed
