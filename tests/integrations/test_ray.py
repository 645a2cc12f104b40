"""Ray Data and Ray Serve on a local Ray runtime this module starts (2 CPUs, traffic only to
127.0.0.1): the records and answers are those of single-process ``seqrep predict`` and
``seqrep serve``, every record exactly once and in input order, documents whole."""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from support import cli, serving_app, sharp_document_labeler

ray = pytest.importorskip("ray")
# a Ray runtime of its own with worker processes: heavy, in the integration run
pytestmark = pytest.mark.integration

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
NAMES = ["Obama", "Maria", "Angela", "Peter", "Boris"]
PLACES = ["Paris", "Berlin", "Tokyo", "Madrid"]


def _texts(n: int = 1000) -> list[dict]:
    """``n`` input records: every 7th to 10th of 10 in a document of 3-4 multi-sentence texts,
    some pre-tokenized, the rest alone (odd and empty texts among them)."""
    out = []
    for i in range(n):
        who, where = NAMES[i % 5], PLACES[i % 4]
        if i % 10 >= 6:
            out.append({"text": f"{who} visited {where}. Then {NAMES[(i + 1) % 5]} left "
                                f"{PLACES[(i + 2) % 4]} on day {i}.", "doc_id": f"doc{i // 10}"})
        elif i % 10 == 3:
            out.append({"words": [who, "met", NAMES[(i + 2) % 5], "in", where]})
        elif i % 50 == 0:
            out.append({"text": ""})
        else:
            out.append({"text": f"{who} praised {where} ({i})."})
    return out


@pytest.fixture(scope="module")
def labeler_dir(tiny, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A document-context labeler whose tags change with a sentence's neighbours, so a
    document cut in two would label differently."""
    return sharp_document_labeler(tiny("llama"), LABELS).save_pretrained(
        tmp_path_factory.mktemp("ray") / "lab")


@pytest.fixture(scope="module")
def corpus(labeler_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    """The input file and the records single-process ``seqrep predict`` writes for it."""
    from seqrep.model.labeler import SequenceLabeler
    from seqrep.predict.stream import predict_file

    folder = tmp_path_factory.mktemp("ray-corpus")
    source = folder / "in.jsonl"
    records = _texts()
    source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    lab = SequenceLabeler.from_pretrained(labeler_dir)
    # single-process seqrep predict --output: its chunks of 256 texts, documents whole (a
    # batch's padding moves scores in the 4th decimal, so the chunks must be the same)
    predict_file(lab, source, folder / "local.jsonl")
    return source, _lines(folder / "local.jsonl")


@pytest.fixture(scope="module")
def ray_runtime():
    from seqrep.integrations.ray import start

    start(num_cpus=2)
    yield
    ray.shutdown()


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def test_an_unreachable_cluster_is_one_line(labeler_dir: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture) -> None:
    if ray.is_initialized():
        pytest.skip("Ray is running in this process: the address would not be used")
    source = tmp_path / "in.txt"
    source.write_text("Obama\n", encoding="utf-8")
    start = time.monotonic()
    code, _, err = cli(capsys, "predict", str(labeler_dir), "--input", str(source),
                       "--output", str(tmp_path / "o.jsonl"), "--engine", "ray",
                       "--address", "127.0.0.1:9")
    assert code == 2 and "127.0.0.1:9" in err and len(err.strip().splitlines()) == 1, err
    assert time.monotonic() - start < 120
    assert not (tmp_path / "o.jsonl").exists()


def test_documents_change_labels_so_the_order_test_can_see_a_cut(labeler_dir: Path,
                                                                 corpus: tuple) -> None:
    from seqrep.model.labeler import SequenceLabeler
    from seqrep.predict.stream import label_items

    _, expected = corpus
    lab = SequenceLabeler.from_pretrained(labeler_dir)
    texts = [r["text"] for r in _texts()[6:10]]  # doc0's texts
    alone = label_items(lab, [(t, False, None) for t in texts])
    together = label_items(lab, [(t, False, "doc0") for t in texts])
    assert together == expected[6:10]
    assert [r["sentences"] for r in alone] != [r["sentences"] for r in together]


def test_map_batches_gives_single_process_records_once_in_order(
        ray_runtime: None, labeler_dir: Path, corpus: tuple) -> None:
    from seqrep.config import InferenceConfig
    from seqrep.integrations.ray import SeqrepLabeler, chunk_rows
    from seqrep.predict.inputs import chunks, read_records
    from seqrep.predict.stream import CHUNK

    source, expected = corpus
    ray.data.DataContext.get_current().execution_options.preserve_order = True
    rows = chunk_rows(chunks(read_records(source), CHUNK, documents=True))
    ds = ray.data.from_items(rows, override_num_blocks=len(rows))
    out = ds.map_batches(SeqrepLabeler, fn_constructor_kwargs={
        "run": str(labeler_dir), "settings": InferenceConfig(threads=1)}, batch_size=1,
        compute=ray.data.ActorPoolStrategy(size=2), num_cpus=1)
    got = [r for row in out.iter_rows() for r in json.loads(row["records"])]
    assert len(got) == 1000 and got == expected


def test_rows_of_one_text_each_give_predict_s_records(ray_runtime: None,
                                                      labeler_dir: Path) -> None:
    """Rows of single texts (no documents: every 10-row block holds a whole document here,
    and one batch of 10 rows)."""
    from seqrep.integrations.ray import SeqrepLabeler
    from seqrep.model.labeler import SequenceLabeler
    from seqrep.predict.stream import label_items

    lab = SequenceLabeler.from_pretrained(labeler_dir)
    records = _texts()[:40]
    items = [(r.get("text") or " ".join(r.get("words", [])), "words" in r, r.get("doc_id"))
             for r in records]
    expected = [rec for k in range(0, 40, 10) for rec in label_items(lab, items[k:k + 10])]
    ray.data.DataContext.get_current().execution_options.preserve_order = True
    ds = ray.data.from_items([{"text": r.get("text"), "words": r.get("words"),
                               "doc_id": r.get("doc_id")} for r in records])
    out = ds.map_batches(SeqrepLabeler, fn_constructor_kwargs={"run": str(labeler_dir)},
                         batch_size=10, compute=ray.data.ActorPoolStrategy(size=1),
                         num_cpus=1).take_all()
    got = out  # in order: preserve_order, as the module sets it
    assert [json.loads(row["record"]) for row in got] == expected
    assert [json.loads(row["spans"]) for row in got] == [r["spans"] for r in expected]


def test_the_command_writes_jsonl_and_parquet_and_resumes(
        ray_runtime: None, labeler_dir: Path, corpus: tuple, tmp_path: Path,
        capsys: pytest.CaptureFixture) -> None:
    from seqrep.config import InferenceConfig
    from seqrep.integrations.ray import predict_with_ray
    from seqrep.predict.records import read_parquet_records

    source, expected = corpus
    out = tmp_path / "out.jsonl"
    code, _, err = cli(capsys, "predict", str(labeler_dir), "--input", str(source),
                       "--output", str(out), "--engine", "ray", "--actors", "2")
    assert code == 0, err
    assert _lines(out) == expected
    assert not list(tmp_path.glob("*.partial*"))
    pq = tmp_path / "out.parquet"
    assert cli(capsys, "predict", str(labeler_dir), "--input", str(source), "--output",
               str(pq), "--engine", "ray", "--actors", "2")[0] == 0
    assert read_parquet_records(pq) == expected
    # a run stopped after its first 512 records, its partial output then cut inside
    # document doc30 (lines 307-310) with a torn last line (rewritten in place: seqrep
    # resumes only the very file it made)
    again = tmp_path / "again.jsonl"

    def stop(done: int, total: int) -> None:
        if done >= 512:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        predict_with_ray(labeler_dir, source, again, InferenceConfig(), actors=2,
                         progress=stop)
    partial = again.with_name("again.jsonl.partial")
    lines = partial.read_bytes().split(b"\n")
    assert len(lines) > 309
    with open(partial, "r+b") as f:
        f.write(b"\n".join(lines[:308]) + b"\n" + lines[308][:7])
        f.truncate()
    code, _, err = cli(capsys, "predict", str(labeler_dir), "--input", str(source),
                       "--output", str(again), "--engine", "ray", "--actors", "2")
    assert code == 0, err
    assert "resuming after 306 records" in err  # from the first line of doc30
    assert _lines(again) == expected


def test_bad_records_and_options_are_one_line_before_ray_labels(
        labeler_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"text": "fine"}\n{"words": "not a list"}\n', encoding="utf-8")
    out = tmp_path / "o.jsonl"
    code, _, err = cli(capsys, "predict", str(labeler_dir), "--input", str(source),
                       "--output", str(out), "--engine", "ray")
    assert code == 2 and f"{source}:2:" in err and err.count("error:") == 1
    # refused before any record: no output, and a partial output (resumable) with no line
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir())[0] == "in.jsonl"
    partial = tmp_path / "o.jsonl.partial"
    assert not partial.exists() or partial.read_bytes() == b""
    for args, says in ((["--engine", "spark"], "--engine 'spark'"),
                       (["--actors", "2"], "--actors and --address need --engine ray"),
                       (["--engine", "ray", "--actors", "0"], "--actors 0"),
                       (["--engine", "ray"], "needs --input FILE and --output FILE")):
        extra = [] if "needs" in says else ["--input", str(source), "--output", str(out)]
        code, _, err = cli(capsys, "predict", str(labeler_dir), "text", *extra, *args)
        assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err


def test_without_ray_installed_the_engine_is_one_line(labeler_dir: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "ray" else real(name, *a))
    source = tmp_path / "in.txt"
    source.write_text("Obama\n", encoding="utf-8")
    code, _, err = cli(capsys, "predict", str(labeler_dir), "--input", str(source),
                       "--output", str(tmp_path / "o.jsonl"), "--engine", "ray")
    assert code == 2 and "pip install 'seqrep-labeler[ray]'" in err
    code, _, err = cli(capsys, "serve", str(labeler_dir), "--ray")
    assert code == 2 and "pip install 'seqrep-labeler[ray]'" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]


def _get(url: str, data: dict | None = None) -> tuple[int, dict]:
    body = json.dumps(data).encode() if data is not None else None
    req = urllib.request.Request(url, data=body,
                                 headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def test_ray_serve_replicas_answer_as_seqrep_serve(ray_runtime: None, labeler_dir: Path
                                                   ) -> None:
    import asyncio

    from ray import serve

    from seqrep.integrations.ray_serve import APP_NAME, application
    from seqrep.serve.app import create_app

    port = 18000 + os.getpid() % 1000
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    base = f"http://127.0.0.1:{port}"
    seen: list[tuple[int, int]] = []  # (health status, replicas running right after it)
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            try:
                code, _ = _get(base + "/health")
            except (OSError, ValueError):
                code = 0
            if code == 200:
                states = serve.status().applications[APP_NAME].deployments
                seen.append((code, sum(d.replica_states.get("RUNNING", 0)
                                       for d in states.values())))
            time.sleep(0.2)

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    try:
        serve.run(application(labeler_dir, replicas=2), name=APP_NAME, route_prefix="/",
                  blocking=False)
        bodies = [{"texts": ["Obama visited Paris. Then Maria left.", "Angela"]},
                  {"words": [["Peter", "met", "Boris"]]}]
        hf = {"inputs": ["Maria left Berlin.", "x"]}
        ray_answers = [_get(base + "/v1/label", b) for b in bodies] + [_get(base + "/v1/hf", hf)]
        time.sleep(1)
    finally:
        stop.set()
        watcher.join()
        serve.shutdown()
    assert seen and all(running == 2 for _, running in seen)

    async def local() -> list[tuple[int, object]]:
        async with serving_app(create_app(labeler_dir)) as client:
            out = [await client.post("/v1/label", json=b) for b in bodies]
            out.append(await client.post("/v1/hf", json=hf))
            return [(r.status_code, r.json()) for r in out]

    assert ray_answers == asyncio.run(local())


def test_health_waits_for_every_replica() -> None:
    """The replica's gate: 503 naming what it waits for until Ray Serve says the application
    runs, then ready for good."""
    from types import SimpleNamespace

    from seqrep.integrations.ray_serve import SeqrepReplica

    replica = SeqrepReplica.__new__(SeqrepReplica)
    replica.app_name, replica._running = "seqrep", False
    states = iter(["DEPLOYING", "RUNNING", "DEPLOYING"])

    def status() -> SimpleNamespace:
        app = SimpleNamespace(status=next(states), deployments={
            "d": SimpleNamespace(replica_states={"RUNNING": 1, "STARTING": 1})})
        return SimpleNamespace(applications={"seqrep": app})

    import ray.serve

    real = ray.serve.status
    ray.serve.status = status
    try:
        assert replica.waiting_for() == "the other replicas to load (1 running)"
        assert replica.waiting_for() is None
        assert replica.waiting_for() is None  # remembered: autoscaling never unreadies it
    finally:
        ray.serve.status = real


def test_an_actor_killed_mid_run_loses_or_repeats_no_record(
        ray_runtime: None, labeler_dir: Path, corpus: tuple, tmp_path: Path) -> None:
    """SIGKILL one labeling actor once the first records are written: Ray restarts it and
    retries its chunk, or the run stops with one line; either way the output holds whole
    records, each once, in order (a stopped run keeps a partial that is a prefix)."""
    import signal

    import psutil

    from seqrep.config import InferenceConfig
    from seqrep.integrations.ray import RayError, predict_with_ray
    from seqrep.model.labeler import SequenceLabeler
    from seqrep.predict.stream import predict_file

    source, _ = corpus
    big = tmp_path / "in.jsonl"
    big.write_bytes(source.read_bytes() * 3)
    # single-process predict of the same file: the same chunks (3 x 1000 texts do not fall
    # in the chunks of 1000, and a batch's padding moves scores in the 4th decimal)
    predict_file(SequenceLabeler.from_pretrained(labeler_dir), big, tmp_path / "local.jsonl")
    expected = _lines(tmp_path / "local.jsonl")
    out = tmp_path / "out.jsonl"
    result: list[object] = []

    def work() -> None:
        try:
            result.append(predict_with_ray(labeler_dir, big, out, InferenceConfig(threads=1),
                                           actors=2))
        except RayError as err:
            result.append(err)

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    partial = tmp_path / "out.jsonl.partial"
    end = time.monotonic() + 120
    while time.monotonic() < end and not (partial.exists() and partial.stat().st_size):
        time.sleep(0.05)
    # Ray names an actor's process after its class (no dashboard here for the state API)
    victims = [p.pid for p in psutil.process_iter(["cmdline"])
               if "ray::SeqrepChunkActor" in " ".join(p.info["cmdline"] or [])]
    assert victims, "no labeling actor alive to kill"
    os.kill(victims[0], signal.SIGKILL)
    worker.join(300)
    assert result, "the run never ended"
    if isinstance(result[0], RayError):
        assert len(str(result[0]).splitlines()) == 1
        lines = _lines(partial)
        assert lines == expected[:len(lines)] and not out.exists()
    else:
        assert result[0] == 3000 and _lines(out) == expected
