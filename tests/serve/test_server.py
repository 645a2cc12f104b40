"""The app under the real uvicorn server ``seqrep serve`` runs, on 127.0.0.1 in a thread: slow
clients are cut off, and a shutdown finishes the request being computed (no timing: the
computation is held until the shutdown has begun)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("uvicorn", reason="the serve extra is not installed")
httpx = pytest.importorskip("httpx", reason="the serve extra is not installed")

from seqrep.serve.app import ServeSettings, create_app  # noqa: E402
from seqrep.serve.server import bind_socket, make_server  # noqa: E402

BOUND = 20  # seconds: far over any answer here, well under a hang


@contextlib.contextmanager
def running(app: Any, **options: Any) -> Iterator[tuple[str, Any]]:
    """``app`` served by make_server on a free loopback port: (base url, server)."""
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    server = make_server(app, log_level="warning", **options)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        end = time.monotonic() + BOUND
        while not server.started:
            assert thread.is_alive() and time.monotonic() < end, "the server did not start"
            time.sleep(0.01)
        yield f"http://127.0.0.1:{port}", server
    finally:
        server.should_exit = True
        thread.join(BOUND)
        sock.close()


def _closed_by_server(conn: socket.socket, within: float) -> bool:
    """True if the server closes ``conn`` within ``within`` seconds (it reads EOF or a reset)."""
    conn.settimeout(within)
    try:
        while conn.recv(4096):
            pass  # a 4xx answer may come first; then the close
        return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_slow_clients_are_cut_off_at_the_request_deadline(labeler) -> None:
    deadline = 0.5
    app = create_app(labeler=labeler)
    with running(app, settings=ServeSettings(request_timeout=deadline)) as (base, _):
        idle = socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1])))
        slow = []  # slowloris: a header line now and then, the headers never end
        for _ in range(6):
            conn = socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1])))
            conn.sendall(b"POST /v1/label HTTP/1.1\r\nHost: x\r\n")
            slow.append(conn)
        body = socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1])))
        body.sendall(b"POST /v1/label HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                     b"\r\nContent-Length: 100\r\n\r\n{\"text\": ")  # the body never ends
        for _ in range(6):  # trickle: each byte would restart uvicorn's keep-alive timer
            for conn in slow:
                with contextlib.suppress(OSError):  # closed by the server already
                    conn.sendall(b"X-a: b\r\n")
            time.sleep(deadline / 4)
        for conn in [idle, *slow, body]:
            with conn:
                assert _closed_by_server(conn, 5), "a slow connection stayed open"
        # a normal client is not affected, and a long computation is never cut
        r = httpx.post(base + "/v1/label", json={"text": "Obama visited Paris."}, timeout=BOUND)
        assert r.status_code == 200


def _accepts(base: str) -> bool:
    try:
        socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1])), 1).close()
        return True
    except OSError:
        return False


def test_shutdown_finishes_the_request_being_computed(labeler, proxy, gate) -> None:
    started = threading.Event()

    def hold(sentences):  # noqa: ANN001, ANN202
        started.set()
        gate.wait(BOUND)  # computed only after the shutdown has begun

    app = create_app(labeler=proxy(labeler, hold), settings=ServeSettings(max_wait_ms=0))
    answer: dict = {}
    with running(app) as (base, server):
        def send() -> None:
            answer["r"] = httpx.post(base + "/v1/label", json={"text": "Obama left Paris."},
                                     timeout=BOUND)

        sender = threading.Thread(target=send)
        sender.start()
        assert started.wait(BOUND)
        server.should_exit = True  # what SIGINT / SIGTERM do
        end = time.monotonic() + BOUND
        while _accepts(base):  # the shutdown has begun once the port refuses connections
            assert time.monotonic() < end, "the server never began to shut down"
            time.sleep(0.01)
        assert "r" not in answer  # held: the shutdown began before the answer
        gate.set()
        sender.join(BOUND)
    assert answer["r"].status_code == 200
    assert answer["r"].json()["results"][0]["text"] == "Obama left Paris."


def test_next_request_on_a_kept_alive_connection_has_its_own_deadline(labeler) -> None:
    """After a response the timer starts again: a second request trickled a header line at a
    time is cut off at the deadline (uvicorn's keep-alive, set far longer here, restarts on
    every byte and would keep it open)."""
    deadline = 0.5
    app = create_app(labeler=labeler)
    limits = ServeSettings(request_timeout=deadline)
    with running(app, settings=limits, keep_alive_s=60) as (base, _):
        with socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1]))) as conn:
            conn.settimeout(BOUND)
            conn.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = b""
            while not answer.endswith(b"}"):  # the whole first response (a JSON body)
                answer += conn.recv(4096)
            conn.sendall(b"POST /v1/label HTTP/1.1\r\nHost: x\r\n")
            for _ in range(6):  # 1.5 deadlines of trickle
                with contextlib.suppress(OSError):  # closed by the server already
                    conn.sendall(b"X-a: b\r\n")
                time.sleep(deadline / 4)
            assert _closed_by_server(conn, 5), "the second request had no deadline"


def test_server_limits_come_from_the_serve_settings() -> None:
    """The request deadline and the connection limit are the ServeSettings' (one home for
    their defaults, the 20 s and 1,000 the README states)."""
    server = make_server(object(), settings=ServeSettings(request_timeout=3.5, max_connections=7))
    assert server.config.http.timeout == 3.5
    assert server.config.limit_concurrency == 7
    plain = make_server(object())
    assert plain.config.http.timeout == 20  # README: [--request-timeout 20]
    assert plain.config.limit_concurrency == 1000  # README: [--max-connections 1000]
