"""Prometheus metrics of one server, in a registry of its own (several apps in one process,
as in the tests, never share or clash)."""

from __future__ import annotations

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
COUNT_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
TOKEN_BUCKETS = (32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)


class Metrics:
    """Requests by route and status, errors by kind, latency, batches and the queue depth."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = reg = CollectorRegistry()
        self.requests = Counter("seqrep_requests", "HTTP requests by route, method and status",
                                ["route", "method", "status"], registry=reg)
        self.errors = Counter("seqrep_errors", "error responses by route and kind "
                              "(validation, too_large, not_ready, queue_full, not_found, "
                              "internal ...)", ["route", "kind"], registry=reg)
        self.latency = Histogram("seqrep_request_duration_seconds",
                                 "time from request to response, by route", ["route"],
                                 buckets=LATENCY_BUCKETS, registry=reg)
        self.in_progress = Gauge("seqrep_requests_in_progress",
                                 "HTTP requests being answered, by route", ["route"],
                                 registry=reg)
        self.texts = Counter("seqrep_texts", "texts labeled", registry=reg)
        self.batch_requests = Histogram("seqrep_batch_requests",
                                        "requests answered by one shared forward batch",
                                        buckets=COUNT_BUCKETS, registry=reg)
        self.batch_sentences = Histogram("seqrep_batch_sentences",
                                         "distinct sentences in one shared forward batch",
                                         buckets=COUNT_BUCKETS, registry=reg)
        self.batch_tokens = Histogram("seqrep_batch_padded_tokens",
                                      "padded tokens of one shared batch (rows x longest)",
                                      buckets=TOKEN_BUCKETS, registry=reg)
        self.batch_seconds = Histogram("seqrep_batch_duration_seconds",
                                       "model time of one shared batch",
                                       buckets=LATENCY_BUCKETS, registry=reg)
        self.abandoned = Counter("seqrep_abandoned_requests", "requests dropped before their "
                                 "forward pass because the client went away", registry=reg)
        self.queue_depth = Gauge("seqrep_queue_depth", "requests waiting for a batch",
                                 registry=reg)
        self.model_loaded = Gauge("seqrep_model_loaded", "1 once the model is loaded",
                                  registry=reg)

    def observe_batch(self, requests: int, sentences: int, tokens: int, seconds: float) -> None:
        self.batch_requests.observe(requests)
        self.batch_sentences.observe(sentences)
        self.batch_tokens.observe(tokens)
        self.batch_seconds.observe(seconds)

    def render(self) -> bytes:
        """The Prometheus text exposition of this registry."""
        return generate_latest(self.registry)
