"""The server under abuse and failure: junk HTTP methods, a worker thread that fails or dies,
and clients that leave before their turn. Each test is bounded in time (a hang fails it)."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed")
httpx = pytest.importorskip("httpx", reason="the serve extra is not installed")

from seqrep.serve.app import ServeSettings, create_app  # noqa: E402

BOUND = 20  # seconds: far over what any of these answers takes, well under a hang


def _series(metrics: str, name: str) -> list[str]:
    return [line for line in metrics.splitlines() if line.startswith(name + "{")]


def test_junk_methods_share_one_metrics_label(labeler, serving) -> None:
    app = create_app(labeler=labeler)
    junk = [f"JUNK{i}" for i in range(40)] + ["get", "PROPFIND", "X" * 200]

    async def main() -> str:
        async with serving(app) as c:
            for method in junk:
                await c.request(method, "/health")
            await c.get("/health")
            return (await c.get("/metrics")).text

    metrics = asyncio.run(main())
    methods = {line.split('method="')[1].split('"')[0]
               for line in _series(metrics, "seqrep_requests_total")}
    # 43 junk methods, 3 routes: one label for all of them, not a series each
    assert methods == {"GET", "other"}, methods
    assert len(_series(metrics, "seqrep_requests_total")) <= 4


def _with_label(app: Any, replace) -> None:  # noqa: ANN001
    """Swap the app's batcher's _label once the model is loaded (``replace(original)``)."""
    batcher = app.state.seqrep.batcher
    batcher._label = replace(batcher._label)


def test_unexpected_error_in_the_worker_loop_answers_and_the_worker_lives(labeler,
                                                                          serving) -> None:
    app = create_app(labeler=labeler, settings=ServeSettings(max_wait_ms=0))

    def once(original):  # noqa: ANN001, ANN202
        calls = {"n": 0}

        def label(batch, rows):  # noqa: ANN001, ANN202
            calls["n"] += 1
            if calls["n"] == 1:
                raise RuntimeError("outside _label's own try")
            return original(batch, rows)
        return label

    async def main() -> None:
        async with serving(app) as c:
            _with_label(app, once)
            first = await asyncio.wait_for(c.post("/v1/label", json={"text": "Obama left."}),
                                           BOUND)
            assert first.status_code in (500, 503) and "Traceback" not in first.text
            assert "outside _label" not in first.text
            second = await asyncio.wait_for(c.post("/v1/label", json={"text": "Obama left."}),
                                            BOUND)
            assert second.status_code == 200
            assert (await c.get("/health")).status_code == 200

    asyncio.run(main())


def test_dead_worker_turns_health_503_and_requests_never_hang(labeler, serving) -> None:
    app = create_app(labeler=labeler, settings=ServeSettings(max_wait_ms=0))

    def die(original):  # noqa: ANN001, ANN202
        def label(batch, rows):  # noqa: ANN001, ANN202
            raise SystemExit("the worker thread ends")  # escapes any `except Exception`
        return label

    async def main() -> None:
        async with serving(app) as c:
            _with_label(app, die)
            first = await asyncio.wait_for(c.post("/v1/label", json={"text": "Obama left."}),
                                           BOUND)
            assert first.status_code == 503, first.text
            health = await c.get("/health")
            assert health.status_code == 503 and health.json()["status"] == "error"
            later = await asyncio.wait_for(c.post("/v1/label", json={"text": "Paris."}), BOUND)
            assert later.status_code == 503 and later.json()["error"]["type"] == "worker_dead"

    asyncio.run(main())


async def _post_then_leave(app: Any, body: dict, leave: asyncio.Event) -> list[dict]:
    """POST ``body`` to /v1/label straight over ASGI; the client disconnects when ``leave``
    is set. Returns the ASGI messages the app sent."""
    raw = json.dumps(body).encode()
    sent: list[dict] = []
    messages = [{"type": "http.request", "body": raw, "more_body": False}]

    async def receive() -> dict:
        if messages:
            return messages.pop(0)
        await leave.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": "/v1/label", "raw_path": b"/v1/label",
             "query_string": b"", "root_path": "", "server": ("test", 80),
             "client": ("127.0.0.1", 5000),
             "headers": [(b"content-type", b"application/json"),
                         (b"content-length", str(len(raw)).encode())]}
    await app(scope, receive, send)
    return sent


def _held_app(labeler, proxy, gate) -> tuple[Any, Any]:  # noqa: ANN001
    """A labeler whose batch holding the sentence "Held" waits for ``gate`` (its calls
    counted), and an app serving it without waiting for batches to fill."""

    def hold(sentences):  # noqa: ANN001, ANN202
        if ("Held",) in [tuple(s) for s in sentences]:
            gate.wait(BOUND)

    counted = proxy(labeler, hold)
    return counted, create_app(labeler=counted, settings=ServeSettings(max_wait_ms=0))


async def _hold_the_worker(c, counted, until) -> asyncio.Future:  # noqa: ANN001
    """Post "Held" and return its answer's future once the worker holds it."""
    held = asyncio.ensure_future(c.post("/v1/label", json={"words": [["Held"]]}))
    await asyncio.to_thread(until, lambda: len(counted.calls) == 1, BOUND)
    return held


def test_queued_work_of_a_client_that_left_is_never_computed(labeler, proxy, gate, serving,
                                                             until) -> None:
    counted, app = _held_app(labeler, proxy, gate)

    async def main() -> None:
        async with serving(app) as c:
            batcher = app.state.seqrep.batcher
            held = await _hold_the_worker(c, counted, until)
            leave = asyncio.Event()
            gone = asyncio.ensure_future(_post_then_leave(
                app, {"words": [["Abandoned", "work"]]}, leave))
            await asyncio.to_thread(until, lambda: batcher.depth == 1, BOUND)
            leave.set()  # the client disconnects while its job waits in the queue
            await asyncio.wait_for(gone, BOUND)
            await asyncio.to_thread(until, lambda: batcher.depth == 0, BOUND)
            gate.set()
            assert (await asyncio.wait_for(held, BOUND)).status_code == 200
            after = await c.post("/v1/label", json={"words": [["After"]]})
            assert after.status_code == 200
            metrics = (await c.get("/metrics")).text
        computed = [s for call in counted.calls for s in call]
        assert ("Abandoned", "work") not in computed
        assert computed == [("Held",), ("After",)]
        assert "seqrep_abandoned_requests_total 1.0" in metrics

    asyncio.run(main())


def test_job_taken_into_a_forming_batch_is_dropped_when_its_client_leaves(labeler, proxy,
                                                                         gate) -> None:
    """A job already taken from the queue (its batch still forming) is marked, and dropped
    before the forward pass; no timing: its encoding is held until it is abandoned."""
    from seqrep.serve.batcher import Batcher, Gone

    class Held(proxy):
        @property
        def encoder(self):  # noqa: ANN202 - the plan encodes through it, the forward does not
            real = self._labeler.encoder

            class HeldEncoder:
                def __getattr__(self, name: str):  # noqa: ANN204
                    return getattr(real, name)

                def items(self, sentences, *args, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
                    if [list(s) for s in sentences] == [["Gone", "soon"]]:
                        taken.set()
                        gate.wait(BOUND)
                    return real.items(sentences, *args, **kw)

            return HeldEncoder()

    taken = threading.Event()
    counted = Held(labeler, lambda s: None)
    batcher = Batcher(counted, batch_tokens=100_000, max_wait_ms=60_000)
    kept = batcher.submit(["Kept"], pretokenized=True)
    gone = batcher.submit(["Gone soon"], pretokenized=True)
    batcher.start()
    assert taken.wait(BOUND)  # the worker holds `gone` in the forming batch
    assert batcher.abandon(gone) and batcher.depth == 0
    gate.set()
    batcher.close()  # closing ends the batch's wait at once
    assert kept.result(BOUND)[0]["text"] == "Kept"
    with pytest.raises(Gone):
        gone.result(BOUND)
    assert [s for call in counted.calls for s in call] == [("Kept",)]
    assert batcher.abandoned == 1


def test_cancelled_request_task_drops_its_queued_job(labeler, proxy, gate, serving,
                                                     until) -> None:
    """A request task cancelled while its job waits in the queue takes the job out at once,
    as a client's disconnect does: the queue is empty and the drop counted before the worker
    (held on another batch) could reach it."""
    counted, app = _held_app(labeler, proxy, gate)

    async def main() -> None:
        async with serving(app) as c:
            state, batcher = app.state.seqrep, app.state.seqrep.batcher
            held = await _hold_the_worker(c, counted, until)
            task = asyncio.ensure_future(state.label(["Cancelled work"], True, None))
            await asyncio.to_thread(until, lambda: batcher.depth == 1, BOUND)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert batcher.depth == 0 and batcher.abandoned == 1  # the worker is still held
            gate.set()
            assert (await asyncio.wait_for(held, BOUND)).status_code == 200
        assert [s for call in counted.calls for s in call] == [("Held",)]

    asyncio.run(main())
