"""Label a corpus with Ray Data: one labeler per actor, batches of texts in, records out.

From Python, :class:`SeqrepLabeler` is the callable class for ``Dataset.map_batches``: each
actor loads the labeler once (a run folder, a saved labeler, an export folder or a Hub id), on
its own device and precision, and turns a batch into the records ``seqrep predict`` writes::

    import ray
    from seqrep.integrations.ray import SeqrepLabeler

    ds = ray.data.read_parquet("s3://bucket/texts/")            # a "text" column
    out = ds.map_batches(SeqrepLabeler, fn_constructor_kwargs={"run": "runs/ner"},
                         batch_size=256, compute=ray.data.ActorPoolStrategy(size=4))

A batch holds either one text per row (a ``text`` column of strings, or a ``words`` column
of word lists, and an optional ``doc_id`` column) or one *chunk* per row (a ``chunk`` column,
:func:`chunk_rows`). Ray Data cuts batches by row count, so a document's rows can land in two
batches; to keep documents whole, make one row per chunk of whole documents with
:func:`chunk_rows`: a chunk is consecutive input records that never ends inside a run of one
``doc_id``, so every document reaches one actor in one call, as in ``seqrep predict``.

``seqrep predict RUN --engine ray --input IN --output OUT [--actors N] [--address ADDR]``
runs :func:`label_chunks` under :func:`seqrep.predict.stream.predict_file`: the same checks,
``OUT.partial`` resumption, chunks and records as the local engine, with the labeling done by
N Ray actors (:class:`SeqrepChunkActor`) to which the chunks are handed as they are read, a
few per actor at a time, so the driver's memory stays bounded whatever the input's length.
Without ``--address`` (or ``RAY_ADDRESS``) ``ray.init`` starts a Ray runtime on this machine;
with one it joins that cluster.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from seqrep.config import InferenceConfig
from seqrep.errors import ConfigError, SeqrepError


class RayError(SeqrepError):
    """Ray could not start, join a cluster, or finish the labeling (an actor died)."""


def chunk_rows(chunks: Iterable[Sequence[tuple[Any, ...]]]) -> list[dict[str, str]]:
    """One Ray row per chunk of :func:`seqrep.predict.inputs.read_records` items ``(line, text,
    pretokenized, doc_id)``, such as :func:`seqrep.predict.inputs.chunks` makes (never ending inside
    a document): ``{"chunk": JSON}``. JSON keeps each row one string column, so every block
    has one schema whatever the texts hold."""
    return [{"chunk": json.dumps([list(item) for item in chunk], ensure_ascii=False)}
            for chunk in chunks]


def _column(batch: Any, name: str) -> list[Any] | None:
    """A batch column as a list of Python values (numpy or pandas batches), or None."""
    if name not in batch:
        return None
    values = batch[name]
    values = values.tolist() if hasattr(values, "tolist") else list(values)
    return [v.tolist() if hasattr(v, "tolist") else v for v in values]


class SeqrepLabeler:
    """The callable class for ``Dataset.map_batches``: loads the labeler once per actor.

    Args:
        run: a run folder, saved labeler, ``seqrep export`` folder, or Hub id
            (``org/name[@rev]``), as ``seqrep predict`` takes it.
        settings: how it loads and runs (runtime, device, precision, batch size, threads,
            decoding); default: ``InferenceConfig()`` with ``threads`` set to this actor's
            CPUs where Ray gives it some.
        text_column, words_column, doc_column: the columns of one-text-per-row batches.
    """

    def __init__(self, run: str | Path, settings: InferenceConfig | None = None, *,
                 text_column: str = "text", words_column: str = "words",
                 doc_column: str = "doc_id") -> None:
        from seqrep.export import load

        settings = settings or InferenceConfig()
        threads = settings.threads or _actor_cpus()
        if threads:
            import torch

            torch.set_num_threads(threads)
        self.settings = settings
        self.columns = (text_column, words_column, doc_column)
        self.labeler = load(run, settings)

    def label(self, items: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
        """Records of ``(line, text, pretokenized, doc_id)`` items, in their order."""
        from seqrep.predict.stream import label_items

        s = self.settings
        return label_items(self.labeler, [tuple(it[1:]) for it in items], s.decoding,
                           s.batch_size)

    def __call__(self, batch: Any) -> dict[str, Any]:
        """``chunk`` rows -> ``records`` (a JSON list of a chunk's records); text rows ->
        the batch's columns with ``record`` (the JSON line ``seqrep predict`` writes) and
        ``spans`` (its spans, as JSON)."""
        chunks = _column(batch, "chunk")
        if chunks is not None:
            items = [json.loads(c) for c in chunks]
            return {"records": [json.dumps(self.label(it), ensure_ascii=False)
                                for it in items]}
        text_column, words_column, doc_column = self.columns
        texts, words = _column(batch, text_column), _column(batch, words_column)
        if texts is None and words is None:
            raise ConfigError(f"a batch has no {text_column!r} or {words_column!r} column "
                              f"(columns: {', '.join(map(str, batch))[:200]})")
        docs = _column(batch, doc_column) or [None] * len(texts or words)
        items = [(n, *_text(n, texts, words), docs[n] if isinstance(docs[n], str) else None)
                 for n in range(len(texts or words))]
        records = self.label(items)
        out = {k: batch[k] for k in batch}
        out["record"] = [json.dumps(r, ensure_ascii=False) for r in records]
        out["spans"] = [json.dumps(r["spans"], ensure_ascii=False) for r in records]
        return out


def _text(n: int, texts: list[Any] | None, words: list[Any] | None) -> tuple[str, bool]:
    """Row ``n``'s ``(text, pretokenized)``: its text, else its words joined by spaces."""
    if texts is not None and isinstance(texts[n], str):
        return texts[n], False
    row = words[n] if words is not None else None
    if isinstance(row, list) and all(isinstance(w, str) and w and not any(
            c.isspace() for c in w) for w in row):
        return " ".join(row), True
    raise ConfigError(f"batch row {n}: expected a text (a string) or words (a list of words "
                      "without spaces)")


def _actor_cpus() -> int | None:
    """The CPUs Ray assigned to this actor (None outside Ray or without a CPU count)."""
    try:
        import ray

        cpus = ray.get_runtime_context().get_assigned_resources().get("CPU")
    except Exception:  # noqa: BLE001 - not in a Ray worker
        return None
    return max(1, int(cpus)) if cpus else None


class SeqrepChunkActor:
    """The actor of ``seqrep predict --engine ray``: labels whole chunks of
    :func:`seqrep.predict.inputs.read_records` items. It loads its :class:`SeqrepLabeler` on first
    use, so a labeler that cannot load comes back from a method call as that error (a
    creation error would reach the driver as text only), and an actor Ray restarts after a
    crash loads it again for the task Ray retries."""

    def __init__(self, run: str, settings: InferenceConfig) -> None:
        self.run, self.settings = run, settings
        self.labeler: SeqrepLabeler | None = None

    def _loaded(self) -> SeqrepLabeler:
        if self.labeler is None:
            self.labeler = SeqrepLabeler(self.run, self.settings)
        return self.labeler

    def documents(self) -> bool:
        """Whether the labeler reads documents (its chunks must keep them whole)."""
        from seqrep.core.contexts import labeler_context

        return labeler_context(self._loaded().labeler).documents

    def label(self, items: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
        """Records of ``(line, text, pretokenized, doc_id)`` items, in their order."""
        return self._loaded().label(items)


def start(address: str | None = None, num_cpus: int | None = None) -> None:
    """Start Ray on this machine, or join the cluster at ``address`` (or ``RAY_ADDRESS``);
    with Ray already initialised, only the address is checked. An address where no Ray
    cluster's head answers is one line, within seconds.

    Raises:
        RayError: naming the address.
    """
    import ray

    address = address or os.environ.get("RAY_ADDRESS") or None
    if address and address != "auto" and "://" not in address:
        _reachable(address)  # ray.init retries an address without Ray for many minutes
    if ray.is_initialized():
        return
    logging.getLogger("ray").setLevel(logging.WARNING)
    kw: dict[str, Any] = dict(include_dashboard=False, log_to_driver=False,
                              logging_level=logging.WARNING)
    try:
        if address:
            ray.init(address=address, **kw)
        else:
            ray.init(num_cpus=num_cpus, **kw)
    except (ConnectionError, TimeoutError, ValueError, RuntimeError) as err:
        where = f"the Ray cluster at {address}" if address else "a local Ray runtime"
        from seqrep.errors import first_line

        raise RayError(f"could not start or join {where}: {first_line(err)[:200]}") from None


# HTTP/2's client connection preface and an empty SETTINGS frame: a gRPC server (a Ray
# cluster's GCS, unless RAY_USE_TLS) answers with its own SETTINGS frame (type 4, stream 0)
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def _reachable(address: str, timeout: float = 5.0) -> None:
    """Refuse within ``timeout`` seconds (twice that at most) a ``host:port`` cluster address
    where nothing listens, or where what listens does not speak gRPC as a Ray cluster's head
    (GCS) does: a silent server, a web server, a server that hangs up.

    Raises:
        RayError: naming the address.
    """
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise RayError(f"--address {address!r}; expected HOST:PORT of a Ray cluster's head")
    try:
        conn = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
    except OSError as err:
        raise RayError(f"could not join the Ray cluster at {address}: nothing answers there "
                       f"({err.strerror or type(err).__name__})") from None
    if os.environ.get("RAY_USE_TLS", "0").lower() not in ("0", "", "false"):
        conn.close()  # TLS first: a preface in the clear would be refused by a real head
        return
    head, end, closed = b"", time.monotonic() + timeout, False
    try:
        with conn:
            conn.sendall(_H2_PREFACE)
            while len(head) < 9 and (left := end - time.monotonic()) > 0:
                conn.settimeout(left)
                if not (got := conn.recv(9 - len(head))):
                    closed = True
                    break
                head += got
    except TimeoutError:
        pass
    except OSError:  # reset
        closed = True
    if len(head) < 9 or head[3] != 4:
        what = (f"it answered {head!r}" if head else "it hung up" if closed
                else f"no answer in {timeout:g} s")
        raise RayError(f"could not join the Ray cluster at {address}: what listens there is "
                       f"no Ray cluster's head (a gRPC server): {what}")


IN_FLIGHT = 2  # chunks handed to each actor ahead of the records awaited


def label_chunks(run: str | Path, settings: InferenceConfig, actors: int = 1,
                 cpus_per_actor: float = 1, gpus_per_actor: float = 0,
                 chunk: int | None = None
                 ) -> Callable[[Iterator[list[tuple[Any, ...]]]],
                               Iterator[list[dict[str, Any]]]]:
    """An engine for :func:`seqrep.predict.stream.predict_file`: a function from an iterator of
    chunks to their records, chunk by chunk in input order, labeled by ``actors``
    :class:`SeqrepChunkActor` actors (Ray started or joined first with :func:`start`).

    The chunks are read as the actors take them: at most ``IN_FLIGHT`` per actor are
    submitted ahead of the records awaited, so the driver holds a fixed number of chunks. A
    labeler that reads sentences alone gets the local engine's chunks, ``chunk`` texts each
    (default :data:`seqrep.predict.stream.CHUNK`), not the document-whole chunks ``predict_file``
    gives an engine: a batch's other texts move scores (bf16 most), so the same chunks are
    what make the records the same.

    Raises:
        RayError: an actor failed (its error's first line: a seqrep error's own message),
            died and could not be restarted, or Ray stopped.
    """
    import ray

    from seqrep.predict.inputs import chunks
    from seqrep.predict.stream import CHUNK

    def label(pieces: Iterator[list[tuple[Any, ...]]]) -> Iterator[list[dict[str, Any]]]:
        first = next(pieces, None)
        if first is None:
            return
        pieces = _chained(first, pieces)
        actor = ray.remote(SeqrepChunkActor).options(
            num_cpus=cpus_per_actor, num_gpus=gpus_per_actor, max_restarts=2,
            max_task_retries=2)  # a crashed actor restarts; its chunks are labeled again
        pool = [actor.remote(str(run), settings) for _ in range(actors)]
        try:
            if not _get(pool[0].documents.remote()):
                pieces = chunks((it for piece in pieces for it in piece), chunk or CHUNK)
            pending: deque[Any] = deque()
            for n, items in enumerate(pieces):
                pending.append(pool[n % actors].label.remote(items))
                if len(pending) >= IN_FLIGHT * actors:
                    yield _get(pending.popleft())
            while pending:
                yield _get(pending.popleft())
        finally:
            for a in pool:
                try:
                    ray.kill(a)
                except Exception:  # noqa: BLE001 - Ray already stopped: nothing to free
                    pass

    return label


def _chained(first: list[tuple[Any, ...]], rest: Iterator[list[tuple[Any, ...]]]
             ) -> Iterator[list[tuple[Any, ...]]]:
    yield first
    yield from rest


def _get(ref: Any) -> Any:
    """``ray.get(ref)``; a failure as one :class:`RayError` line."""
    import ray

    try:
        return ray.get(ref)
    except ray.exceptions.RayError as err:
        raise RayError(f"the Ray labeling stopped: {_cause(err)}") from None


def _cause(err: BaseException) -> str:
    """The first line of what went wrong inside Ray: the error an actor raised (Ray's
    ``RayTaskError.cause``, else the exception's own ``__cause__``), a seqrep error as its
    own message, any other with its type's name."""
    from seqrep.errors import first_line

    seen = {id(err)}
    while True:
        cause = getattr(err, "cause", None)
        if not isinstance(cause, BaseException):
            cause = err.__cause__
        if cause is None or id(cause) in seen:
            break
        seen.add(id(cause))
        err = cause
    text = first_line(err)
    return (text if isinstance(err, SeqrepError) else f"{type(err).__name__}: {text}")[:300]


def predict_with_ray(run: str | Path, source: Path, output: Path, settings: InferenceConfig,
                     *, actors: int = 1, address: str | None = None, words: bool = False,
                     overwrite: bool = False, plan: Any = None,
                     log: Any = None, progress: Any = None) -> int:
    """``seqrep predict --engine ray``: :func:`seqrep.predict.stream.predict_file` with its labeling
    done by ``actors`` Ray actors; returns the number of records in ``output``."""
    from seqrep.predict.stream import predict_file, prepare, run_identity

    if plan is None:
        plan = prepare(source, output, run_identity(
            Path(run), runtime=settings.runtime, precision=settings.precision,
            decoding=settings.decoding, words=words, **settings.layout), overwrite)
    if actors < 1:
        raise ConfigError(f"--actors {actors}; expected 1 or more")
    start(address)
    gpus = 1 if settings.device.startswith("cuda") else 0
    return predict_file(None, source, output, settings.decoding, settings.batch_size,
                        progress=progress, words=words, plan=plan, overwrite=overwrite,
                        log=log, label=label_chunks(run, settings, actors,
                                                    gpus_per_actor=gpus))
