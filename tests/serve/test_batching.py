"""Dynamic batching: concurrent requests share forward passes and get exactly the answers they
get alone."""

from __future__ import annotations

import asyncio

import pytest

from seqrep.predict.tagger import predict_text
from seqrep.serve.batcher import Batcher, padded_tokens, text_sentences


def test_concurrent_requests_batched_and_equal_alone(labeler, proxy, texts, serving, same,
                                                    gate, until) -> None:
    """No timing: the first request's forward pass is held until every other request is
    queued, so those all meet in the second batch, whatever the machine's speed."""
    pytest.importorskip("fastapi", reason="the serve extra is not installed")
    from seqrep.serve.app import ServeSettings, create_app

    held = ("Held", "first")

    def hold(sentences):  # noqa: ANN001, ANN202
        if held in [tuple(s) for s in sentences]:
            gate.wait(60)

    counted = proxy(labeler, hold)
    app = create_app(labeler=counted, settings=ServeSettings(max_wait_ms=0,
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
            batcher = app.state.seqrep.batcher
            first = asyncio.ensure_future(c.post("/v1/label", json={"words": [list(held)]}))
            await asyncio.to_thread(until, lambda: len(counted.calls) == 1)
            sent = [asyncio.ensure_future(c.post("/v1/label", json=b)) for b in bodies]
            await asyncio.to_thread(until, lambda: batcher.depth == len(bodies))
            gate.set()
            answers = await asyncio.gather(*sent)
            assert (await first).status_code == 200
            return answers, (await c.get("/metrics")).text

    answers, metrics = asyncio.run(main())
    assert [a.status_code for a in answers] == [200] * len(bodies)
    for got, want in zip(answers, alone):
        same(got.json()["results"], want)
    batcher = app.state.seqrep.batcher
    # the held request alone, then every other request in one shared forward pass
    assert (batcher.batches, batcher.largest) == (2, len(bodies))
    assert len(counted.calls) == batcher.batches  # one pass per batch
    assert batcher.misses == 0  # every sentence predict_text asked for was in its batch
    count = float(metrics.split("seqrep_batch_requests_count ")[1].split()[0])
    total = float(metrics.split("seqrep_batch_requests_sum ")[1].split()[0])
    assert (total, count) == (len(bodies) + 1, 2)


def test_batches_close_at_the_token_budget(labeler, proxy, texts, same) -> None:
    counted = proxy(labeler, lambda s: None)
    budget = 96
    batcher = Batcher(counted, batch_tokens=budget, max_wait_ms=50)
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


def test_bf16_batched_answers_within_the_stated_tolerance(labeler_dir, texts) -> None:
    """Under bf16 autocast (native or emulated: tiny sizes keep it quick on AVX2-only CPUs) a
    sentence batched with others keeps its tags, and its probabilities move by at most the
    tolerance the serving guide (docs/guides/serve.md) states."""
    from pathlib import Path

    import torch

    from seqrep.model.device import ran_on
    from seqrep.model.labeler import SequenceLabeler
    from seqrep.serve.batcher import BATCH_TOLERANCE

    tol = BATCH_TOLERANCE["bf16"]
    guide = (Path(__file__).resolve().parents[2] / "docs" / "guides" / "serve.md").read_text()
    assert f"within {tol:g} under bf16" in " ".join(guide.split()), "the guide states another"
    lab = SequenceLabeler.from_pretrained(labeler_dir, False, "cpu", "bf16").eval()
    assert ran_on(lab)["autocast"] == "bf16"
    sentences = [list(s) for t in texts for s in text_sentences(t)]
    together = lab.word_logits(sentences, len(sentences), docs=None)
    no_tie = {}
    for sentence, batched in zip(sentences, together):
        alone = torch.softmax(lab.word_logits([sentence], 1, docs=None)[0].float(), -1)
        batched = torch.softmax(batched.float(), -1)
        assert float((alone - batched).abs().max()) <= tol
        top2 = alone.topk(2, -1).values
        clear = (top2[:, 0] - top2[:, 1]) > 2 * tol  # no near tie: the tag cannot flip
        assert torch.equal(alone.argmax(-1)[clear], batched.argmax(-1)[clear])
        no_tie[tuple(sentence)] = bool(clear.all())
    assert any(no_tie.values())
    # the same through the batcher: records of texts queued together against alone
    batcher = Batcher(lab, batch_tokens=100_000, max_wait_ms=0)
    futures = [batcher.submit([t]) for t in texts]
    batcher.start()
    for text, future in zip(texts, futures):
        (got,), (want,) = future.result(timeout=60), predict_text(lab, [text])
        if not all(no_tie[tuple(s["words"])] for s in want["sentences"]):
            continue  # a near tie may flip a tag, as stated
        assert got["sentences"] == want["sentences"]
        assert [(s["start"], s["end"], s["label"]) for s in got["spans"]] == \
            [(s["start"], s["end"], s["label"]) for s in want["spans"]]
        for a, b in zip(got["spans"], want["spans"]):
            assert abs(a["score"] - b["score"]) <= tol + 1e-4
    batcher.close()
    assert batcher.batches == 1


def test_each_sentence_of_a_batch_is_encoded_once(labeler, encodes) -> None:
    """The plan encodes a job's rows to count them against the budget; the forward pass
    computes those rows, not a second encode of the same sentences."""
    batcher = Batcher(labeler, batch_tokens=100_000, max_wait_ms=50)
    jobs = [batcher.submit(["Obama visited Paris. Peter left."]),
            batcher.submit(["Maria left Tokyo."])]
    seen = encodes()
    batcher.start()
    for job in jobs:
        job.result(timeout=60)
    batcher.close()
    # three sentences, counted by hand: each encoded once
    assert sorted(seen) == [("Maria", "left", "Tokyo", "."), ("Obama", "visited", "Paris", "."),
                            ("Peter", "left", ".")]
