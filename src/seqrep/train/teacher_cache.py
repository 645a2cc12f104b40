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
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any

import torch

from seqrep.config import LabelerConfig, TrainConfig
from seqrep.contexts import context_of

CHUNK = 512  # sentences per cache file (a longer document makes a longer one)
CACHE = "teacher-labels"


def _digest(sentences: Sequence[tuple[str, ...]], docs: Sequence[Any] | None,
            teacher: str = "") -> str:
    body: Any = list(sentences) if docs is None else [list(sentences), list(docs)]
    body = [teacher, body] if teacher else body
    return hashlib.sha256(json.dumps(body, ensure_ascii=False).encode()).hexdigest()


def teacher_key(run: Path) -> str:
    """The identity of a teacher's model (``run/best``): the SHA-256 of its ``config.json``
    and the name, size and modification time of each of its files, so a cache shared by the
    students of one teacher is never read for another (or a retrained one)."""
    best = Path(run) / "best"
    h = hashlib.sha256((best / "config.json").read_bytes())
    for f in sorted(best.rglob("*")):
        if f.is_file():
            st = f.stat()
            h.update(f"{f.relative_to(best)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


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
                quiet: bool = False, docs: Sequence[Hashable | None] | None = None,
                teacher_id: str = "") -> tuple[list[torch.Tensor], dict[str, Any]]:
    """The teacher's log-probabilities for every sentence (one ``(words, labels)`` tensor
    each), from ``folder``'s chunks where they hold them and from the teacher
    (``load_teacher()``, called only when a chunk is missing) otherwise; each new chunk is
    written atomically before the next is labeled. ``docs``: each sentence's document id,
    for a teacher with document context (see the module docstring). ``teacher_id``: the
    teacher's identity (:func:`teacher_key`), part of each chunk's digest, so a folder shared
    by several students of one teacher holds only that teacher's labels (one distillation at
    a time per folder).

    Returns:
        The tensors, and the labeling's figures: ``teacher_sentences`` (all of them),
        ``teacher_seconds`` (the teacher's time on them, summed over the chunks whichever
        session labeled them; model loading not included), ``teacher_sentences_per_second``
        (None when a chunk has no time recorded) and ``teacher_labeled_sentences`` (labeled
        by this call).
    """
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob(".*.tmp"):
        stale.unlink(missing_ok=True)
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
            kw = {} if part_docs is None else {"docs": part_docs}
            logp = [torch.log_softmax(x.float(), -1) for x in
                    teacher.word_logits([list(s) for s in part], batch_size, **kw)]
            took = time.perf_counter() - start
            labeled += len(part)
            tmp = folder / f".{path.name}.tmp"
            save_file({"logp": torch.cat(logp).contiguous(),
                       "lengths": torch.tensor([len(s) for s in part], dtype=torch.long)},
                      str(tmp), metadata={"sha256": digest, "seconds": repr(took)})
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
                 quiet: bool) -> tuple[list[torch.Tensor], dict[str, Any]]:
    """The teacher's log-probabilities for each of ``words`` (the training split's sentences,
    then the unlabeled ones), read from or added to its label cache, and its labeling speed."""
    if context_of(tcfg.context).documents:  # every sentence in its document: no two alike
        sentences, docs = words, [s.doc_id for s in data.train] + [d for _, d in extra]
    else:  # a sentence's labels are its own: each distinct sentence once
        sentences, docs = list(dict.fromkeys(words)), None

    def load_teacher() -> Any:
        from seqrep.model.labeler import SequenceLabeler

        return SequenceLabeler.from_pretrained(teacher, device=train_config.device,
                                               precision=train_config.precision)

    from seqrep.train.teacher_cache import teacher_key

    logp, speed = label_cache(load_teacher, sentences, cache, len(tcfg.labels),
                              train_config.eval_batch_size, chunk, quiet, docs,
                              teacher_key(teacher))
    if docs is None:
        by_words = dict(zip(sentences, logp))
        logp = [by_words[w] for w in words]
    return logp, speed
