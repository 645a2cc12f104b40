"""The HTTP API on a tiny random labeler: each route's answer, each error status, and that no
user input gets a 500 or a traceback."""

from __future__ import annotations

import asyncio
import json
import random
import threading

import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed")
pytest.importorskip("httpx", reason="the serve extra is not installed")

from fastapi.testclient import TestClient  # noqa: E402

from seqrep.predict.tagger import predict_text  # noqa: E402
from seqrep.serve.app import ServeSettings, create_app  # noqa: E402

SMALL = ServeSettings(max_text_chars=300, max_texts=4, max_queue=8)


@pytest.fixture(scope="module")
def client(labeler):
    app = create_app(labeler=labeler, settings=SMALL)
    with TestClient(app, raise_server_exceptions=False) as c:
        for _ in range(500):
            if c.get("/health").status_code == 200:
                break
            threading.Event().wait(0.01)
        yield c


def test_label_text_is_predict_text(client, labeler, same, texts) -> None:
    for text in texts:
        r = client.post("/v1/label", json={"text": text})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["decoding"] == labeler.config.decoding
        same(body["results"], predict_text(labeler, [text]))
        assert body["results"][0]["spans"], "the random model labels something in each text"


def test_label_texts_in_order(client, labeler, same, texts) -> None:
    r = client.post("/v1/label", json={"texts": texts[:4]})
    assert r.status_code == 200
    same(r.json()["results"], predict_text(labeler, texts[:4]))


def test_label_words_joins_with_spaces(client, labeler, same) -> None:
    words = [["Obama", "visited", "Paris", "."], ["Emoji", "🙂", "and", "東京"], []]
    r = client.post("/v1/label", json={"words": words})
    assert r.status_code == 200
    results = r.json()["results"]
    assert [x["text"] for x in results] == ["Obama visited Paris .", "Emoji 🙂 and 東京", ""]
    assert [s["words"] for s in results[0]["sentences"]] == [words[0]]
    same(results, predict_text(labeler, [" ".join(w) for w in words], pretokenized=True))


def test_decoding_override(client, labeler, same, texts) -> None:
    for method in ("greedy", "constrained"):
        r = client.post("/v1/label", json={"text": texts[1], "decoding": method})
        assert r.status_code == 200 and r.json()["decoding"] == method
        same(r.json()["results"], predict_text(labeler, [texts[1]], method))


@pytest.mark.parametrize("text", ["", "   ", "\n\n", "\t"])
def test_empty_text_gives_no_spans(client, text: str) -> None:
    r = client.post("/v1/label", json={"text": text})
    assert r.status_code == 200
    assert r.json()["results"] == [{"text": text, "sentences": [], "spans": []}]


@pytest.mark.parametrize("route", ["/v1/hf", "/"])
def test_huggingface_shape(client, labeler, route: str, texts) -> None:
    single = client.post(route, json={"inputs": texts[0]})
    assert single.status_code == 200
    want = predict_text(labeler, [texts[0]])[0]["spans"]
    assert single.json() == [{"entity_group": s["label"], "score": s["score"], "word": s["text"],
                              "start": s["start"], "end": s["end"]} for s in want]
    many = client.post(route, json={"inputs": [texts[0], "", texts[2]],
                                    "parameters": {"aggregation_strategy": "simple"}})
    assert many.status_code == 200
    got = many.json()
    assert len(got) == 3 and got[0] == single.json() and got[1] == []
    for e in got[2]:
        assert texts[2][e["start"]:e["end"]] == e["word"]


def test_health_and_model(client, labeler) -> None:
    assert client.get("/health").json() == {"status": "ok"}
    info = client.get("/v1/model").json()
    cfg = labeler.config
    assert info["labels"] == cfg.labels and info["entity_types"] == ["PER", "LOC"]
    assert (info["repetitions"], info["exit_layer"], info["unmask"], info["decoding"]) == \
        (cfg.repetitions, cfg.exit_layer, cfg.unmask, cfg.decoding)
    import seqrep

    assert info["seqrep_version"] == seqrep.__version__ and info["loaded"] is True
    assert (info["runtime"], info["device"], info["autocast"]) == ("torch", "cpu", "fp32")
    assert info["limits"]["max_texts"] == SMALL.max_texts


def test_page_docs_and_static(client) -> None:
    page = client.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert '<textarea id="input"' in page.text and "/static/app.js" in page.text
    assert "http" not in page.text.split("<body>")[0].replace('href="/static', "")  # no CDN
    for name in ("app.js", "style.css"):
        assert client.get(f"/static/{name}").status_code == 200
    assert client.get("/docs").status_code == 200
    spec = client.get("/openapi.json").json()
    assert {"/v1/label", "/v1/hf", "/health", "/v1/model", "/metrics"} <= set(spec["paths"])


def test_metrics_prometheus_text(client) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    client.post("/v1/label", json={"text": "Obama visited Paris."})
    client.post("/v1/label", json={"text": 3})
    r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(r.text)}
    for name in ("seqrep_requests", "seqrep_errors", "seqrep_request_duration_seconds",
                 "seqrep_batch_requests", "seqrep_batch_sentences", "seqrep_queue_depth"):
        assert name in families, name
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in families.values() for s in f.samples}
    ok = ("seqrep_requests_total", (("method", "POST"), ("route", "/v1/label"),
                                    ("status", "200")))
    bad = ("seqrep_errors_total", (("kind", "validation"), ("route", "/v1/label")))
    assert samples[ok] >= 1 and samples[bad] >= 1
    assert samples[("seqrep_request_duration_seconds_count", (("route", "/v1/label"),))] >= 2


def test_separate_apps_have_separate_registries(labeler) -> None:
    a, b = create_app(labeler=labeler), create_app(labeler=labeler)
    assert a.state.seqrep.metrics.registry is not b.state.seqrep.metrics.registry


# ----------------------------------------------------------------------------- errors
def _error(r, status: int) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    assert "Traceback" not in r.text
    return r.json()["error"]


def test_text_over_limit_413(client) -> None:
    err = _error(client.post("/v1/label", json={"text": "a" * 301}), 413)
    assert "--max-text-chars 300" in err["message"] and err["limit"]["name"] == "max_text_chars"
    err = _error(client.post("/v1/label", json={"texts": ["ok", "b" * 301]}), 413)
    assert err["field"] == "texts[1]"
    err = _error(client.post("/v1/hf", json={"inputs": "c" * 301}), 413)
    assert "max-text-chars" in err["message"]
    words = [["w"] * 151]  # 151 words + 150 spaces = 301 characters
    assert "max-text-chars" in _error(client.post("/v1/label", json={"words": words}),
                                      413)["message"]


def test_too_many_texts_413(client) -> None:
    for body in ({"texts": ["a"] * 5}, {"words": [["a"]] * 5}):
        err = _error(client.post("/v1/label", json=body), 413)
        assert "--max-texts 4" in err["message"] and err["limit"] == {"name": "max_texts",
                                                                        "value": 4}
    assert "max-texts" in _error(client.post("/", json={"inputs": ["a"] * 5}), 413)["message"]


def test_oversize_body_413(client) -> None:
    big = json.dumps({"text": "a" * (SMALL.max_body_bytes + 10)})
    err = _error(client.post("/v1/label", content=big,
                             headers={"content-type": "application/json"}), 413)
    assert err["limit"]["name"] == "max_body_bytes"

    def chunks():  # no Content-Length: the limit is found while reading
        for i in range(0, len(big), 65536):
            yield big[i:i + 65536].encode()

    err = _error(client.post("/v1/label", content=chunks(),
                             headers={"content-type": "application/json"}), 413)
    assert err["limit"]["name"] == "max_body_bytes"


BAD = [
    (b'{"text": ', "body", "JSON"),
    (b"not json at all", "body", "JSON"),
    (b"[1, 2]", "body", "JSON object"),
    (b'"just a string"', "body", "JSON object"),
    (b"{}", "body", "exactly one of"),
    (b'{"text": "a", "texts": ["b"]}', "body", "exactly one of"),
    (b'{"text": 3}', "text", "string"),
    (b'{"text": null}', "body", "exactly one of"),
    (b'{"texts": "not a list"}', "texts", "list"),
    (b'{"texts": ["ok", 5]}', "texts.1", "string"),
    (b'{"words": ["a", "b"]}', "words.0", "list"),
    (b'{"words": [["a b"]]}', "words.0.0", "whitespace"),
    (b'{"words": [[""]]}', "words.0.0", "non-empty"),
    (b'{"text": "a", "decoding": "beam"}', "decoding", "greedy"),
    (b'{"text": "a", "colour": "red"}', "colour", "Extra"),
    (b'{"text": "\\ud800 lone surrogate"}', "text", "surrogate"),
]


@pytest.mark.parametrize("body,field,words", BAD)
def test_bad_body_422_names_the_field(client, body: bytes, field: str, words: str) -> None:
    err = _error(client.post("/v1/label", content=body,
                             headers={"content-type": "application/json"}), 422)
    assert field in (err.get("fields") or [err.get("field")]), err
    assert words.lower() in err["message"].lower(), err


def test_hf_bad_bodies_422(client) -> None:
    for body in ({}, {"inputs": 3}, {"inputs": ["a", None]}):
        err = _error(client.post("/v1/hf", json=body), 422)
        assert any(f.startswith("inputs") for f in err["fields"]), err


def test_body_not_declared_json_422(client) -> None:
    for headers in ({"content-type": "text/plain"}, {}):
        err = _error(client.post("/v1/label", content=b'{"text": "a"}', headers=headers), 422)
        assert "application/json" in err["message"]


def test_unknown_route_and_method_are_json(client) -> None:
    assert _error(client.get("/nowhere"), 404)["type"] == "not_found"
    assert _error(client.get("/v1/label"), 405)["type"] == "method_not_allowed"


def test_no_user_input_gets_a_500(client) -> None:
    rng = random.Random(0)
    alphabet = ["a", "Z", " ", "\n", "\t", "\x00", "\x07", "\u200b", "\u202e", "\u0301", "🙂",
                "👩‍👩‍👧", "東", ".", "'", "’", "-", "U.S.", "n't", "\r\n", "\ufeff", "\U0010ffff",
                "ﷺ", "\u00ad", "$", "\\", '"']
    bodies: list[bytes] = [b"", b"\xff\xfe", b"{" * 1000, b"[" * 5000 + b"]" * 5000,
                           b'{"text": 1e999}', b'{"texts": [[[[[]]]]]}', b"\x00\x01",
                           json.dumps({"words": [["a"] * 300]}).encode(),
                           json.dumps({"text": "x" * 300}).encode(),  # one 300-char word
                           json.dumps({"text": "." * 300}).encode()]
    for _ in range(40):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        bodies.append(json.dumps({"text": text}, ensure_ascii=rng.random() < 0.5).encode())
    for body in bodies:
        r = client.post("/v1/label", content=body, headers={"content-type": "application/json"})
        assert r.status_code in (200, 413, 422), (body[:80], r.status_code, r.text[:300])
        assert "Traceback" not in r.text and r.headers["content-type"] == "application/json"
        if r.status_code == 200:
            for rec in r.json()["results"]:
                for s in rec["spans"]:
                    assert rec["text"][s["start"]:s["end"]] == s["text"]


# ----------------------------------------------------------------------------- lifecycle
def test_health_503_until_loaded(labeler_dir, labeler, monkeypatch, gate, serving) -> None:
    from seqrep.model.labeler import SequenceLabeler

    def slow_load(path, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        gate.wait(30)
        return labeler

    monkeypatch.setattr(SequenceLabeler, "from_pretrained", staticmethod(slow_load))
    app = create_app(labeler_dir)

    async def main() -> None:
        async with serving(app, ready=False) as c:
            r = await c.get("/health")
            assert r.status_code == 503 and r.json() == {"status": "loading"}
            r = await c.post("/v1/label", json={"text": "Obama"})
            err = _error(r, 503)
            assert err["type"] == "not_ready" and r.headers["retry-after"] == "1"
            assert (await c.get("/v1/model")).json()["loaded"] is False
            gate.set()
            for _ in range(1000):
                if (await c.get("/health")).status_code == 200:
                    break
                await asyncio.sleep(0.01)
            assert (await c.get("/health")).json() == {"status": "ok"}
            assert (await c.post("/v1/label", json={"text": "Obama"})).status_code == 200

    asyncio.run(main())


def test_load_failure_reported_by_health(labeler_dir, monkeypatch, serving) -> None:
    from seqrep.model.labeler import SequenceLabeler

    def broken(path, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        raise OSError("weights unreadable")

    monkeypatch.setattr(SequenceLabeler, "from_pretrained", staticmethod(broken))

    async def main() -> None:
        async with serving(create_app(labeler_dir), ready=False) as c:
            for _ in range(500):
                r = await c.get("/health")
                if r.json()["status"] != "loading":
                    break
                await asyncio.sleep(0.01)
            assert r.status_code == 503 and "weights unreadable" in r.json()["error"]
            err = _error(await c.post("/v1/label", json={"text": "a"}), 503)
            assert "failed to load" in err["message"]

    asyncio.run(main())


def test_not_a_labeler_folder_fails_at_creation(tmp_path) -> None:
    from seqrep.errors import ModelError

    with pytest.raises(ModelError, match="not a saved labeler"):
        create_app(tmp_path)


def test_queue_full_503_with_retry_after(labeler, proxy, gate, serving, until) -> None:
    slow = proxy(labeler, lambda s: gate.wait(30))
    app = create_app(labeler=slow, settings=ServeSettings(max_queue=1, max_wait_ms=0))
    batcher = lambda: app.state.seqrep.batcher  # noqa: E731

    async def main() -> None:
        async with serving(app) as c:
            first = asyncio.create_task(c.post("/v1/label", json={"text": "Obama one."}))
            await asyncio.to_thread(until, lambda: len(slow.calls) == 1)  # worker is busy
            second = asyncio.create_task(c.post("/v1/label", json={"text": "Obama two."}))
            await asyncio.to_thread(until, lambda: batcher().depth == 1)  # waiting
            r = await c.post("/v1/label", json={"text": "Obama three."})
            err = _error(r, 503)
            assert err["type"] == "queue_full" and "--max-queue 1" in err["message"]
            assert r.headers["retry-after"] == "1"
            gate.set()
            assert [x.status_code for x in await asyncio.gather(first, second)] == [200, 200]
            metrics = (await c.get("/metrics")).text
            assert 'seqrep_errors_total{kind="queue_full",route="/v1/label"} 1.0' in metrics

    asyncio.run(main())


def test_shutdown_finishes_queued_requests(labeler, proxy, gate, serving, until) -> None:
    slow = proxy(labeler, lambda s: gate.wait(30))
    app = create_app(labeler=slow, settings=ServeSettings(max_wait_ms=0, max_batch_tokens=8))
    texts = [f"Obama visited Paris {i} times." for i in range(5)]

    async def main() -> None:
        import httpx

        lifespan = app.router.lifespan_context(app)
        await lifespan.__aenter__()
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")
        await asyncio.to_thread(until, lambda: app.state.seqrep.ready.is_set())
        tasks = [asyncio.create_task(client.post("/v1/label", json={"text": t})) for t in texts]
        await asyncio.to_thread(until, lambda: len(slow.calls) == 1
                                and app.state.seqrep.batcher.depth == 4)
        stop = asyncio.create_task(lifespan.__aexit__(None, None, None))  # shutdown starts
        await asyncio.to_thread(until, lambda: app.state.seqrep.batcher._closing)
        late = await client.post("/v1/label", json={"text": "too late"})
        assert _error(late, 503)["type"] == "shutting_down"
        gate.set()
        answers = await asyncio.gather(*tasks)
        await stop
        await client.aclose()
        assert [a.status_code for a in answers] == [200] * 5
        assert [a.json()["results"][0]["text"] for a in answers] == texts
        assert not app.state.seqrep.batcher._thread.is_alive()

    asyncio.run(main())


def test_internal_error_is_json_without_traceback(labeler, proxy, serving) -> None:
    def boom(sentences):  # noqa: ANN001, ANN202
        raise RuntimeError("kernel exploded")

    app = create_app(labeler=proxy(labeler, boom))

    async def main() -> None:
        async with serving(app) as c:
            r = await c.post("/v1/label", json={"text": "Obama visited Paris."})
            err = _error(r, 500)
            assert err["type"] == "internal" and "kernel exploded" not in r.text
            # the server survives and still answers what needs no model
            assert (await c.post("/v1/label", json={"text": ""})).status_code == 200

    asyncio.run(main())


def test_an_error_outside_the_labeler_is_json_500_and_logged(labeler, caplog) -> None:
    """The app's catch-all handler: any exception a route lets out (here one added to the app,
    not the labeler's, which the route itself turns into an ApiError) is the JSON 500 written
    here, logged with its traceback on the server and never shown to the client."""
    import logging

    app = create_app(labeler=labeler)

    @app.get("/boom")
    async def boom() -> None:
        raise RuntimeError("kernel exploded")

    with caplog.at_level(logging.ERROR, logger="seqrep.serve"):
        r = TestClient(app, raise_server_exceptions=False).get("/boom")
    assert _error(r, 500) == {"code": 500, "type": "internal",
                              "message": "internal server error (logged on the server)"}
    assert "kernel exploded" not in r.text
    assert any(rec.message == "internal error on /boom" and rec.exc_info
               and "kernel exploded" in str(rec.exc_info[1]) for rec in caplog.records)


def test_a_run_folder_loads_with_the_runtime_device_and_precision_asked(labeler, labeler_dir,
                                                                        serving, monkeypatch
                                                                        ) -> None:
    """create_app(run_dir, runtime=, device=, precision=) hands each to the loader as given,
    in one InferenceConfig (the model loads at startup, in the lifespan's thread)."""
    import seqrep.export

    asked = []

    def load(run_dir, settings):  # noqa: ANN001, ANN202
        asked.append((run_dir, settings.runtime, settings.device, settings.precision))
        return labeler

    monkeypatch.setattr(seqrep.export, "load", load)
    app = create_app(labeler_dir, runtime="torch", device="cpu", precision="fp32")

    async def main() -> None:
        async with serving(app):
            pass

    asyncio.run(main())
    assert asked == [(labeler_dir, "torch", "cpu", "fp32")]
