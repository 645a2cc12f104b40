"""The server's JSON errors and its two pure ASGI middlewares (request metrics, body limit).

Every error a client sees is ``{"error": {"code", "type", "message", ...}}`` with its status;
:class:`ApiError` carries one from a route, :func:`error_response` writes one, and
:func:`add_error_handlers` makes an app answer every other error that way.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from seqrep.serve.metrics import Metrics

log = logging.getLogger("seqrep.serve")

#: HTTP methods that get a series of their own in the metrics; any other is counted as
#: "other", so a client cannot add series by inventing methods.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE",
                     "CONNECT"})


class ApiError(StarletteHTTPException):
    """An error answered as JSON: status, a type name, a message and optional extra fields."""

    def __init__(self, status: int, kind: str, message: str, headers: dict | None = None,
                 **extra: Any) -> None:
        super().__init__(status, message, headers)
        self.kind, self.extra = kind, extra


def error_response(status: int, kind: str, message: str, headers: dict | None = None,
           **extra: Any) -> JSONResponse:
    return JSONResponse({"error": {"code": status, "type": kind, "message": message, **extra}},
                        status, headers=headers)


def add_error_handlers(app: FastAPI) -> None:
    """Answer every error of ``app`` as JSON: a body that does not validate names its fields
    (422), an :class:`ApiError` is answered as it says, FastAPI's own HTTP errors get a type,
    and anything else is logged and answered 500 without a traceback."""

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        message, fields, errors = _validation_message(list(exc.errors()))
        request.scope["seqrep_error"] = "validation"
        return error_response(422, "validation", message, fields=fields, detail=errors)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if isinstance(exc, ApiError):
            request.scope["seqrep_error"] = exc.kind
            return error_response(exc.status_code, exc.kind, exc.detail, exc.headers, **exc.extra)
        if exc.status_code == 400:  # FastAPI could not parse the body (nested too deeply ...)
            request.scope["seqrep_error"] = "validation"
            return error_response(422, "validation", "body: could not be read as JSON (nested too "
                                  "deeply, or not JSON)", fields=["body"])
        kind = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http")
        return error_response(exc.status_code, kind, str(exc.detail), exc.headers)

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> JSONResponse:
        log.error("internal error on %s", request.url.path, exc_info=exc)
        return error_response(500, "internal", "internal server error (logged on the server)")


def _validation_message(errors: list[dict]) -> tuple[str, list[str], list[dict]]:
    fields, parts, clean = [], [], []
    for e in errors:
        loc = [str(x) for x in e.get("loc", ()) if x != "body"]
        name = ".".join(loc) or "body"
        msg = e.get("msg", "invalid")
        if e.get("type") == "json_invalid":
            name = "body"
            msg = f"not valid JSON ({e.get('ctx', {}).get('error', 'decode error')} at "\
                  f"character {loc[0] if loc else '?'})"
        elif e.get("type") in ("model_attributes_type", "dict_type") and not loc:
            msg = "the body must be a JSON object (send Content-Type: application/json)"
        fields.append(name)
        parts.append(f"{name}: {msg}")
        clean.append({"loc": list(e.get("loc", ())), "msg": msg, "type": e.get("type")})
    return "; ".join(parts), fields, clean


class Observe:
    """Pure ASGI middleware: count every HTTP request by route template and status, time it."""

    def __init__(self, app: Any, metrics: Metrics, paths: set[str]) -> None:
        self.app, self.metrics, self.paths = app, metrics, paths

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = {"code": 500}
        start = time.perf_counter()
        path = scope["path"]
        # the route template (or a fixed name) labels the series: never a raw client path
        name = path if path in self.paths else "/static" if path.startswith(
            ("/static/", "/docs-assets/")) else "unmatched"
        self.metrics.in_progress.labels(name).inc()

        async def send_status(message: dict) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        except asyncio.CancelledError:
            status["code"] = 499  # the client went away (nginx's code): not a server error
            raise
        finally:
            self.metrics.in_progress.labels(name).dec()
            code = status["code"]
            method = scope["method"] if scope["method"] in METHODS else "other"
            self.metrics.requests.labels(name, method, str(code)).inc()
            self.metrics.latency.labels(name).observe(time.perf_counter() - start)
            if code >= 400:
                kind = scope.get("seqrep_error") or {404: "not_found", 405: "method",
                                                     413: "too_large", 422: "validation",
                                                     499: "client_closed",
                                                     503: "unavailable"}.get(code, "other")
                self.metrics.errors.labels(name, kind if code < 500 or code == 503
                                           else "internal").inc()


class BodyLimit:
    """Pure ASGI middleware: a body over ``limit`` bytes gets a JSON 413, whether announced by
    Content-Length or found while reading a chunked body."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app, self.limit = app, limit

    def _error(self) -> ApiError:
        return ApiError(413, "too_large", f"request body over {self.limit} bytes (the room "
                        f"--max-texts x --max-text-chars needs)",
                        limit={"name": "max_body_bytes", "value": self.limit})

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            scope["seqrep_error"] = "too_large"
            err = self._error()
            answer = error_response(err.status_code, err.kind, err.detail, **err.extra)
            await answer(scope, receive, send)
            return
        seen = 0

        async def counted() -> dict:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise self._error()  # FastAPI passes HTTP errors from reading the body on
            return message

        await self.app(scope, counted, send)
