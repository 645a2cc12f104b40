"""``seqrep serve``: an HTTP API, a web page and Prometheus metrics for a trained labeler."""

from __future__ import annotations

from pathlib import Path

import typer


def serve(
    run: Path = typer.Argument(..., help="run folder (or a saved labeler folder)"),
    host: str = typer.Option("127.0.0.1", "--host", help="address to listen on"),
    port: int = typer.Option(8080, "--port", help="port to listen on"),
    max_batch_tokens: int = typer.Option(
        512, "--max-batch-tokens", help="close a shared batch before it passes this many "
        "padded tokens"),
    max_wait_ms: float = typer.Option(
        10.0, "--max-wait-ms", help="wait at most this long for more requests to join a batch"),
    max_text_chars: int = typer.Option(
        10_000, "--max-text-chars", help="longest text accepted (413 past it)"),
    max_texts: int = typer.Option(64, "--max-texts", help="most texts in one request (413)"),
    max_queue: int = typer.Option(
        256, "--max-queue", help="most requests waiting for a batch (503 + Retry-After past it)"),
    threads: int | None = typer.Option(
        None, "--threads", help="torch CPU threads for the model (default: the cores less one, "
        "at least 1: the event loop keeps a core, so the model's threads never wait for it)"),
    log_level: str = typer.Option("info", "--log-level", help="uvicorn log level"),
    runtime: str = typer.Option("auto", "--runtime", help="torch, onnx, onnx-int8 or auto "
                                "(onnx for a seqrep export folder)"),
    device: str = typer.Option("auto", "--device", help="auto, cpu, cuda, cuda:N or mps"),
    precision: str = typer.Option("auto", "--precision",
                                  help="auto (bf16 on GPUs and on CPUs with native "
                                       "bf16, else fp32), fp32, bf16 or fp16"),
    request_timeout: float = typer.Option(
        20.0, "--request-timeout", help="seconds a client has to send a whole request (line, "
        "headers and body) before its connection is closed"),
    max_connections: int = typer.Option(
        1000, "--max-connections", help="open connections past this get 503"),
) -> None:
    """Serve RUN over HTTP: POST /v1/label, POST /v1/hf (Hugging Face token classification),
    GET /health, /v1/model, /metrics, a web page at / and the OpenAPI page at /docs.

    Requests that arrive together are labeled in one forward pass (dynamic batching); the
    answers are those of `seqrep predict`. Ctrl+C (SIGINT or SIGTERM) finishes the queued
    requests before the server stops.

    The port is checked before anything loads (a busy port is one line, exit 2).
    """
    from seqrep.errors import ConfigError

    try:
        import uvicorn  # noqa: F401

        from seqrep.serve.app import ServeSettings, create_app
        from seqrep.serve.server import bind_socket, make_server
    except ImportError as err:
        raise ConfigError(f"seqrep serve needs the serve extra ({err.name} is missing): "
                          f"pip install 'seqrep[serve]'") from None
    for name, value in (("--max-batch-tokens", max_batch_tokens), ("--max-texts", max_texts),
                        ("--max-text-chars", max_text_chars), ("--max-queue", max_queue),
                        ("--max-connections", max_connections)):
        if value < 1:
            raise ConfigError(f"{name} {value}; expected 1 or more")
    if max_wait_ms < 0:
        raise ConfigError(f"--max-wait-ms {max_wait_ms}; expected 0 or more")
    if threads is not None and threads < 1:
        raise ConfigError(f"--threads {threads}; expected 1 or more")
    if not request_timeout > 0:
        raise ConfigError(f"--request-timeout {request_timeout}; expected more than 0")
    from seqrep.export import RUNTIMES
    from seqrep.model.device import resolve_device, resolve_precision

    if runtime not in RUNTIMES:
        raise ConfigError(f"--runtime {runtime!r}; expected one of {', '.join(RUNTIMES)}")

    resolve_precision(precision, resolve_device(device))  # a wrong value fails now, not later
    import logging
    import os

    import torch

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    torch.set_num_threads(threads or max(1, (cores or 1) - 1))
    logging.basicConfig(format="%(levelname)s:     %(name)s: %(message)s",
                        level=getattr(logging, log_level.upper(), logging.INFO))
    settings = ServeSettings(max_batch_tokens=max_batch_tokens, max_wait_ms=max_wait_ms,
                             max_text_chars=max_text_chars, max_texts=max_texts,
                             max_queue=max_queue)
    sock = bind_socket(host, port)  # before the model loads: a busy port is one line
    try:
        app = create_app(run, settings=settings, runtime=runtime, device=device,
                         precision=precision)  # a non-labeler fails here
    except BaseException:
        sock.close()
        raise
    make_server(app, request_timeout_s=request_timeout, max_connections=max_connections,
                log_level=log_level).run(sockets=[sock])
