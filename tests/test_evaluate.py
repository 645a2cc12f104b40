from __future__ import annotations

import pytest
from seqeval.metrics import classification_report, f1_score
from seqeval.scheme import IOB2

from seqrep.data.types import Sentence
from seqrep.decode import allowed_transitions, decode, viterbi
from seqrep.evaluate import check_labels, score

GOLD = [["B-PER", "I-PER", "O", "B-LOC"], ["O", "B-ORG", "I-ORG", "O"], ["B-LOC", "O"]]
PRED = [["B-PER", "I-PER", "O", "B-LOC"], ["O", "I-ORG", "I-ORG", "O"], ["B-PER", "O"]]


def test_score_matches_seqeval_strict() -> None:
    result = score(GOLD, PRED)
    expected = f1_score(GOLD, PRED, mode="strict", scheme=IOB2)
    assert result["f1"] == pytest.approx(expected)
    # strict mode drops the I-ORG chunk without a B-: 2 of 3 predicted spans are right,
    # 2 of 4 gold spans are found
    assert result["precision"] == pytest.approx(2 / 3) and result["recall"] == pytest.approx(2 / 4)
    report = classification_report(GOLD, PRED, mode="strict", scheme=IOB2, output_dict=True)
    assert result["per_label"]["LOC"]["f1"] == pytest.approx(report["LOC"]["f1-score"])
    assert result["per_label"]["ORG"]["support"] == 1


def test_viterbi_only_valid_iob2() -> None:
    import torch

    labels = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    logits = torch.tensor([[0.0, 0.0, 5.0, 0.0, 0.0],  # greedy would start with I-PER
                           [0.0, 0.0, 0.0, 0.0, 5.0],  # then jump to I-LOC
                           [5.0, 0.0, 0.0, 0.0, 0.0]])
    greedy, _ = decode(logits, labels, "greedy")
    assert greedy == ["I-PER", "I-LOC", "O"]
    tags, probs = decode(logits, labels, "constrained")
    start, trans = allowed_transitions(labels)
    assert not start[2] and not trans[0, 2] and trans[1, 2] and not trans[1, 4]
    ids = [labels.index(t) for t in tags]
    assert start[ids[0]] and all(trans[a, b] for a, b in zip(ids, ids[1:]))
    assert len(probs) == 3 and all(0 <= p <= 1 for p in probs)
    assert viterbi(torch.log_softmax(logits, -1), start, trans) == [labels.index(t) for t in tags]


def test_label_mismatch_is_a_clear_error() -> None:
    from seqrep.errors import ConfigError

    sents = [Sentence(("Obama",), ("B-PERSON",))]
    with pytest.raises(ConfigError, match="B-PERSON .*model labels: PER"):
        check_labels(sents, ["O", "B-PER", "I-PER"], "test")
    mapped = check_labels(sents, ["O", "B-PER", "I-PER"], "test", {"PERSON": "PER"})
    assert mapped[0].tags == ("B-PER",)


def test_score_file_matches_seqeval(tmp_path) -> None:
    """A hand-made conlleval-style file (word, gold, prediction) scores as seqeval scores its
    columns, invalid predicted I- tags included; the CLI prints the same as JSON."""
    import json

    from typer.testing import CliRunner

    from seqrep.cli.app import app
    from seqrep.evaluate import score_file

    words = [["Obama", "met", "Kohl", "."], ["EU", "rejects", "German", "call"], ["Paris", "!"]]
    gold = [["B-PER", "O", "B-PER", "O"], ["B-ORG", "O", "B-MISC", "O"], ["B-LOC", "O"]]
    pred = [["B-PER", "O", "I-PER", "O"], ["B-ORG", "O", "B-MISC", "I-MISC"], ["B-LOC", "O"]]
    lines = []
    for ws, gs, ps in zip(words, gold, pred):
        lines += [f"{w} NNP {g} {p}" for w, g, p in zip(ws, gs, ps)] + [""]
    path = tmp_path / "pred.txt"
    path.write_text("\n".join(lines), encoding="utf-8")
    result = score_file(path)
    assert result["sentences"] == 3
    assert result["f1"] == pytest.approx(f1_score(gold, pred, mode="strict", scheme=IOB2))
    # strict: "I-PER" after O is no span, "B-MISC I-MISC" is longer than the gold MISC
    assert result["precision"] == pytest.approx(3 / 4) and result["recall"] == pytest.approx(3 / 5)
    out = CliRunner().invoke(app, ["score", str(path), "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["f1"] == pytest.approx(result["f1"])
