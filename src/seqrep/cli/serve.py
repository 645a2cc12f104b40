"""``seqrep serve``: an HTTP API, a web page and Prometheus metrics for a trained labeler."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from seqrep.cli.options import (
    command,
    config_values,
    inference_config,
    inference_option,
    revision_option,
    with_revision,
)


def _params() -> list:
    import inspect

    from seqrep.cli.options import config_params
    from seqrep.serve.settings import ServeSettings

    def p(name: str, annotation: Any, default: Any) -> inspect.Parameter:
        return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation,
                                 default=default)

    return [
        inspect.Parameter("run", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Path,
                          default=typer.Argument(..., help="run folder (or a saved labeler "
                                                           "folder)")),
        p("host", str, typer.Option("127.0.0.1", "--host", help="address to listen on")),
        p("port", int, typer.Option(8080, "--port", help="port to listen on")),
        *config_params(ServeSettings, skip=("retry_after_s",)),
        *(p(name, kind, inference_option(name)) for name, kind in (
            ("threads", int | None), ("runtime", str), ("device", str), ("precision", str),
            ("context_overlap", float | None))),
        p("revision", str | None, revision_option()),
        p("ray", bool, typer.Option(False, "--ray", help="serve from Ray Serve replicas, "
                                                         "each with its own batcher")),
        p("replicas", int, typer.Option(1, "--replicas", help="with --ray: how many "
                                                              "replicas")),
        p("address", str | None, typer.Option(
            None, "--address", help="with --ray: the Ray cluster to join (default: "
            "RAY_ADDRESS, else a Ray runtime started on this machine)")),
        p("log_level", str, typer.Option("info", "--log-level", help="uvicorn log level")),
    ]


def serve_command(values: dict[str, Any]) -> None:
    """Serve a trained labeler over HTTP: a JSON API, a web page and Prometheus metrics.

    RUN answers POST /v1/label, POST /v1/hf (Hugging Face token classification), GET /health,
    /v1/model, /metrics, a web page at / and the OpenAPI page at /docs.

    Requests that arrive together are labeled in one forward pass (dynamic batching); the
    answers are those of `seqrep predict`. Ctrl+C (SIGINT or SIGTERM) finishes the queued
    requests before the server stops.

    The port is checked before anything loads (a busy port is one line, exit 2).
    """
    from seqrep.core.extras import require

    require("serve", "seqrep serve")
    from seqrep.serve.app import ServeSettings, create_app
    from seqrep.serve.server import bind_socket, make_server

    inference = inference_config(values)  # runtime, device, precision, threads: checked once
    run = with_revision(values["run"], values["revision"])  # before the port and the model
    settings = ServeSettings(**config_values(ServeSettings, values))  # checks the limits
    from seqrep.model.device import resolve_device, resolve_precision

    # a device this machine lacks, or a precision it cannot run there, fails now, not later
    resolve_precision(inference.precision, resolve_device(inference.device))
    import logging
    import os

    import torch

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    torch.set_num_threads(inference.threads or max(1, (cores or 1) - 1))
    log_level = values["log_level"]
    logging.basicConfig(format="%(levelname)s:     %(name)s: %(message)s",
                        level=getattr(logging, log_level.upper(), logging.INFO))
    if values["ray"] or values["replicas"] != 1 or values["address"] is not None:
        _serve_with_ray(run, values, settings, inference)
        return
    sock = bind_socket(values["host"], values["port"])  # before the model loads: a busy port
    try:
        app = create_app(run, settings=settings,
                         inference=inference)  # a non-labeler fails here
    except BaseException:
        sock.close()
        raise
    make_server(app, settings=settings, log_level=log_level).run(sockets=[sock])


def _serve_with_ray(run: Any, values: dict[str, Any], settings: Any, inference: Any) -> None:
    """``--ray``: the same app from ``--replicas`` Ray Serve replicas behind Ray's proxy on
    ``--host:--port`` (:mod:`seqrep.integrations.ray_serve`), until Ctrl+C."""
    from seqrep.core.extras import require
    from seqrep.errors import ConfigError
    from seqrep.model.io import read_config
    from seqrep.serve.server import bind_socket

    if not values["ray"]:
        raise ConfigError("--replicas and --address need --ray")
    if values["replicas"] < 1:
        raise ConfigError(f"--replicas {values['replicas']}; expected 1 or more")
    require("ray", "seqrep serve --ray")
    read_config(run)  # a folder that holds no labeler: one line, before Ray starts
    bind_socket(values["host"], values["port"]).close()  # a busy port: one line, now
    from seqrep.integrations.ray_serve import run as run_on_ray

    typer.echo(f"starting Ray Serve: {values['replicas']} replica(s) of {run} on "
               f"http://{values['host']}:{values['port']}", err=True)
    run_on_ray(run, host=values["host"], port=values["port"], replicas=values["replicas"],
               settings=settings, inference=inference, address=values["address"])


serve = command(serve_command, _params(), serve_command.__doc__ or "")
