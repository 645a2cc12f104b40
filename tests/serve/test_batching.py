"""Dynamic batching: concurrent requests share forward passes and get exactly the answers they
get alone."""

from __future__ import annotations

import asyncio

import pytest

from seqrep.predict import predict_text
from seqrep.serve.batcher import Batcher, padded_tokens, text_sentences


def test_concurrent_requests_batched_and_equal_alone(labeler, proxy, texts, serving,
                                                    same) -> None:
    pytest.importorskip("fastapi", reason="the serve extra is not installed")
    from seqrep.serve.app import ServeSettings, create_app

    counted = proxy(labeler, lambda s: None)
    # a long wait and a large budget: requests sent together surely meet in a batch
    app = create_app(labeler=counted, settings=ServeSettings(max_wait_ms=400,
                                                             max_batch_tokens=100_000))
    bodies = [{"text": t} for t in texts] + [{"texts": texts[:3]},
                                             {"words": [["Obama", "visited", "Paris"]]},
                                             {"text": texts[0], "decoding": "greedy"}]
    alone = [predict_text(labeler, [t]) for t in texts] + [
        predict_text(labeler, texts[:3]),
        predict_text(labeler, ["Obama visited Paris"], pretokenized=True),
        predict_text(labeler, [texts[0]], "greedy")]

    async def main() -> tuple[list, str]:
        async with serving(app) as c:
            answers = await asyncio.gather(*(c.post("/v1/label", json=b) for b in bodies))
            return answers, (await c.get("/metrics")).text

    answers, metrics = asyncio.run(main())
    assert [a.status_code for a in answers] == [200] * len(bodies)
    for got, want in zip(answers, alone):
        same(got.json()["results"], want)
    batcher = app.state.seqrep.batcher
    assert batcher.largest > 1, "no two requests shared a batch"
    assert len(counted.calls) == batcher.batches < len(bodies)  # one pass per batch
    assert batcher.misses == 0  # every sentence predict_text asked for was in its batch
    count = float(metrics.split("seqrep_batch_requests_count ")[1].split()[0])
    total = float(metrics.split("seqrep_batch_requests_sum ")[1].split()[0])
    assert total == len(bodies) and count == batcher.batches and total > count


def test_batches_close_at_the_token_budget(labeler, proxy, texts, same) -> None:
    counted = proxy(labeler, lambda s: None)
    budget = 96
    batcher = Batcher(counted, max_batch_tokens=budget, max_wait_ms=50)
    texts = texts + ["Obama.", "Paris!", "Hi there"]
    jobs = [(t, batcher.submit([t])) for t in texts * 2]  # all queued before the worker starts
    batcher.start()
    for text, future in jobs:
        same(future.result(timeout=60), predict_text(labeler, [text]))
    batcher.close()
    assert batcher.batches == len(counted.calls) > 1
    rows_of = {s: [len(seg) for seg in labeler.encode(list(s))]
               for t in texts for s in text_sentences(t)}
    per_text = {t: [r for s in text_sentences(t) for r in rows_of[s]] for t in texts}
    for call in counted.calls:
        rows = [r for s in call for r in rows_of[s]]
        alone = any(sorted(rows) == sorted(per_text[t]) for t in texts)
        # a batch stays within the budget unless it is one request that is larger by itself
        assert padded_tokens(rows) <= budget or alone, (padded_tokens(rows), call)
    assert batcher.largest > 1  # small texts did share batches
    assert not batcher._thread.is_alive()


def test_text_sentences_match_predict_text(labeler, texts) -> None:
    for text in texts + ["", "  a  b ", "Mr. Smith went. To Washington!"]:
        for pre in (False, True):
            record = predict_text(labeler, [text], pretokenized=pre)[0]
            assert [tuple(s["words"]) for s in record["sentences"]] == \
                text_sentences(text, pre)


def test_cancelled_job_is_skipped(labeler) -> None:
    batcher = Batcher(labeler, max_wait_ms=0)
    gone = batcher.submit(["Obama visited Paris."])
    kept = batcher.submit(["Peter Blackburn."])
    assert gone.cancel()
    batcher.start()
    assert kept.result(timeout=60)[0]["text"] == "Peter Blackburn."
    batcher.close()
