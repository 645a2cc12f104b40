"""Serve a labeler from Ray Serve replicas: the same FastAPI app as ``seqrep serve``.

Each replica is one Ray actor holding one labeler and its own dynamic batcher (the app of
:func:`seqrep.serve.app.create_app`, so ``/v1/label``, ``/v1/hf``, ``/health``, ``/v1/model``
and ``/metrics`` answer as ``seqrep serve`` does); Ray Serve's proxy spreads the requests over
the replicas. A replica loads its labeler in its constructor, so Ray routes nothing to it
before it can label, and its ``/health`` says ``ok`` only once the whole application is
running: every replica of the deployment loaded. ``/metrics`` counts the replica that
answers.

From Python::

    from ray import serve
    from seqrep.integrations.ray_serve import application

    serve.run(application("runs/ner", replicas=2), route_prefix="/")

``seqrep serve RUN --ray --replicas N`` starts Ray (or joins ``--address``/``RAY_ADDRESS``),
Ray Serve's HTTP proxy on ``--host``/``--port``, and the application, then waits for Ctrl+C.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from seqrep.config import InferenceConfig
from seqrep.serve.settings import ServeSettings

APP_NAME = "seqrep"


class SeqrepReplica:
    """One replica: the labeler, loaded in the constructor, and its app."""

    def __init__(self, run: str, settings: ServeSettings, inference: InferenceConfig,
                 app_name: str = APP_NAME) -> None:
        import torch

        from seqrep.export import load
        from seqrep.integrations.ray import _actor_cpus
        from seqrep.serve.app import create_app

        threads = inference.threads or _actor_cpus()
        if threads:
            torch.set_num_threads(threads)
        labeler = load(run, inference)
        self.app_name, self._running = app_name, False
        self._seqrep_app = create_app(labeler=labeler, settings=settings, inference=inference,
                              gate=self.waiting_for)

    def waiting_for(self) -> str | None:
        """None once the application runs (every replica loaded; remembered from then on,
        so autoscaling later never makes a loaded replica unready), else what it waits for."""
        if self._running:
            return None
        from ray import serve

        try:
            app = serve.status().applications.get(self.app_name)
        except Exception as err:  # noqa: BLE001 - the controller is busy or gone: not ready
            return f"Ray Serve's status ({type(err).__name__})"
        if app is None or str(app.status).split(".")[-1] != "RUNNING":
            running = sum(d.replica_states.get("RUNNING", 0)
                          for d in (app.deployments.values() if app else ()))
            return f"the other replicas to load ({running} running)"
        self._running = True
        return None

    def __serve_build_asgi_app__(self) -> Any:
        return self._seqrep_app


def application(run: str | Path, *, settings: ServeSettings | None = None,
                inference: InferenceConfig | None = None, replicas: int = 1,
                autoscaling: dict[str, Any] | None = None, cpus_per_replica: float = 1,
                gpus_per_replica: float = 0, app_name: str = APP_NAME) -> Any:
    """The Ray Serve application serving ``run``: ``replicas`` replicas, or Ray Serve's
    ``autoscaling`` config (``{"min_replicas": 1, "max_replicas": 4, ...}``) instead."""
    from ray import serve

    inference = inference or InferenceConfig()
    options: dict[str, Any] = {"ray_actor_options": {"num_cpus": cpus_per_replica,
                                                     "num_gpus": gpus_per_replica}}
    if autoscaling is not None:
        options["autoscaling_config"] = autoscaling
    else:
        options["num_replicas"] = replicas
    wrapped = serve.ingress()(SeqrepReplica)
    deployment = serve.deployment(wrapped, name="SeqrepReplica", **options)
    return deployment.bind(str(run), settings or ServeSettings(), inference, app_name)


def run(run_dir: str | Path, *, host: str = "127.0.0.1", port: int = 8080,
        replicas: int = 1, settings: ServeSettings | None = None,
        inference: InferenceConfig | None = None, address: str | None = None,
        blocking: bool = True) -> None:
    """Start (or join) Ray, Ray Serve's proxy on ``host:port`` and the application; with
    ``blocking``, wait until the replicas are loaded, then until Ctrl+C, and shut down."""
    from ray import serve

    from seqrep.integrations.ray import start

    start(address)
    serve.start(http_options={"host": host, "port": port})
    inference = inference or InferenceConfig()
    gpus = 1 if inference.device.startswith("cuda") else 0
    serve.run(application(run_dir, settings=settings, inference=inference, replicas=replicas,
                          gpus_per_replica=gpus),
              name=APP_NAME, route_prefix="/", blocking=False)
    if not blocking:
        return
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        serve.shutdown()
