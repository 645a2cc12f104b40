"""``seqrep predict --engine ray`` against the local engine, on one local Ray runtime this
module starts (traffic only to 127.0.0.1): the same chunks and records under bf16, the input
read a few chunks ahead (not all of it), Ray's process-wide settings left alone, an actor's
seqrep error quoted as its own line, and a server that is no Ray cluster refused at once."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from support import cli

ray = pytest.importorskip("ray")
# a Ray runtime of its own with worker processes: heavy, in the integration run
pytestmark = pytest.mark.integration

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-MISC"]
WORDS = ["Washington", "Obama", "Paris", "met", "the", "council", "of", "Berlin", "and",
         "left", "on", "Monday", "Maria", "praised"]


@pytest.fixture(scope="module")
def sentence_labeler(tiny, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sentence-context labeler (each sentence alone: documents do not matter to it) with a
    steep random head, so small changes of its logits move its scores and tags."""
    from seqrep.model.labeler import SequenceLabeler

    torch.manual_seed(0)
    lab = SequenceLabeler.from_model(tiny("llama"), labels=LABELS, repetitions=1,
                                     finetune="frozen", decoding="greedy")
    with torch.no_grad():
        for p in lab.head.parameters():
            p.normal_(0, 2.0)
    return lab.eval().save_pretrained(tmp_path_factory.mktemp("ray-engine") / "lab")


def _corpus(path: Path) -> Path:
    """300 texts of 1 to 14 words; lines 241-280 one document, across the 256-text chunk
    boundary (a document-extending chunk would end at line 280 instead of 256)."""
    rows = []
    for i in range(300):
        text = " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(1 + i * 5 % 14)) + "."
        rows.append({"text": text, **({"doc_id": "d"} if 240 <= i < 280 else {})})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _corpus(tmp_path_factory.mktemp("ray-engine-in") / "in.jsonl")


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def _refused_in_time(capsys: pytest.CaptureFixture, run: Path, tmp_path: Path,
                     address: str) -> tuple[int, str]:
    """``seqrep predict --engine ray --address ADDRESS`` in this process, given 60 s (the
    answer is due within a few); the exit code and stderr."""
    source = tmp_path / "in.txt"
    source.write_text("Obama\n", encoding="utf-8")
    result: list[tuple[int, str, str]] = []
    worker = threading.Thread(target=lambda: result.append(cli(
        capsys, "predict", str(run), "--input", str(source), "--output",
        str(tmp_path / "o.jsonl"), "--engine", "ray", "--address", address)), daemon=True)
    worker.start()
    worker.join(60)
    assert result, f"--address {address} (no Ray there) was not refused within 60 s"
    return result[0][0], result[0][2]


def test_a_server_that_is_no_ray_cluster_is_refused_in_one_line(
        sentence_labeler: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A TCP server that accepts and says nothing, and an HTTP server: ``ray.init`` would
    retry either for minutes; the command refuses in one line naming the address."""
    silent = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        silent.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(silent.accept()[0])  # kept open, never answered
            except OSError:
                continue

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"hello")

        def log_message(self, *args: object) -> None:
            pass

    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threads = [threading.Thread(target=accept, daemon=True),
               threading.Thread(target=web.serve_forever, daemon=True)]
    for t in threads:
        t.start()
    try:
        for port in (silent.getsockname()[1], web.server_address[1]):
            address = f"127.0.0.1:{port}"
            code, err = _refused_in_time(capsys, sentence_labeler, tmp_path, address)
            assert code == 2 and address in err and len(err.strip().splitlines()) == 1, err
            assert not (tmp_path / "o.jsonl").exists()
    finally:
        stop.set()
        web.shutdown()
        web.server_close()
        for t in threads:
            t.join()
        for s in held:
            s.close()
        silent.close()


@pytest.fixture(scope="module")
def ray_runtime() -> Iterator[None]:
    from seqrep.integrations.ray import start

    start(num_cpus=2)
    yield
    ray.shutdown()


def test_a_ray_cluster_s_head_passes_the_address_check(ray_runtime: None) -> None:
    """The check that refuses the servers above lets a real head through: the GCS of the
    runtime this module started."""
    from seqrep.integrations.ray import _reachable

    _reachable(ray.get_runtime_context().gcs_address)


def test_ray_labels_the_local_engine_s_chunks(ray_runtime: None, sentence_labeler: Path,
                                              corpus: Path) -> None:
    """A sentence labeler's chunks are cut every 256 texts, as the local engine cuts them
    (documents mean nothing to it), not stretched to the end of document d (line 280)."""
    from seqrep.config import InferenceConfig
    from seqrep.integrations.ray import label_chunks
    from seqrep.predict.inputs import chunks, read_records
    from seqrep.predict.stream import CHUNK

    label = label_chunks(sentence_labeler, InferenceConfig())
    # what predict_file gives an engine: chunks that keep every doc_id run whole
    got = [len(records) for records in label(chunks(read_records(corpus), CHUNK, True))]
    assert got == [256, 44]


def test_ray_and_local_engines_write_the_same_records_under_bf16(
        ray_runtime: None, sentence_labeler: Path, corpus: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture) -> None:
    """Under bf16 a text's scores move with the other texts of its batch (their padding):
    only the same batches give the same records."""
    outputs = {}
    for engine in ("local", "ray"):
        outputs[engine] = tmp_path / f"{engine}.jsonl"
        code, _, err = cli(capsys, "predict", str(sentence_labeler), "--input", str(corpus),
                           "--output", str(outputs[engine]), "--precision", "bf16",
                           "--engine", engine)
        assert code == 0, err
    local, by_ray = _lines(outputs["local"]), _lines(outputs["ray"])
    assert len(local) == 300 and by_ray == local


def _counted(n: int) -> tuple[Iterator[list[tuple]], list[int]]:
    """``n`` chunks of one text each, and a list whose length is how many were read."""
    taken: list[int] = []

    def pieces() -> Iterator[list[tuple]]:
        for i in range(n):
            taken.append(i)
            yield [(i + 1, f"Obama visited Paris on day {i}.", False, None)]

    return pieces(), taken


def test_the_input_is_read_a_few_chunks_ahead_not_whole(ray_runtime: None,
                                                        sentence_labeler: Path) -> None:
    """The driver holds a fixed number of chunks (two per actor in flight, one read
    ahead), whatever the input's length: the first records come back before the 5th of 40
    chunks is read; then every chunk's records, once, in order."""
    from seqrep.config import InferenceConfig
    from seqrep.export import load
    from seqrep.integrations.ray import label_chunks
    from seqrep.predict.stream import label_items

    pieces, taken = _counted(40)
    records = label_chunks(sentence_labeler, InferenceConfig(), chunk=1)(pieces)
    first = next(records)
    assert len(taken) <= 4
    rest = list(records)
    assert len(taken) == 40 and len(rest) == 39
    lab = load(sentence_labeler, InferenceConfig())
    expected = [label_items(lab, [(f"Obama visited Paris on day {i}.", False, None)])
                for i in range(40)]
    assert [first, *rest] == expected


def test_ray_s_data_context_is_left_as_it_was(ray_runtime: None, sentence_labeler: Path
                                              ) -> None:
    from seqrep.config import InferenceConfig
    from seqrep.integrations.ray import label_chunks

    context = ray.data.DataContext.get_current()
    before = (context.execution_options.preserve_order, context.enable_progress_bars)
    context.execution_options.preserve_order = False
    context.enable_progress_bars = True
    try:
        pieces, _ = _counted(3)
        records = label_chunks(sentence_labeler, InferenceConfig(), chunk=1)(pieces)
        assert len(list(records)) == 3
        now = ray.data.DataContext.get_current()
        assert now is context
        assert (now.execution_options.preserve_order, now.enable_progress_bars) == (False,
                                                                                   True)
    finally:
        context.execution_options.preserve_order, context.enable_progress_bars = before


def test_an_actor_s_seqrep_error_is_quoted_as_its_own_line(
        ray_runtime: None, sentence_labeler: Path, corpus: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture) -> None:
    """The actors cannot load the labeler as asked (fp16 on a CPU): the RayError quotes the
    ConfigError the same load raises here, and nothing of Ray's wrapping; the command says
    it in one line."""
    from seqrep.config import InferenceConfig
    from seqrep.errors import ConfigError
    from seqrep.export import load
    from seqrep.integrations.ray import RayError, label_chunks

    fp16 = InferenceConfig(precision="fp16", device="cpu")
    with pytest.raises(ConfigError) as here:
        load(sentence_labeler, fp16)
    pieces, _ = _counted(2)
    with pytest.raises(RayError) as there:
        list(label_chunks(sentence_labeler, fp16)(pieces))
    assert str(there.value) == f"the Ray labeling stopped: {here.value}"
    code, _, err = cli(capsys, "predict", str(sentence_labeler), "--input", str(corpus),
                       "--output", str(tmp_path / "o.jsonl"), "--engine", "ray",
                       "--precision", "fp16", "--device", "cpu")
    # (after the progress bar's carriage-return updates)
    assert code == 2 and err.count("error:") == 1, err
    assert f"error: the Ray labeling stopped: {here.value}\n" in err, err
