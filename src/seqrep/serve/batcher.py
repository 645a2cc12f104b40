"""Dynamic batching: requests that arrive together run as one forward pass.

Requests are queued as jobs. One worker thread takes the oldest job, then keeps taking jobs
while the batch stays within ``batch_tokens`` padded tokens (the longest model row times
the rows, as :func:`seqrep.encode.batch.length_batches` counts) and until ``max_wait_ms``
after the first job was queued. A batch runs in three steps: plan (each job's texts cut
into sentences as :func:`seqrep.predict.tagger.predict_text` cuts them, and encoded once into the
model rows the budget counts), one forward (a single ``word_logits`` call over the batch's
distinct texts or sentences, computing the rows the plan encoded) and assemble (each job's
records built from those logits by :func:`seqrep.predict.tagger.text_records` and
:func:`~seqrep.predict.tagger.decode_logits`, the functions ``seqrep predict`` prints through), so
the server and the CLI cannot disagree. With document context each text is one document:
its sentences are computed together in the shared pass. A sentence's logits do not depend
on its batch-mates beyond float rounding: the same matrix products run on other shapes
round differently. So a batched answer has the tags and spans of its one-at-a-time answer,
and its scores are within :data:`BATCH_TOLERANCE` of them (unless a word's two best tags
are closer than that, where the tag itself may differ).

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

from seqrep.core.contexts import labeler_context
from seqrep.encode import BATCH_TOKENS
from seqrep.predict.labeler import Labeler
from seqrep.predict.tagger import decode_logits, split_text, text_records

if TYPE_CHECKING:
    import torch

    from seqrep.encode.rows import Item
    from seqrep.serve.metrics import Metrics

log = logging.getLogger("seqrep.serve")

#: How far a word's tag probabilities (and so span scores) may move when its sentence is
#: batched with others rather than run alone, by the precision the forward pass runs in
#: (tested on a tiny model in fp32 and bf16; fp16 runs on GPUs only). fp32: float rounding
#: only, so rounded scores are equal or one unit of their 4th decimal apart; bf16 and fp16
#: keep 8 and 11 significant bits, so logits move more.
BATCH_TOLERANCE = {"fp32": 1e-4, "bf16": 0.01, "fp16": 0.01}


class QueueFull(Exception):
    """More requests are waiting than ``max_queue`` allows."""


class Closed(Exception):
    """The batcher is shutting down and takes no new requests."""


class WorkerDead(Exception):
    """The worker thread has ended: no request can be answered (``/health`` says 503)."""


class Gone(Exception):
    """The job's client went away before its forward pass began; it was not computed."""


def text_sentences(text: str, pretokenized: bool = False) -> list[tuple[str, ...]]:
    """The word tuples :func:`~seqrep.predict.tagger.predict_text` will label for ``text``.

    predict_text's own split (:func:`seqrep.predict.tagger.split_text`), so their logits can be
    computed ahead in a shared batch.
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
    # per text, planned once: split_text's cut (sentence spans, word offsets), its words
    splits: list[list[tuple[tuple[int, int], list[tuple[int, int]]]]] = \
        field(default_factory=list)
    documents: list[tuple[tuple[str, ...], ...]] = field(default_factory=list)
    # the model rows of each unit (Job.keys), its sentences numbered from 0, and their lengths
    items: dict[tuple[tuple[str, ...], ...], list[Item]] = field(default_factory=dict)
    rows: list[int] = field(default_factory=list)
    gone: bool = False  # the client went away: drop the job if it has not run
    word_scores: bool = False  # add each sentence's per-word probabilities ("scores")

    @property
    def sentences(self) -> list[tuple[str, ...]]:
        """The sentences of all its texts, in order."""
        return [s for d in self.documents for s in d]

    def keys(self, whole: bool) -> list[tuple[tuple[str, ...], ...]]:
        """The units the forward pass computes, in order: each text (a document) when
        ``whole``, else each sentence alone; a text without words has none."""
        return [d for d in self.documents if d] if whole else [(s,) for s in self.sentences]

    def plan(self) -> None:
        """Cut the texts into sentences and words, as predict_text cuts them."""
        self.splits = [split_text(t, self.pretokenized) for t in self.texts]
        self.documents = [tuple(tuple(t[a:b] for a, b in words) for _, words in cut)
                          for t, cut in zip(self.texts, self.splits)]


class Batcher:
    """A queue of labeling jobs and the one worker thread that runs them in shared batches.

    Args:
        labeler: the loaded labeler (in eval mode).
        batch_tokens: close a batch before it passes this many padded tokens (a single
            request larger than this runs alone, in as many passes as it needs).
        max_wait_ms: wait at most this long after the first queued job for more to join.
        max_queue: requests waiting at most; :meth:`submit` raises :class:`QueueFull` past it.
        metrics: where to record batch sizes and the queue depth (optional).

    The worker survives any error of one batch (that batch's requests get the error). If it
    ends anyway, :attr:`failure` says why, every waiting request gets :class:`WorkerDead`, and
    so does every later :meth:`submit`: no request waits for a worker that is gone.
    """

    def __init__(self, labeler: Labeler, batch_tokens: int = BATCH_TOKENS,
                 max_wait_ms: float = 10.0, max_queue: int = 256,
                 metrics: Metrics | None = None) -> None:
        self.labeler = labeler
        self._whole = labeler_context(labeler).documents  # then each text is one document
        self.batch_tokens = batch_tokens
        self.max_wait = max_wait_ms / 1000.0
        self.max_queue = max_queue
        self.metrics = metrics
        self.batches = 0  # shared batches run
        self.largest = 0  # most requests in one batch
        # sentences answered without their batch's pass: none since every job's records are
        # assembled from it (kept for callers that report it)
        self.misses = 0
        self.abandoned = 0  # jobs dropped unrun because their client went away
        self.failure: str | None = None  # why the worker ended, if it ended unasked
        # the queue, the carried job and the forming batch are shared with the event loop:
        # read and changed only under self._cv
        self._queue: collections.deque[Job] = collections.deque()
        self._carry: Job | None = None  # taken from the queue, opens the next batch
        self._forming: list[Job] = []  # taken from the queue for the batch being formed
        self._running: list[Job] = []  # the batch being computed and answered
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
        with self._cv:
            return len(self._queue) + (self._carry is not None)

    def submit(self, texts: Sequence[str], pretokenized: bool = False,
               decoding: str | None = None, word_scores: bool = False
               ) -> concurrent.futures.Future:
        """Queue texts; the future gives one predict_text record per text (with
        ``word_scores``, each sentence also holds ``scores``: its tags' probabilities)."""
        job = Job(list(texts), pretokenized, decoding, word_scores=word_scores)
        with self._cv:
            if self.failure is not None:
                raise WorkerDead(self.failure)
            if self._closing:
                raise Closed("the server is shutting down")
            if self.depth >= self.max_queue:
                raise QueueFull(f"{self.depth} requests are waiting (--max-queue "
                                f"{self.max_queue})")
            self._queue.append(job)
            self._gauge()
            self._cv.notify()
        return job.future

    def abandon(self, future: concurrent.futures.Future) -> bool:
        """The client of ``future`` went away: drop its job unless its forward pass has begun.

        Returns:
            True if the job will not be computed.
        """
        with self._cv:
            for job in self._queue:
                if job.future is future:
                    self._queue.remove(job)
                    future.cancel()
                    self._dropped(1)
                    self._gauge()
                    return True
            for job in [self._carry, *self._forming]:
                if job is not None and job.future is future:
                    job.gone = True  # _label drops it before the forward pass
                    return True
        return False

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
            self.metrics.queue_depth.set(self.depth)  # _cv is reentrant

    def _dropped(self, n: int) -> None:
        self.abandoned += n
        if self.metrics is not None and n:
            self.metrics.abandoned.inc(n)

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
                if not job.future.set_running_or_notify_cancel():  # the client went away
                    continue
                self._forming.append(job)
                self._gauge()
            try:
                job.plan()
                job.rows = self._rows(job)
            except Exception as err:  # noqa: BLE001 - handed to the waiting request
                with self._cv:
                    self._forming.remove(job)
                job.future.set_exception(err)
                continue
            return job

    def _run(self) -> None:
        try:
            while True:
                try:
                    if not self._step():
                        return  # closing and drained
                except Exception as err:  # noqa: BLE001 - the batch's requests get it
                    log.exception("batcher: unexpected error; its batch is answered with it")
                    self._fail(err)
        except BaseException as err:
            with self._cv:
                self.failure = f"the labeling worker stopped ({type(err).__name__}: {err})"
            log.critical("%s; every request now gets 503", self.failure)
            raise
        finally:
            if self.failure is not None:
                self._fail(WorkerDead(self.failure), queued=True)

    def _fail(self, err: BaseException, queued: bool = False) -> None:
        """Answer the jobs taken from the queue (and, if ``queued``, the waiting ones too)
        with ``err``."""
        with self._cv:
            jobs = self._running + self._forming + ([self._carry] if self._carry else [])
            self._running, self._forming, self._carry = [], [], None
            if queued:
                jobs += list(self._queue)
                self._queue.clear()
            self._gauge()
        for job in jobs:
            if not job.future.done():
                try:
                    job.future.set_exception(err)
                except concurrent.futures.InvalidStateError:  # answered meanwhile
                    pass

    def _step(self) -> bool:
        """Form one batch and answer it; False once closing with nothing left."""
        with self._cv:
            first, self._carry = self._carry, None
            if first is not None:
                self._forming.append(first)
        first = first or self._next(None)
        if first is None:
            return False
        rows = list(first.rows)
        deadline = first.queued + self.max_wait
        while True:
            job = self._next(deadline)
            if job is None:
                break
            if padded_tokens(rows + job.rows) > self.batch_tokens:
                with self._cv:
                    self._forming.remove(job)
                    self._carry = job  # opens the next batch
                break
            rows += job.rows
        with self._cv:
            batch, self._forming = self._forming, []
            gone = [job for job in batch if job.gone]
            self._running = batch = [job for job in batch if not job.gone]
            self._dropped(len(gone))
            self._gauge()
        for job in gone:
            job.future.set_exception(Gone("the client went away"))
        if batch:
            self._label(batch, [r for job in batch for r in job.rows])
        with self._cv:
            self._running = []
        return True

    def _rows(self, job: Job) -> list[int]:
        """The lengths of the model rows of ``job``'s units (each text one document, or each
        sentence alone), in order. Each distinct unit is encoded here once and its rows kept
        in ``job.items``: the forward pass computes those rows, encoding nothing again."""
        alone = labeler_context(self.labeler).docs
        for key in job.keys(self._whole):
            if key not in job.items:
                job.items[key] = self.labeler.encoder.items([list(s) for s in key],
                                                            docs=alone([0] * len(key)))
        return [len(it.segment) for key in job.keys(self._whole) for it in job.items[key]]

    def _forward(self, keys: Sequence[tuple[tuple[str, ...], ...]],
                 planned: dict[tuple[tuple[str, ...], ...], list[Item]], rows: int
                 ) -> tuple[dict[tuple[tuple[str, ...], ...], list[torch.Tensor]], int]:
        """The logits of every distinct key (a text's sentences, or one sentence) in one
        ``word_logits`` call over the rows the plan encoded (``planned``), a key of several
        sentences read as one document; and the number of sentences computed. The batch
        size leaves room for all ``rows`` the plan counted, under either count of a batch
        (rows, or with document context the sentences each row labels, a sentence cut
        between two rows counted in both), so only the token budget, which the plan kept
        to, could close a batch."""
        unique = list(dict.fromkeys(keys))
        sentences: list[list[str]] = []
        items: list[Item] = []
        for key in unique:  # each key's rows, its sentences numbered after the earlier keys'
            items += [it.shifted(len(sentences)) for it in planned[key]]
            sentences += [list(s) for s in key]
        if not sentences:
            return {}, 0
        docs = labeler_context(self.labeler).docs([j for j, k in enumerate(unique) for _ in k])
        got = iter(self.labeler.word_logits(sentences, rows + len(sentences), self.batch_tokens,
                                            docs=docs, items=items))
        return {k: [next(got) for _ in k] for k in unique}, len(sentences)

    def _assemble(self, job: Job, logits: dict[tuple[tuple[str, ...], ...], list[torch.Tensor]]
                  ) -> list[dict[str, Any]]:
        """``job``'s records, as predict_text writes them, from the batch's logits; with
        ``word_scores`` each sentence's tag probabilities too, from the same decoding."""
        items = [(i, span, words) for i, cut in enumerate(job.splits) for span, words in cut]
        ours = [x for k in job.keys(self._whole) for x in logits[k]]
        tagged = decode_logits(self.labeler, job.sentences, ours, job.decoding)
        records = text_records(self.labeler, job.texts, items, tagged)
        if job.word_scores:
            probs = iter(p for _, p in tagged)
            for record in records:
                for sentence in record["sentences"]:
                    sentence["scores"] = [round(p, 4) for p in next(probs)]
        return records

    def _label(self, batch: list[Job], rows: list[int]) -> None:
        keys = [k for job in batch for k in job.keys(self._whole)]
        planned = {k: v for job in reversed(batch) for k, v in job.items.items()}
        start = time.perf_counter()
        try:
            logits, sentences = self._forward(keys, planned, max(1, len(rows)))
        except Exception as err:  # noqa: BLE001 - every request of the batch gets it
            log.exception("forward pass failed")
            for job in batch:
                job.future.set_exception(err)
            return
        self.batches += 1
        self.largest = max(self.largest, len(batch))
        if self.metrics is not None:
            self.metrics.observe_batch(len(batch), sentences, padded_tokens(rows),
                                       time.perf_counter() - start)
        for job in batch:
            try:
                job.future.set_result(self._assemble(job, logits))
            except Exception as err:  # noqa: BLE001
                log.exception("decoding failed")
                job.future.set_exception(err)
