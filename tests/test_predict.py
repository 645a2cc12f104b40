"""Prediction and evaluation read tags by one rule; token tagging; what the CLI does with bad
input and usage errors (issues 10 and 11)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from inprocess import seqrep

from seqrep.config import LabelerConfig, TrainConfig
from seqrep.data.tags import strict_spans
from seqrep.evaluate import score
from seqrep.model.labeler import SequenceLabeler
from seqrep.predict.tagger import predict_text, word_spans


def test_predict_and_evaluate_read_tags_alike() -> None:
    """Greedy tags with a stray I-: evaluation (seqeval strict) finds no PER span, and so does
    prediction; a PER span starting with B- is found by both."""
    for tags, spans in ((["O", "I-PER", "I-PER"], []),
                        (["B-PER", "I-PER", "O"], [(0, 2, "PER")]),
                        (["B-LOC", "I-PER"], [(0, 1, "LOC")])):
        assert word_spans(tags) == strict_spans(tags) == spans
        result = score([tags], [tags])
        assert result["predicted_spans"] == len(spans)
        assert result["f1"] == (1.0 if spans else 0.0)


class _Fixed(SequenceLabeler):
    """A labeler whose logits are given, to test decoding and spans without training."""


def test_predict_text_uses_strict_spans(tiny, monkeypatch) -> None:
    labels = ["O", "B-PER", "I-PER"]
    lab = SequenceLabeler.from_model(tiny("llama"), labels=labels, finetune="frozen",
                                     decoding="greedy").eval()

    def logits(sentences, batch_size=32, docs=None):  # noqa: ANN001, ANN202 - O I-PER I-PER
        return [torch.tensor([[5.0, 0, 0]] + [[0, 0, 5.0]] * (len(s) - 1)) for s in sentences]

    monkeypatch.setattr(lab, "word_logits", logits)
    (record,) = predict_text(lab, ["Obama met Peter Blackburn"])
    # the stray I-PER tags are in no span, as evaluation counts them, and are written O, so
    # that the CoNLL columns hold no span the JSON lacks (issue 37, item 17)
    assert record["sentences"][0]["tags"] == ["O", "O", "O", "O"]
    assert record["spans"] == []


def _pos_file(path: Path, n: int) -> Path:
    """A TOKEN-scheme CoNLL file: every word has a plain tag (as UD's UPOS)."""
    rows = []
    for i in range(n):
        name = ["Obama", "Maria", "Peter"][i % 3]
        rows += [f"{name}\tPROPN", "visited\tVERB", "the\tDET", "city\tNOUN", ".\tPUNCT", ""]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_plain_tags_are_token_tagging(tiny, tmp_path: Path) -> None:
    """POS: one class per tag (not B-X and I-X), token accuracy, each word its own span."""
    from seqrep.train import train

    data = _pos_file(tmp_path / "pos.txt", 40)
    lab = LabelerConfig(model=tiny("llama"), exit_layer=2)
    cfg = TrainConfig(dataset=str(data), test_split=str(_pos_file(tmp_path / "t.txt", 6)),
                      epochs=3, batch_size=8, lr=3e-3, head_lr=3e-2)
    metrics = train(lab, cfg, tmp_path / "run", quiet=True)
    saved = json.loads((tmp_path / "run" / "run.json").read_text())["labeler"]
    assert saved["task"] == "tokens"
    assert saved["labels"] == ["DET", "NOUN", "PROPN", "PUNCT", "VERB"]
    assert metrics["task"] == "tokens" and "accuracy" in metrics["test"]
    assert metrics["test"]["accuracy"] > 0.6
    labeler = SequenceLabeler.from_pretrained(tmp_path / "run")
    (record,) = predict_text(labeler, ["Maria visited the city."])
    assert len(record["spans"]) == len(record["sentences"][0]["words"]) == 5
    assert all(s["label"] in saved["labels"] for s in record["spans"])


@pytest.mark.parametrize("args", [["trian"], ["train"], ["train", "--epochs", "x", "-o", "x"],
                                  ["train", "--bogus"], ["evaluate"], ["predict"]])
def test_usage_errors_are_a_usage_line_and_exit_2(args: list[str]) -> None:
    proc = seqrep(*args)
    err = proc.stderr
    assert proc.returncode == 2, err
    assert "Traceback" not in err and "Usage:" in err and "Error" in err
    assert len(err.strip().splitlines()) <= 6


def test_bare_seqrep_prints_the_help() -> None:
    proc = seqrep()
    assert proc.returncode == 0
    assert "Commands" in proc.stdout + proc.stderr


def test_invalid_utf8_input_is_one_line(tiny, tmp_path: Path) -> None:
    lab = SequenceLabeler.from_model(tiny("llama"), labels=["O", "B-PER", "I-PER"],
                                     finetune="frozen")
    folder = str(lab.save_pretrained(tmp_path / "lab"))
    # an argument as Python hands undecodable argv bytes to the program (surrogateescape)
    for proc in (seqrep("predict", folder, "-", input=b"ok line\n\xff\xfe bad\n"),
                 seqrep("predict", folder, b"caf\xe9".decode("utf-8", "surrogateescape"))):
        err = proc.stderr
        assert proc.returncode == 2 and "UTF-8" in err and "Traceback" not in err, err
    text = "one\u2028still one\x85and one\nline two\n"
    proc = seqrep("predict", folder, "-", input=text.encode())
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split("\n")[:-1]  # JSON lines end at \n only
    assert [json.loads(x)["text"] for x in lines] == ["one\u2028still one\x85and one", "line two"]
