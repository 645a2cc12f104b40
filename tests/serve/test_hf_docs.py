"""The Hugging Face route honours HF's token-classification ``parameters`` (or refuses what it
cannot honour with a 422), and the OpenAPI pages work without internet (no CDN)."""

from __future__ import annotations

import re
import threading

import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed")
pytest.importorskip("httpx", reason="the serve extra is not installed")

from fastapi.testclient import TestClient  # noqa: E402

from seqrep.predict.tagger import predict_text, split_text  # noqa: E402
from seqrep.serve.app import create_app  # noqa: E402

TEXT = "Obama visited Paris and Peter Blackburn met Nadim Ladki in Berlin ."


@pytest.fixture(scope="module")
def client(labeler):
    with TestClient(create_app(labeler=labeler), raise_server_exceptions=False) as c:
        for _ in range(500):
            if c.get("/health").status_code == 200:
                break
            threading.Event().wait(0.01)
        yield c


def _hf(client, parameters: dict | None):  # noqa: ANN001, ANN202
    body = {"inputs": TEXT} | ({"parameters": parameters} if parameters is not None else {})
    return client.post("/v1/hf", json=body)


def test_aggregation_none_gives_one_entity_per_word(client, labeler) -> None:
    import torch

    r = _hf(client, {"aggregation_strategy": "none", "ignore_labels": []})
    assert r.status_code == 200, r.text
    got = r.json()
    # the oracle: the words' offsets from the splitter, their tags and softmax probabilities
    # from the labeler's logits (greedy argmax would differ under constrained decoding, so the
    # tags come from the record and each score is the probability of that tag)
    (_, offsets), = split_text(TEXT)
    words = [TEXT[s:e] for s, e in offsets]
    tags = predict_text(labeler, [TEXT])[0]["sentences"][0]["tags"]
    probs = torch.softmax(labeler.word_logits([words], docs=None)[0].float(), -1)
    want = [{"entity": t, "index": i, "word": w, "start": s, "end": e,
             "score": float(probs[i, labeler.config.labels.index(t)])}
            for i, (t, w, (s, e)) in enumerate(zip(tags, words, offsets))]
    assert [{k: v for k, v in g.items() if k != "score"} for g in got] == \
        [{k: v for k, v in w.items() if k != "score"} for w in want]
    for g, w in zip(got, want):
        assert abs(g["score"] - w["score"]) < 1e-3
    # HF's default ignore_labels is ["O"]: the O words are left out
    default = _hf(client, {"aggregation_strategy": "none"}).json()
    assert default == [g for g in got if g["entity"] != "O"]


def test_ignore_labels_drops_those_groups(client, labeler) -> None:
    spans = predict_text(labeler, [TEXT])[0]["spans"]
    kinds = {s["label"] for s in spans}
    assert kinds, "the tiny model found no span in the test text"
    drop = sorted(kinds)[0]
    for strategy in (None, "simple", "first"):
        params = {"ignore_labels": [drop]} | ({"aggregation_strategy": strategy}
                                              if strategy else {})
        r = _hf(client, params)
        assert r.status_code == 200, r.text
        assert r.json() == [{"entity_group": s["label"], "score": s["score"],
                             "word": s["text"], "start": s["start"], "end": s["end"]}
                            for s in spans if s["label"] != drop]


@pytest.mark.parametrize("parameters,field", [
    ({"aggregation_strategy": "average"}, "parameters.aggregation_strategy"),
    ({"aggregation_strategy": "max"}, "parameters.aggregation_strategy"),
    ({"aggregation_strategy": "bogus"}, "parameters.aggregation_strategy"),
    ({"ignore_labels": "O"}, "parameters.ignore_labels"),
    ({"stride": 16}, "parameters.stride"),
    ({"top_k": 3}, "parameters.top_k")])
def test_parameters_it_cannot_honour_are_422(client, parameters: dict, field: str) -> None:
    r = _hf(client, parameters)
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert field in err["fields"], err


def test_docs_pages_load_nothing_from_the_internet(client) -> None:
    for page in ("/docs", "/redoc"):
        html = client.get(page)
        assert html.status_code == 200 and "text/html" in html.headers["content-type"]
        urls = re.findall(r"""(?:src|href)=["']([^"']+)["']""", html.text) + \
            re.findall(r"""(?:url|openapi_url|spec-url)\s*[:=]\s*['"]([^'"]+)['"]""", html.text)
        assert urls and not [u for u in urls if "//" in u], urls  # no CDN, no other host
        for url in urls:
            r = client.get(url)
            assert r.status_code == 200 and len(r.content) > 100, url


def test_docs_assets_share_the_static_metrics_label(labeler) -> None:
    """Each /docs-assets/ file is counted under the fixed route "/static", so a client asking
    for made-up asset names cannot add a metrics series per path (nor land in "unmatched")."""
    with TestClient(create_app(labeler=labeler), raise_server_exceptions=False) as c:
        html = c.get("/docs").text
        assets = sorted(set(re.findall(r"/docs-assets/[^\"'\s]+", html)))
        assert assets, html
        for url in assets + ["/docs-assets/made-up.js"]:
            c.get(url)
        metrics = c.get("/metrics").text
    routes = set(re.findall(r'seqrep_requests_total\{[^}]*route="([^"]*)"', metrics))
    assert "/static" in routes and not [r for r in routes if "docs-assets" in r], routes
    assert "unmatched" not in routes, routes
