"""Large-corpus prediction: streamed in chunks, the same records as one call, resumable after
an interruption, and sharded over two processes without losing or repeating a line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from seqrep.model.labeler import SequenceLabeler
from seqrep.predict.stream import predict_file
from seqrep.predict.tagger import predict_text

TEXTS = ["Obama visited Paris.", "", "Maria left Tokyo 🙂 today!\u2028still this line",
         "Peter Blackburn and Angela Merkel met in Berlin. Then they left."] * 5 + ["last"]


@pytest.fixture(scope="module")
def folder(tiny, tmp_path_factory: pytest.TempPathFactory) -> Path:
    lab = SequenceLabeler.from_model(tiny("llama"), labels=["O", "B-PER", "I-PER"],
                                     finetune="frozen")
    return lab.save_pretrained(tmp_path_factory.mktemp("stream") / "lab")


def _records(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_bytes().decode().split("\n")[:-1]]


def test_streamed_equals_one_call_and_resumes(folder: Path, tmp_path: Path) -> None:
    lab = SequenceLabeler.from_pretrained(folder)
    src = tmp_path / "in.txt"
    src.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    expected = predict_text(lab, TEXTS)
    out = tmp_path / "out.jsonl"
    seen = []
    assert predict_file(lab, src, out, chunk=4, progress=lambda d, t: seen.append((d, t))) == 21
    assert _records(out) == expected
    # once before the first chunk (the bar's clock starts there), then after each chunk
    assert seen[0] == (0, 21) and seen[-1] == (21, 21) and len(seen) == 7
    # interrupted after 12 records, then cut to 9 and a torn 10th: resumes from the 9th line

    def stop(done: int, total: int) -> None:
        if done >= 12:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        predict_file(lab, src, tmp_path / "again.jsonl", chunk=4, progress=stop)
    partial = tmp_path / "again.jsonl.partial"
    lines = partial.read_bytes().split(b"\n")
    partial.write_bytes(b"\n".join(lines[:9]) + b"\n" + lines[9][:5])
    assert predict_file(lab, src, tmp_path / "again.jsonl", chunk=4) == 21
    assert _records(tmp_path / "again.jsonl") == expected
    assert not partial.exists()


def test_jsonl_input_with_text_or_words(folder: Path, tmp_path: Path) -> None:
    from seqrep.errors import DataError

    lab = SequenceLabeler.from_pretrained(folder)
    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "Obama visited Paris."}\n{"words": ["Maria", "left"]}\n',
                   encoding="utf-8")
    records = _records(tmp_path / "o.jsonl") if predict_file(
        lab, src, tmp_path / "o.jsonl") else []
    assert [r["text"] for r in records] == ["Obama visited Paris.", "Maria left"]
    assert records[1]["sentences"][0]["words"] == ["Maria", "left"]
    src.write_text('{"text": "fine"}\n{"words": "not a list"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"in.jsonl:2"):
        predict_file(lab, src, tmp_path / "bad.jsonl")
    assert not (tmp_path / "bad.jsonl").exists()


@pytest.mark.integration  # a torchrun launch of two processes
def test_two_processes_shard_and_keep_the_order(folder: Path, tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")  # 21 lines: odd
    torchrun = Path(sys.executable).with_name("torchrun")
    if not torchrun.exists():
        pytest.skip("torchrun is not installed")
    out = tmp_path / "out.jsonl"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([str(torchrun), "--nproc_per_node", "2", "--master_port", "29531",
                           "-m", "seqrep", "predict", str(folder), "--input", str(src),
                           "--output", str(out), "--device", "cpu"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lab = SequenceLabeler.from_pretrained(folder)
    assert _records(out) == predict_text(lab, TEXTS)


@pytest.mark.integration  # a torchrun launch of two processes
def test_two_process_evaluation_counts_every_sentence_once(tiny, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture) -> None:
    """7 sentences over 2 processes: the same count and F1 as one process (this one: the
    command in the test's process; a child would add seconds of imports and nothing else)."""
    from support import cli, write_corpus

    data = write_corpus(tmp_path / "gold.txt", 7)
    folder = SequenceLabeler.from_model(
        tiny("llama"), labels=["O", "B-LOC", "I-LOC", "B-PER", "I-PER"],
        finetune="frozen").save_pretrained(tmp_path / "lab")
    torchrun = Path(sys.executable).with_name("torchrun")
    if not torchrun.exists():
        pytest.skip("torchrun is not installed")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    args = ["evaluate", str(folder), "--dataset", str(data), "--json", "--device", "cpu"]
    code, out, err = cli(capsys, *args)
    assert code == 0, err
    two = subprocess.run([str(torchrun), "--nproc_per_node", "2", "--master_port", "29532",
                          "-m", "seqrep", *args], capture_output=True, text=True, env=env,
                         timeout=300)
    assert two.returncode == 0, two.stderr[-2000:]
    a, b = json.loads(out), json.loads(two.stdout)
    assert a["sentences"] == b["sentences"] == 7
    assert (a["f1"], a["predicted_spans"], a["gold_spans"]) == (b["f1"], b["predicted_spans"],
                                                                 b["gold_spans"])
