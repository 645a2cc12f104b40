"""scripts/train_speed.py, the training-speed benchmark: both contexts side by side on the
same sentences, each row a real optimizer run, and the CPU recorded in its JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from support import load_script, write_corpus


def test_sentence_and_document_context_train_side_by_side(tiny, tmp_path: Path,
                                                          monkeypatch) -> None:
    data = write_corpus(tmp_path / "train.txt", 8)
    blocks = data.read_text(encoding="utf-8").strip().split("\n\n")
    # two documents of four sentences: -DOCSTART- before the first and the fifth
    data.write_text("\n\n".join(("-DOCSTART- O\n\n" if i % 4 == 0 else "") + b
                                for i, b in enumerate(blocks)) + "\n", encoding="utf-8")
    out = tmp_path / "speed.json"
    monkeypatch.setattr(sys, "argv", [
        "train_speed.py", "--model", tiny("llama", 2), "--exit-layer", "2", "--dataset",
        str(data), "--frozen", "0", "--batch-size", "2", "--steps", "4", "--rounds", "1",
        "--context", "sentence,document", "--output", str(out)])
    load_script("train_speed").main()
    got = json.loads(out.read_text())
    assert got["sentences"] == 8 and "flags" in got["cpu"]
    assert [(r["context"], r["steps"]) for r in got["rows"]] == [
        # 8 sentences alone in batches of 2: 4 steps; each document of four short sentences
        # is one row (well within 256 subtokens) reading 4 sentences, more than a batch's 2,
        # so each row is a batch alone: 2 steps
        ("sentence", 4), ("document", 2)]
    assert all(r["sentences_per_second"] > 0 for r in got["rows"])
    # counting rows, as seqrep train --batch-rows: the two rows are one batch
    monkeypatch.setattr(sys, "argv", [*sys.argv, "--context", "document", "--batch-rows"])
    load_script("train_speed").main()
    got = json.loads(out.read_text())
    assert got["batch_rows"] is True
    assert [(r["context"], r["steps"]) for r in got["rows"]] == [("document", 1)]
