#!/usr/bin/env python
"""Load test of ``seqrep serve`` on this machine (traffic to 127.0.0.1 only, bounded).

Starts ``seqrep serve RUN_DIR`` as a child process on a free port, then

1. sends N requests (one CoNLL-2003 test sentence each, as ``words``) from C concurrent
   clients: errors, throughput, latency percentiles, requests per shared batch;
2. sends the same N requests one at a time (the reference answers: every concurrent answer
   must equal its one-at-a-time answer, batch invariance under load);
3. sends B malformed or oversize bodies interleaved with B good requests from the same C
   clients: each bad one must get its status, each good one its reference answer;

prints a summary and writes everything as JSON. Every phase stops at ``--max-seconds``.

    python scripts/bench_serve.py runs/serve-demo --output results/serve-bench.json

Needs SEQREP_DATA (for ``load_corpus("conll2003", "test")``) and the serve extra.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from seqrep.data import load_corpus
from seqrep.model.device import cpu_features
from seqrep.serve.local import free_port, wait_healthy

HOST = "127.0.0.1"  # the only address this script ever sends to


def _percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    v = sorted(values)

    def q(p: float) -> float:
        return round(v[min(len(v) - 1, max(0, int(round(p * (len(v) - 1)))))] * 1000, 1)

    return {"p50_ms": q(0.50), "p95_ms": q(0.95), "p99_ms": q(0.99), "max_ms": q(1.0),
            "mean_ms": round(sum(v) / len(v) * 1000, 1)}


def _metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


async def _batches(client: httpx.AsyncClient) -> tuple[float, float]:
    text = (await client.get("/metrics")).text
    return _metric(text, "seqrep_batch_requests_count"), _metric(text, "seqrep_batch_requests_sum")


async def _run(client: httpx.AsyncClient, jobs: list[dict], clients: int,
               deadline: float) -> list[dict]:
    """Send ``jobs`` ({"body"| "content", "headers"}) from ``clients`` workers; each result
    holds the status, the JSON answer and the latency."""
    results: list[dict] = [{} for _ in jobs]
    next_job = iter(range(len(jobs)))

    async def worker() -> None:
        for i in next_job:
            if time.monotonic() > deadline:
                results[i] = {"status": None, "error": "not sent: --max-seconds reached"}
                continue
            job = jobs[i]
            start = time.perf_counter()
            try:
                if "content" in job:
                    r = await client.post(job.get("path", "/v1/label"), content=job["content"],
                                          headers=job.get("headers", {}))
                else:
                    r = await client.post(job.get("path", "/v1/label"), json=job["body"])
                took = time.perf_counter() - start
                try:
                    data = r.json()
                except ValueError:
                    data = None
                results[i] = {"status": r.status_code, "json": data, "seconds": took}
            except httpx.HTTPError as err:
                results[i] = {"status": None, "error": f"{type(err).__name__}: {err}",
                              "seconds": time.perf_counter() - start}

    await asyncio.gather(*(worker() for _ in range(clients)))
    return results


def _without_scores(answer: dict) -> list:
    return [(r["sentences"], [{k: v for k, v in span.items() if k != "score"}
                              for span in r["spans"]]) for r in answer["results"]]


def _phase(name: str, results: list[dict], wall: float, batches: tuple[float, float]) -> dict:
    ok = [r for r in results if r.get("status") == 200]
    errors = len(results) - len(ok)
    count, total = batches
    out = {"phase": name, "requests": len(results), "ok": len(ok), "errors": errors,
           "wall_s": round(wall, 2), "requests_per_s": round(len(ok) / wall, 2) if wall else 0,
           "latency": _percentiles([r["seconds"] for r in ok]),
           "shared_batches": int(count),
           "mean_requests_per_batch": round(total / count, 2) if count else None}
    kinds: dict[str, int] = {}
    for r in results:
        if r.get("status") != 200:
            key = str(r.get("status") or r.get("error", "?"))
            kinds[key] = kinds.get(key, 0) + 1
    if kinds:
        out["error_kinds"] = kinds
    return out


def _bad_bodies(n: int, max_text_chars: int, max_texts: int, body_limit: int) -> list[dict]:
    """``n`` bad requests cycling through the kinds, each with the status it must get."""
    json_h = {"content-type": "application/json"}
    kinds = [
        ("malformed JSON", {"content": b'{"text": "unfinished', "headers": json_h}, 422),
        ("not an object", {"content": b'["a", "b"]', "headers": json_h}, 422),
        ("text not a string", {"body": {"text": 42}}, 422),
        ("two inputs", {"body": {"text": "a", "texts": ["b"]}}, 422),
        ("unknown field", {"body": {"text": "a", "lang": "en"}}, 422),
        ("bad decoding", {"body": {"text": "a", "decoding": "beam"}}, 422),
        ("word with a space", {"body": {"words": [["New York"]]}}, 422),
        ("not declared JSON", {"content": b'{"text": "a"}',
                               "headers": {"content-type": "text/plain"}}, 422),
        ("text over --max-text-chars", {"body": {"text": "a " * (max_text_chars // 2 + 1)}}, 413),
        ("over --max-texts", {"body": {"texts": ["a"] * (max_texts + 1)}}, 413),
        ("body over the byte limit", {"content": b'{"text": "' + b"a" * body_limit + b'"}',
                                      "headers": json_h}, 413),
        ("hf inputs not a string", {"path": "/v1/hf", "body": {"inputs": 3}}, 422),
    ]
    out = []
    for i in range(n):
        kind, job, status = kinds[i % len(kinds)]
        out.append({**job, "kind": kind, "expect": status})
    return out


async def bench(args: argparse.Namespace, base: str, sentences: list[list[str]]) -> dict:
    deadline = time.monotonic() + args.max_seconds
    limits = httpx.Limits(max_connections=args.clients, max_keepalive_connections=args.clients)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:
        info = (await client.get("/v1/model")).json()
        jobs = [{"body": {"words": [words]}} for words in sentences]
        # warm-up (not counted): the first passes allocate
        await _run(client, jobs[:8], 1, deadline)

        before = await _batches(client)
        t = time.perf_counter()
        concurrent = await _run(client, jobs, args.clients, deadline)
        wall_c = time.perf_counter() - t
        after = await _batches(client)
        phase_c = _phase(f"{args.clients} concurrent clients", concurrent, wall_c,
                         (after[0] - before[0], after[1] - before[1]))

        before = after
        t = time.perf_counter()
        sequential = await _run(client, jobs, 1, deadline)
        wall_s = time.perf_counter() - t
        after = await _batches(client)
        phase_s = _phase("one at a time", sequential, wall_s,
                         (after[0] - before[0], after[1] - before[1]))

        reference = [r.get("json") if r.get("status") == 200 else None for r in sequential]
        differ = [i for i, (c, s) in enumerate(zip(concurrent, reference))
                  if s is not None and c.get("status") == 200 and c["json"] != s]
        phase_c["answers_differing_from_one_at_a_time"] = len(differ)
        # a span score is rounded to 4 decimals: a logit's last float bits, which depend on
        # the batch's shape, can move it by one unit; tags and offsets must never move
        beyond = [i for i in differ if _without_scores(concurrent[i]["json"])
                  != _without_scores(reference[i])]
        phase_c["differing_beyond_score_rounding"] = len(beyond)
        if differ:
            phase_c["first_differing"] = differ[:5]
            phase_c["largest_score_difference"] = max(
                abs(a["score"] - b["score"]) for i in differ
                for ra, rb in zip(concurrent[i]["json"]["results"], reference[i]["results"])
                for a, b in zip(ra["spans"], rb["spans"]))

        limits_info = info["limits"]
        bad = _bad_bodies(args.bad, limits_info["max_text_chars"], limits_info["max_texts"],
                          limits_info["max_body_bytes"])
        mixed, expect = [], []
        for i in range(max(len(bad), 1)):
            good = i % len(jobs)
            mixed.append(jobs[good])
            expect.append(("good", good))
            if i < len(bad):
                mixed.append(bad[i])
                expect.append(("bad", i))
        before = await _batches(client)
        t = time.perf_counter()
        answers = await _run(client, mixed, args.clients, deadline)
        wall_m = time.perf_counter() - t
        after = await _batches(client)
        wrong_status, wrong_answer, good_ok, bad_ok = [], [], 0, 0
        for (what, i), r in zip(expect, answers):
            if what == "good":
                if r.get("status") == 200 and (r["json"] == reference[i] or _without_scores(
                        r["json"]) == _without_scores(reference[i])):  # see above
                    good_ok += 1
                else:
                    wrong_answer.append({"sentence": i, "status": r.get("status")})
            else:
                b = bad[i]
                err = (r.get("json") or {}).get("error") if isinstance(r.get("json"),
                                                                       dict) else None
                if r.get("status") == b["expect"] and err and err.get("message"):
                    bad_ok += 1
                else:
                    wrong_status.append({"kind": b["kind"], "expected": b["expect"],
                                         "got": r.get("status")})
        by_kind: dict[str, dict[str, Any]] = {}
        for b in bad:
            by_kind.setdefault(b["kind"], {"expected": b["expect"], "sent": 0})["sent"] += 1
        phase_m = {"phase": "bad bodies interleaved with good ones", "good": good_ok,
                   "good_sent": len(expect) - len(bad), "bad_with_right_status": bad_ok,
                   "bad_sent": len(bad), "wrong_status": wrong_status,
                   "wrong_good_answers": wrong_answer, "wall_s": round(wall_m, 2),
                   "shared_batches": int(after[0] - before[0]), "bad_kinds": by_kind}
        metrics = (await client.get("/metrics")).text
        server_errors = sum(float(line.split()[-1]) for line in metrics.splitlines()
                            if line.startswith("seqrep_requests_total")
                            and 'status="500"' in line)
    ratio = (phase_c["requests_per_s"] / phase_s["requests_per_s"]
             if phase_s["requests_per_s"] else None)
    return {"model": info, "phases": [phase_c, phase_s, phase_m],
            "batching_speedup": round(ratio, 2) if ratio else None,
            "server_500s": int(server_errors)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run", help="run folder (or saved labeler) to serve")
    p.add_argument("--requests", type=int, default=1000)
    p.add_argument("--clients", type=int, default=32)
    p.add_argument("--bad", type=int, default=100, help="malformed/oversize bodies")
    p.add_argument("--max-seconds", type=float, default=1800,
                   help="stop sending after this long (the rest is counted as not sent)")
    p.add_argument("--max-batch-tokens", type=int, default=512)
    p.add_argument("--max-wait-ms", type=float, default=10)
    p.add_argument("--output", default="results/serve-bench.json")
    args = p.parse_args()

    corpus = load_corpus("conll2003", "test")
    sentences = [list(s.words) for s in corpus.sentences if s.words][: args.requests]
    port = free_port(HOST)
    base = f"http://{HOST}:{port}"
    cmd = [sys.executable, "-c", "from seqrep.cli.app import main; main()", "serve", args.run,
           "--host", HOST, "--port", str(port), "--max-batch-tokens",
           str(args.max_batch_tokens), "--max-wait-ms", str(args.max_wait_ms),
           "--log-level", "warning"]
    server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        start = time.monotonic()
        if not wait_healthy(base, 300, alive=lambda: server.poll() is None, interval=0.2):
            raise SystemExit(f"server did not start: {server.stderr.read()}")
        load_s = time.monotonic() - start
        result = asyncio.run(bench(args, base, sentences))
    finally:
        server.terminate()
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
    result = {"command": "python scripts/bench_serve.py " + " ".join(sys.argv[1:]),
              "server": " ".join(["seqrep"] + cmd[3:]), "startup_s": round(load_s, 1),
              "sentences": len(sentences), "machine": {**cpu_features(),
                                                       "python": platform.python_version()},
              **result}
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    c, s, m = result["phases"]
    print(f"concurrent ({args.clients} clients): {c['ok']}/{c['requests']} ok, {c['errors']} "
          f"errors, {c['requests_per_s']} texts/s, latency {c['latency']}, "
          f"{c['mean_requests_per_batch']} requests per batch, "
          f"{c['answers_differing_from_one_at_a_time']} answers differ from one at a time "
          f"({c['differing_beyond_score_rounding']} beyond a score's rounding)")
    print(f"one at a time: {s['ok']}/{s['requests']} ok, {s['requests_per_s']} texts/s, "
          f"latency {s['latency']}")
    print(f"batching speed-up: {result['batching_speedup']}x")
    print(f"bad bodies: {m['bad_with_right_status']}/{m['bad_sent']} got their status, good "
          f"ones: {m['good']}/{m['good_sent']} right; server 500s: {result['server_500s']}")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
