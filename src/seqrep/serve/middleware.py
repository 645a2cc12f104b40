"""The server's JSON errors and its two pure ASGI middlewares (request metrics, body limit).

Every error a client sees is ``{"error": {"code", "type", "message", ...}}`` with its status;
:class:`ApiError` carries one from a route, :func:`error_response` writes one.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from seqrep.serve.metrics import Metrics

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
