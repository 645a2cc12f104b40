"""Dynamic batching: requests that arrive together run as one forward pass.

Requests are queued as jobs. One worker thread takes the oldest job, then keeps taking jobs
while the batch stays within ``max_batch_tokens`` padded tokens (the longest model row times
the rows, as :func:`seqrep.encode.batch.length_batches` counts) and until ``max_wait_ms``
after the first job was queued. It computes the word logits of all their sentences in one
``word_logits`` call and answers each job with :func:`seqrep.predict.predict_text` -- the
function ``seqrep predict`` prints -- reading those logits, so the server and the CLI cannot
disagree. Since a sentence's logits never depend on its batch-mates, batching changes the
speed only, never an answer.

The worker runs off the event loop, so the server keeps accepting requests while it computes.
"""

from __future__ import annotations

import collections
import concurrent.futures
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from seqrep.encode.batch import MAX_TOKENS
from seqrep.predict import predict_text, split_text

if TYPE_CHECKING:
    import torch

    from seqrep.model.labeler import SequenceLabeler
    from seqrep.serve.metrics import Metrics

log = logging.getLogger("seqrep.serve")


class QueueFull(Exception):
    """More requests are waiting than ``max_queue`` allows."""


class Closed(Exception):
    """The batcher is shutting down and takes no new requests."""


def text_sentences(text: str, pretokenized: bool = False) -> list[tuple[str, ...]]:
    """The word tuples :func:`~seqrep.predict.predict_text` will label for ``text``.

    predict_text's own split (:func:`seqrep.predict.split_text`), so their logits can be
    computed ahead in a shared batch; a sentence missing from it would be computed on its own
    (and counted in :attr:`Batcher.misses`).
    """
    return [tuple(text[s:e] for s, e in words) for _, words in split_text(text, pretokenized)]


def padded_tokens(rows: Sequence[int]) -> int:
    """Padded tokens of one batch of model rows of these lengths."""
    return max(rows) * len(rows) if rows else 0


@dataclass
class Job:
    texts: list[str]
    pretokenized: bool
    decoding: str | None
    future: concurrent.futures.Future = field(default_factory=concurrent.futures.Future)
    queued: float = field(default_factory=time.monotonic)
    sentences: list[tuple[str, ...]] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)


class _Cached:
    """The labeler as predict_text sees it, with the batch's logits already computed."""

    def __init__(self, labeler: SequenceLabeler, cache: dict, owner: Batcher) -> None:
        self._labeler, self._cache, self._owner = labeler, cache, owner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._labeler, name)

    def word_logits(self, sentences: Sequence[Sequence[str]], batch_size: int = 32,
                    max_tokens: int | None = MAX_TOKENS) -> list[torch.Tensor]:
        missing = list(dict.fromkeys(tuple(s) for s in sentences if tuple(s) not in self._cache))
        if missing:
            self._owner.misses += len(missing)
            logits = self._labeler.word_logits([list(s) for s in missing], batch_size,
                                               max_tokens)
            self._cache.update(zip(missing, logits))
        return [self._cache[tuple(s)] for s in sentences]


class Batcher:
    """A queue of labeling jobs and the one worker thread that runs them in shared batches.

    Args:
        labeler: the loaded labeler (in eval mode).
        max_batch_tokens: close a batch before it passes this many padded tokens (a single
            request larger than this runs alone, in as many passes as it needs).
        max_wait_ms: wait at most this long after the first queued job for more to join.
        max_queue: requests waiting at most; :meth:`submit` raises :class:`QueueFull` past it.
        metrics: where to record batch sizes and the queue depth (optional).
    """

    def __init__(self, labeler: SequenceLabeler, max_batch_tokens: int = MAX_TOKENS,
                 max_wait_ms: float = 10.0, max_queue: int = 256,
                 metrics: Metrics | None = None) -> None:
        self.labeler = labeler
        self.max_batch_tokens = max_batch_tokens
        self.max_wait = max_wait_ms / 1000.0
        self.max_queue = max_queue
        self.metrics = metrics
        self.batches = 0  # shared batches run
        self.largest = 0  # most requests in one batch
        self.misses = 0  # sentences predict_text asked for that were not in the batch
        self._queue: collections.deque[Job] = collections.deque()
        self._carry: Job | None = None  # taken from the queue, opens the next batch
        self._cv = threading.Condition()
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="seqrep-batcher", daemon=True)

    # ----------------------------------------------------------------- front (event loop)
    def start(self) -> Batcher:
        self._thread.start()
        return self

    @property
    def depth(self) -> int:
        """Requests waiting for a batch."""
        return len(self._queue) + (self._carry is not None)

    def submit(self, texts: Sequence[str], pretokenized: bool = False,
               decoding: str | None = None) -> concurrent.futures.Future:
        """Queue texts; the future gives one predict_text record per text."""
        job = Job(list(texts), pretokenized, decoding)
        with self._cv:
            if self._closing:
                raise Closed("the server is shutting down")
            if self.depth >= self.max_queue:
                raise QueueFull(f"{self.depth} requests are waiting (--max-queue "
                                f"{self.max_queue})")
            self._queue.append(job)
            self._gauge()
            self._cv.notify()
        return job.future

    def close(self, timeout: float | None = None) -> None:
        """Take no new jobs, finish every queued one, stop the worker."""
        with self._cv:
            self._closing = True
            self._cv.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout)

    # ----------------------------------------------------------------- worker thread
    def _gauge(self) -> None:
        if self.metrics is not None:
            self.metrics.queue_depth.set(self.depth)

    def _next(self, deadline: float | None) -> Job | None:
        """The next live job: wait until ``deadline`` (None: until one comes or closing)."""
        while True:
            with self._cv:
                while not self._queue and not self._closing:
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        break
                    self._cv.wait(remaining)
                if not self._queue:
                    return None
                job = self._queue.popleft()
                self._gauge()
            if job.future.set_running_or_notify_cancel():  # False: the client went away
                try:
                    for text in job.texts:
                        job.sentences += text_sentences(text, job.pretokenized)
                    job.rows = [len(seg) for s in job.sentences
                                for seg in self.labeler.encode(list(s))]
                except Exception as err:  # noqa: BLE001 - handed to the waiting request
                    job.future.set_exception(err)
                    continue
                return job

    def _run(self) -> None:
        while True:
            first, self._carry = self._carry or self._next(None), None
            if first is None:
                return  # closing and drained
            batch, rows = [first], list(first.rows)
            deadline = first.queued + self.max_wait
            while True:
                job = self._next(deadline)
                if job is None:
                    break
                if padded_tokens(rows + job.rows) > self.max_batch_tokens:
                    self._carry = job  # opens the next batch
                    break
                batch.append(job)
                rows += job.rows
            self._gauge()
            self._label(batch, rows)

    def _label(self, batch: list[Job], rows: list[int]) -> None:
        sentences = list(dict.fromkeys(s for job in batch for s in job.sentences))
        start = time.perf_counter()
        try:
            logits = self.labeler.word_logits([list(s) for s in sentences], max(1, len(rows)),
                                              self.max_batch_tokens) if sentences else []
        except Exception as err:  # noqa: BLE001 - every request of the batch gets it
            log.exception("forward pass failed")
            for job in batch:
                job.future.set_exception(err)
            return
        self.batches += 1
        self.largest = max(self.largest, len(batch))
        if self.metrics is not None:
            self.metrics.observe_batch(len(batch), len(sentences), padded_tokens(rows),
                                       time.perf_counter() - start)
        cached = _Cached(self.labeler, dict(zip(sentences, logits)), self)
        for job in batch:
            try:
                job.future.set_result(predict_text(cached, job.texts, job.decoding,  # type: ignore[arg-type]
                                                   pretokenized=job.pretokenized))
            except Exception as err:  # noqa: BLE001
                log.exception("decoding failed")
                job.future.set_exception(err)
