"""Running the app under uvicorn: the port is bound before anything loads (a busy port is one
line, exit 2), and a request must arrive whole within a deadline (uvicorn has none).

uvicorn 0.54's own timeouts do not cover a slow client: ``timeout_keep_alive`` starts only
after a response and restarts on every byte received, so a connection that sends its request
line and headers a byte at a time (slowloris), or never sends anything, stays open for good.
:func:`deadline_protocol` adds the missing timer to uvicorn's h11 protocol: from the moment a
connection opens (or its previous response ends) the request line, headers and body must all
arrive within ``request_timeout_s``, else the connection is closed. The timer stops once the
request is in, so a long computation is never cut.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import TYPE_CHECKING, Any

from seqrep.errors import ConfigError
from seqrep.serve.settings import ServeSettings

if TYPE_CHECKING:
    import uvicorn

log = logging.getLogger("seqrep.serve")

#: The h11 limit on a request line and headers together, in bytes (uvicorn's default, stated).
MAX_HEADER_BYTES = 16 * 1024


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening-ready TCP socket bound to ``host:port`` (uvicorn's own way: SO_REUSEADDR,
    IPv6 for an address with a colon), or a ConfigError naming the port if it is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as err:
        sock.close()
        reason = "already in use" if err.errno in (98, 48, 10048) else \
            (err.strerror or str(err)).lower()
        raise ConfigError(f"--port {port}: cannot listen on {host}:{port} ({reason}); choose "
                          f"another --port or stop what uses it") from None
    sock.set_inheritable(True)
    return sock


def deadline_protocol(request_timeout_s: float) -> type:
    """uvicorn's h11 protocol with a deadline for receiving each whole request."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class DeadlineH11Protocol(H11Protocol):
        timeout = request_timeout_s
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def handle_events(self) -> None:
            super().handle_events()
            if self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
                self._disarm()  # the request is in (or the connection is over)

        def on_response_complete(self) -> None:
            self._arm()  # the next request, if any, has its own deadline
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(self.timeout, self._expired)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expired(self) -> None:
            self._deadline = None
            if not self.transport.is_closing():
                log.info("closed a connection from %s: no whole request within %g s",
                         self.client and self.client[0], self.timeout)
                self.transport.close()

    return DeadlineH11Protocol


def make_server(app: Any, *, settings: ServeSettings | None = None, keep_alive_s: int = 5,
                log_level: str = "info") -> uvicorn.Server:
    """A uvicorn server for ``app`` with the request deadline and limits; run it with
    ``server.run(sockets=[bind_socket(host, port)])``.

    Args:
        settings: the server's limits (default: ``ServeSettings()``, the defaults of
            ``seqrep serve``): a request's line, headers and body must arrive within
            ``request_timeout`` seconds; open connections (or running requests) past
            ``max_connections`` get 503.
        keep_alive_s: an idle keep-alive connection is closed after this.
    """
    import uvicorn

    settings = ServeSettings() if settings is None else settings
    config = uvicorn.Config(app, http=deadline_protocol(settings.request_timeout),
                            timeout_keep_alive=keep_alive_s,
                            limit_concurrency=settings.max_connections,
                            h11_max_incomplete_event_size=MAX_HEADER_BYTES,
                            log_level=log_level, access_log=False, lifespan="on")
    return uvicorn.Server(config)
