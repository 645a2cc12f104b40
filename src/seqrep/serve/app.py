"""The HTTP server of ``seqrep serve``: a FastAPI app around one labeler and its batcher.

Routes (OpenAPI page at ``/docs``)::

    GET  /            the web page (static files in seqrep/serve/static, no CDN)
    POST /v1/label    {"text"|"texts"|"words", "decoding"?} -> {"decoding", "results": [record]}
    POST /v1/hf       Hugging Face token classification: {"inputs": str | [str]}
                      -> [{entity_group, score, word, start, end}] (a list per input text)
    POST /            the same as /v1/hf, for clients that post to the endpoint's root
    GET  /health      503 until the model is loaded, then 200 {"status": "ok"}
    GET  /v1/model    labels, model, repetitions, exit layer, unmask, decoding, version
    GET  /metrics     Prometheus text format
    GET  /docs, /redoc  the OpenAPI pages (their scripts served from /docs-assets, no CDN)

Every error is a JSON body ``{"error": {"code", "type", "message", ...}}`` with its status:
413 for a text or request over a limit, 422 for a body that is not JSON of the right shape
(the field is named), 503 with ``Retry-After`` while loading or when the queue is full; a
traceback never reaches the client.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline

import seqrep
from seqrep.config import InferenceConfig, LabelerConfig
from seqrep.data.tags import split_tag
from seqrep.serve.batcher import Batcher, Closed, QueueFull, WorkerDead
from seqrep.serve.metrics import Metrics
from seqrep.serve.middleware import ApiError, BodyLimit, Observe, add_error_handlers
from seqrep.serve.schemas import HFEntity, HFRequest, LabelRequest, LabelResponse, ModelInfo
from seqrep.serve.settings import ServeSettings

if TYPE_CHECKING:
    from seqrep.model.labeler import SequenceLabeler

log = logging.getLogger("seqrep.serve")
STATIC = Path(__file__).parent / "static"
DOCS_ASSETS = "/docs-assets"  # the OpenAPI pages' scripts and styles, served from here


class _State:
    """What one app serves: the labeler (once loaded), its config, batcher and metrics."""

    inference = InferenceConfig()  # how run_dir's labeler loads and runs (create_app's)
    gate: Callable[[], str | None] | None = None  # create_app's: what else /health awaits

    def __init__(self, source: str, config: LabelerConfig | None,
                 labeler: SequenceLabeler | None, settings: ServeSettings) -> None:
        self.source, self.config, self.labeler = source, config, labeler
        self.settings = settings
        self.metrics = Metrics()
        self.batcher: Batcher | None = None
        self.error: str | None = None
        self.ready = threading.Event()

    def load(self, run_dir: Path | None) -> None:
        """Load the model (if not given) and start the batcher; runs in a thread."""
        try:
            if self.labeler is None:
                from seqrep.export import load

                t = time.perf_counter()
                self.labeler = load(run_dir, self.inference)
                from seqrep.model.device import ran_on_line

                log.info("model %s loaded in %.1f s; %s", self.source, time.perf_counter() - t,
                         ran_on_line(self.labeler))
            self.labeler.eval()
            self.config = self.labeler.config
            s = self.settings
            self.batcher = Batcher(self.labeler, s.max_batch_tokens, s.max_wait_ms,
                                   s.max_queue, self.metrics).start()
            self.metrics.model_loaded.set(1)
            self.ready.set()
        except Exception as err:  # noqa: BLE001 - reported by /health, the server stays up
            log.exception("could not load the model from %s", self.source)
            self.error = f"{type(err).__name__}: {err}"

    @property
    def failure(self) -> str | None:
        """Why the server cannot label (the model failed to load, or the worker ended)."""
        if self.error:
            return f"the model failed to load: {self.error}"
        return self.batcher.failure if self.batcher is not None else None

    async def label(self, texts: list[str], pretokenized: bool, decoding: str | None,
                    gone: Callable[[], Awaitable[Any]] | None = None,
                    word_scores: bool = False) -> list[dict[str, Any]]:
        """The records of ``texts`` from the batcher. ``gone`` returns once the client has
        disconnected: the job is then dropped if its forward pass has not begun."""
        retry = {"Retry-After": str(self.settings.retry_after_s)}
        if self.batcher is None or not self.ready.is_set():
            raise ApiError(503, "not_ready", self.failure or "the model is still loading",
                           retry)
        try:
            future = self.batcher.submit(texts, pretokenized, decoding, word_scores)
        except QueueFull as err:
            raise ApiError(503, "queue_full", f"server busy: {err}; retry later", retry,
                           limit={"name": "max_queue", "value": self.settings.max_queue}
                           ) from None
        except Closed:
            raise ApiError(503, "shutting_down", "the server is shutting down", retry) from None
        except WorkerDead as err:
            raise ApiError(503, "worker_dead", str(err)) from None
        answer = asyncio.wrap_future(future)
        watch = asyncio.ensure_future(gone()) if gone is not None else None
        try:
            await asyncio.wait([answer] + ([watch] if watch else []),
                               return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the request's task was cancelled: same as leaving
            self.batcher.abandon(future)
            answer.cancel()
            raise
        finally:
            if watch is not None:
                watch.cancel()
        if not answer.done():  # the client left: nobody reads the answer
            self.batcher.abandon(future)
            answer.cancel()
            raise ApiError(499, "client_closed", "the client closed the connection")
        try:
            records = answer.result()
        except WorkerDead as err:
            raise ApiError(503, "worker_dead", str(err)) from None
        except Exception:  # noqa: BLE001 - logged by the worker; the client gets no traceback
            raise ApiError(500, "internal", "internal server error while labeling (logged on "
                           "the server)") from None
        self.metrics.texts.inc(len(texts))
        return records

    def shutdown(self) -> None:
        if self.batcher is not None:
            self.batcher.close()


# ----------------------------------------------------------------------------- validation
def _unpaired_surrogate(text: str) -> int | None:
    for i, ch in enumerate(text):
        if "\ud800" <= ch <= "\udfff":
            return i
    return None


def _check_texts(texts: list[str], field: str, settings: ServeSettings) -> None:
    if len(texts) > settings.max_texts:
        raise ApiError(413, "too_large", f"{len(texts)} texts in one request; the limit is "
                       f"--max-texts {settings.max_texts}",
                       limit={"name": "max_texts", "value": settings.max_texts})
    for i, text in enumerate(texts):
        where = field if field == "text" else f"{field}[{i}]"
        if len(text) > settings.max_text_chars:
            raise ApiError(413, "too_large", f"{where} has {len(text)} characters; the limit "
                           f"is --max-text-chars {settings.max_text_chars}",
                           limit={"name": "max_text_chars", "value": settings.max_text_chars},
                           field=where)
        pos = _unpaired_surrogate(text)
        if pos is not None:
            raise ApiError(422, "validation", f"{where}: unpaired surrogate at character {pos} "
                           f"(not a Unicode character)", field=where)


def _words_texts(words: list[list[str]]) -> list[str]:
    for i, sentence in enumerate(words):
        for j, word in enumerate(sentence):
            if word.split() != [word]:
                raise ApiError(422, "validation", f"words[{i}][{j}] = {word[:40]!r}: a word "
                               f"must be non-empty and hold no whitespace", field=f"words.{i}.{j}")
    return [" ".join(sentence) for sentence in words]


def _hf_words(record: dict[str, Any], ignore: set[str]) -> list[dict[str, Any]]:
    """HF's ``aggregation_strategy: none`` entities of one record: one per word whose tag is
    not ignored, ``index`` counting the words of the whole text from 0."""
    from seqrep.predict.tagger import split_text

    text, out, index = record["text"], [], 0
    for sentence, (_, offsets) in zip(record["sentences"], split_text(text)):
        for tag, score, (start, end) in zip(sentence["tags"], sentence["scores"], offsets):
            if tag not in ignore:
                out.append({"entity": tag, "score": score, "index": index,
                            "word": text[start:end], "start": start, "end": end})
            index += 1
    return out


def _disconnected(request: Request) -> Callable[[], Awaitable[None]]:
    """A coroutine function returning once the client of ``request`` (whose body has been
    read) disconnects: the ASGI server answers ``receive()`` with ``http.disconnect`` then."""

    async def wait() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            await asyncio.sleep(0.05)  # never spin, whatever the server sends

    return wait


# ----------------------------------------------------------------------------- the app
def create_app(run_dir: str | Path | None = None, *, labeler: SequenceLabeler | None = None,
               settings: ServeSettings | None = None, inference: InferenceConfig | None = None,
               runtime: str = "auto", device: str = "auto", precision: str = "auto",
               gate: Callable[[], str | None] | None = None) -> FastAPI:
    """The FastAPI application serving a saved labeler.

    Args:
        run_dir: a run folder or saved labeler folder; loaded in a background thread at
            startup (``/health`` answers 503 until it is ready).
        labeler: an already loaded labeler instead (tests, embedding in a program).
        settings: limits and batching.
        inference: how ``run_dir``'s labeler loads and runs (``seqrep serve`` builds one from
            its options); default: one of ``runtime``, ``device`` and ``precision``.
        runtime: torch, onnx, onnx-int8 or auto (see :func:`seqrep.export.load_labeler`).
        device, precision: where ``run_dir``'s model runs (as the commands' options).
        gate: what else ``/health`` waits for once this app's model is loaded: None when
            ready, else why not (a Ray Serve replica waits for every replica).
    """
    if run_dir is None and labeler is None:
        raise ValueError("give run_dir or labeler")
    state = _serving(run_dir, labeler, settings or ServeSettings())
    state.gate = gate
    state.inference = inference or InferenceConfig(runtime=runtime, device=device,
                                                   precision=precision)
    # FastAPIOffline: the /docs and /redoc pages load their scripts from this server
    # (fastapi-offline's copies, under /docs-assets), not from a CDN: they work offline
    app = FastAPIOffline(title="seqrep", version=seqrep.__version__,
                         lifespan=_lifespan(state, run_dir and Path(run_dir)),
                         static_url=DOCS_ASSETS,
                         description="Sequence labeling with decoder-only language models by "
                                     "sequence repetition. Spans carry character offsets into "
                                     "the text as sent: `text[start:end] == span.text`.")
    app.state.seqrep = state
    paths: set[str] = set()  # filled below: route templates, for the metrics' labels
    app.add_middleware(BodyLimit, limit=state.settings.max_body_bytes)
    app.add_middleware(Observe, metrics=state.metrics, paths=paths)
    add_error_handlers(app)
    _status_routes(app, state)
    _label_routes(app, state)
    _metrics_route(app, state)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    paths.update(getattr(r, "path", "") for r in app.routes)
    return app


def _serving(run_dir: str | Path | None, labeler: SequenceLabeler | None,
             settings: ServeSettings) -> _State:
    """What the app serves: ``labeler``, or the config of ``run_dir`` (read now, so a folder
    that holds no labeler fails with one line before the server starts)."""
    config = labeler.config if labeler is not None else None
    if config is None:
        from seqrep.model.io import read_config

        config = read_config(Path(run_dir))  # fails now, with one line, if not a labeler
    source = str(run_dir) if run_dir is not None else config.model
    return _State(source, config, labeler, settings)


def _lifespan(state: _State, run_dir: Path | None
              ) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The app's lifespan: the model loads in a thread at startup; at shutdown the load is
    waited for and the batcher closed."""

    @asynccontextmanager
    async def lifespan(app: FastAPI):  # noqa: ANN202
        loader = threading.Thread(target=state.load, args=(run_dir,),
                                  name="seqrep-load", daemon=True)
        loader.start()
        yield
        # uvicorn has let the open requests finish; queued jobs are answered before we stop
        await asyncio.get_running_loop().run_in_executor(None, loader.join)
        await asyncio.get_running_loop().run_in_executor(None, state.shutdown)

    return lifespan


def _status_routes(app: FastAPI, state: _State) -> None:
    """``GET /`` (the page), ``/health`` and ``/v1/model``."""

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    @app.get("/health", responses={503: {"description": "loading, or the model failed"}})
    async def health() -> JSONResponse:
        """200 ``{"status": "ok"}`` once the model is loaded; 503 before (or if it failed)."""
        if state.failure:
            return JSONResponse({"status": "error", "error": state.failure}, 503)
        waiting = state.gate() if state.gate is not None and state.ready.is_set() else None
        if state.ready.is_set() and waiting is None:
            return JSONResponse({"status": "ok"})
        if waiting is not None:
            return JSONResponse({"status": "loading", "waiting_for": waiting}, 503,
                                headers={"Retry-After": str(state.settings.retry_after_s)})
        return JSONResponse({"status": "loading"}, 503,
                            headers={"Retry-After": str(state.settings.retry_after_s)})

    @app.get("/v1/model", response_model=ModelInfo)
    async def model_info() -> dict[str, Any]:
        """What is served: labels, backbone, repetitions, exit layer, unmask, decoding, and
        where it runs (runtime, device, autocast; null until loaded)."""
        from seqrep.model.device import ran_on

        cfg = state.config
        types = list(dict.fromkeys(split_tag(t)[1] for t in cfg.labels if t != "O"))
        return {"labels": list(cfg.labels), "entity_types": [t for t in types if t],
                "model": cfg.model, "source": state.source, "task": cfg.task,
                "repetitions": cfg.repetitions, "exit_layer": cfg.exit_layer,
                "unmask": cfg.unmask, "decoding": cfg.decoding, "finetune": cfg.finetune,
                **ran_on(state.labeler),
                "seqrep_version": seqrep.__version__, "loaded": state.ready.is_set(),
                "limits": asdict(state.settings)
                | {"max_body_bytes": state.settings.max_body_bytes}}


def _label_routes(app: FastAPI, state: _State) -> None:
    """``POST /v1/label``, and Hugging Face's token classification at ``/v1/hf`` and ``/``."""

    @app.post("/v1/label", response_model=None, responses={
        200: {"model": LabelResponse}, 413: {"description": "over --max-texts or "
                                             "--max-text-chars"},
        422: {"description": "not JSON, or a field of the wrong type"},
        503: {"description": "loading, or the queue is full (Retry-After)"}})
    async def label(body: LabelRequest, request: Request) -> JSONResponse:
        """Label raw texts (or pre-tokenized sentences): spans with character offsets, the
        records ``seqrep predict`` prints."""
        if body.words is not None:
            _check_texts([""] * len(body.words), "words", state.settings)
            texts, pretokenized, field = _words_texts(body.words), True, "words"
        else:
            texts = [body.text] if body.text is not None else list(body.texts or [])
            pretokenized, field = False, "text" if body.text is not None else "texts"
        _check_texts(texts, field, state.settings)
        records = await state.label(texts, pretokenized, body.decoding,
                                    _disconnected(request))
        return JSONResponse({"decoding": body.decoding or state.config.decoding,
                             "results": records})

    async def hf(body: HFRequest, request: Request) -> JSONResponse:
        """Hugging Face token classification: a list of ``{entity_group, score, word, start,
        end}`` (one per span), or of ``{entity, score, index, word, start, end}`` (one per
        word) with ``aggregation_strategy: none``; one such list per text when ``inputs`` is
        a list. ``parameters`` other than ``aggregation_strategy`` (simple, first, none) and
        ``ignore_labels`` are refused with 422."""
        single = isinstance(body.inputs, str)
        texts = [body.inputs] if single else list(body.inputs)
        _check_texts(texts, "inputs", state.settings)
        params = body.parameters
        per_word = params is not None and params.aggregation_strategy == "none"
        ignore = set(params.ignore_labels if params and params.ignore_labels is not None
                     else ["O"])
        records = await state.label(texts, False, None, _disconnected(request),
                                    word_scores=per_word)
        out = [_hf_words(r, ignore) if per_word else
               [{"entity_group": s["label"], "score": s["score"], "word": s["text"],
                 "start": s["start"], "end": s["end"]} for s in r["spans"]
                if s["label"] not in ignore] for r in records]
        return JSONResponse(out[0] if single else out)

    hf_doc = {200: {"model": list[HFEntity] | list[list[HFEntity]]},
              413: {"description": "over a limit"}, 422: {"description": "bad body"},
              503: {"description": "loading or busy"}}
    app.post("/v1/hf", response_model=None, responses=hf_doc, summary="Hf")(hf)
    app.post("/", response_model=None, responses=hf_doc, summary="Hf at the root")(hf)


def _metrics_route(app: FastAPI, state: _State) -> None:
    """``GET /metrics``."""

    @app.get("/metrics", include_in_schema=True)
    async def metrics() -> Response:
        """Prometheus text format (this server's own registry)."""
        if state.batcher is not None:
            state.metrics.queue_depth.set(state.batcher.depth)
        return Response(state.metrics.render(), media_type=state.metrics.content_type)
