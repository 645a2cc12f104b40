"""Tasks and decodings as table objects (:mod:`seqrep.data.tasks`), and the evaluation module's
choice of decoding and per-layer probe scores. Expected values are written out by hand."""

from __future__ import annotations

import pytest
import torch

from seqrep.data.tasks import DECODINGS, SPANS, TOKENS, resolve_task, task_of
from seqrep.data.types import Sentence
from seqrep.errors import ConfigError
from seqrep.evaluate import choose_decoding, layer_scores


def _sents(*tag_lists: list[str]) -> list[Sentence]:
    return [Sentence([f"w{i}" for i in range(len(t))], t) for t in tag_lists]


def test_span_task_reads_iob2() -> None:
    sents = _sents(["B-PER", "I-PER", "O"], ["B-LOC", "O"])
    assert SPANS.inventory(sents) == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    assert SPANS.gold(["B-PER", "I-PER", "O"]) == ("B-PER", "I-PER", "O")
    assert SPANS.types(["O", "B-PER", "I-PER", "I-LOC"]) == {"PER", "LOC"}
    assert SPANS.unit_tag("PER") == "B-PER" and SPANS.unit == "span"
    assert SPANS.spans(["O", "I-PER", "B-LOC", "I-LOC"]) == [(2, 4, "LOC")]
    assert SPANS.counts(SPANS.score([["B-PER", "O"]], [["O", "O"]])) == {
        "predicted_spans": 0, "gold_spans": 1}


def test_token_task_reads_plain_tags() -> None:
    # readers store a plain tag X as B-X
    sents = _sents(["B-NOUN", "B-VERB"], ["B-NOUN", "B-DET"])
    assert TOKENS.gold(["B-NOUN", "I-X", "O"]) == ("NOUN", "X", "O")
    assert TOKENS.inventory(sents) == ["DET", "NOUN", "VERB"]
    assert TOKENS.types(["NOUN", "O", "VERB"]) == {"NOUN", "VERB"}
    assert TOKENS.unit_tag("NOUN") == "NOUN" and TOKENS.unit == "word"
    assert TOKENS.spans(["NOUN", "NOUN", "O"]) == [(0, 1, "NOUN"), (1, 2, "NOUN")]
    assert TOKENS.counts({"f1": 1.0}) == {}
    # 3 of 4 words right
    assert TOKENS.score([["A", "B"], ["A", "A"]], [["A", "B"], ["A", "B"]])["accuracy"] == 0.75


def test_decodings_a_task_uses() -> None:
    assert SPANS.decoding("greedy") == "greedy" and SPANS.decoding("constrained") == "constrained"
    # one tag per word: no transitions to constrain
    assert TOKENS.decoding("constrained") == "greedy" == TOKENS.decoding("greedy")


def test_task_names() -> None:
    plain = _sents(["B-NOUN", "B-VERB"])
    spans = _sents(["B-PER", "I-PER"])
    assert resolve_task("auto", plain) is TOKENS and resolve_task("auto", spans) is SPANS
    assert resolve_task("spans", plain) is SPANS
    assert task_of("tokens") is TOKENS and task_of(SPANS) is SPANS
    assert task_of("auto") is SPANS  # a labeler built from given labels, never trained
    with pytest.raises(ConfigError, match="task='pos'; expected one of spans, tokens"):
        task_of("pos")


def test_a_config_checks_its_labels_by_its_task() -> None:
    """'O' must come first where tags are IOB2: a spans config, and an auto one (read as
    spans until training resolves it); a token tagger's plain tags may hold 'O' anywhere."""
    from seqrep.config import LabelerConfig

    for task in ("spans", "auto"):
        with pytest.raises(ConfigError, match="^labels must list 'O' first$"):
            LabelerConfig(task=task, labels=["B-PER", "O", "I-PER"])
    assert list(LabelerConfig(task="tokens", labels=["ADJ", "O", "X"]).labels) == \
        ["ADJ", "O", "X"]


def test_decoding_names_are_checked_in_one_place() -> None:
    assert DECODINGS.check("greedy") == "greedy"
    assert DECODINGS.check("auto", auto=True) == "auto"
    with pytest.raises(ConfigError, match=r"^decoding='auto'; expected one of greedy, "
                                          r"constrained$"):
        DECODINGS.check("auto")
    # the option's message lists the choices as every table's does
    with pytest.raises(ConfigError, match=r"^--decoding 'x'; expected one of greedy, "
                                          r"constrained$"):
        DECODINGS.check("x", "--decoding")


def test_choose_decoding() -> None:
    tie = {"greedy": {"f1": 0.5}, "constrained": {"f1": 0.5}}
    greedy_better = {"greedy": {"f1": 0.6}, "constrained": {"f1": 0.5}}
    assert choose_decoding(tie, "auto") == "constrained"  # a tie keeps constrained
    assert choose_decoding(greedy_better, "auto") == "greedy"
    assert choose_decoding(greedy_better, "constrained") == "constrained"  # as asked
    assert choose_decoding(tie, "greedy") == "greedy"
    assert choose_decoding(tie, "constrained", "tokens") == "greedy"
    assert choose_decoding(greedy_better, "auto", "tokens") == "greedy"


def test_layer_scores_score_each_layer_greedily() -> None:
    """Two sentences (2 + 1 words), two layers: layer 0's argmax is the gold (F1 1), layer
    1's is O everywhere (no span: F1 0, recall 0)."""
    labels = ["O", "B-PER", "I-PER"]
    gold = _sents(["B-PER", "I-PER"], ["O"])
    right = [[0, 5, 0], [0, 0, 5], [5, 0, 0]]  # B-PER, I-PER | O
    all_o = [[5, 0, 0], [5, 0, 0], [5, 0, 0]]
    logits = torch.tensor([[a, b] for a, b in zip(right, all_o)], dtype=torch.float)
    scores = layer_scores(logits, gold, labels)
    assert [s["f1"] for s in scores] == [1.0, 0.0]
    assert [s["predicted_spans"] for s in scores] == [1, 0]
