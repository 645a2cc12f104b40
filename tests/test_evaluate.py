from __future__ import annotations

import pytest
from seqeval.metrics import classification_report, f1_score
from seqeval.scheme import IOB2

from seqrep.data.decode import allowed_transitions, decode, viterbi
from seqrep.data.types import Sentence
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


# ------------------------------------------------------------------ chunks and documents
DOC_LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


@pytest.fixture(scope="module")
def doc_labeler(tiny):  # noqa: ANN201
    from support import sharp_document_labeler

    return sharp_document_labeler(tiny("llama"), DOC_LABELS)


def documents(n: int, per_doc: int) -> list[Sentence]:
    """``n`` documents of ``per_doc`` sentences (the test sentences in turn, each document
    starting one further on), gold tags all O: only the predictions are compared."""
    import itertools

    from support import SENTENCES

    out = []
    for d in range(n):
        for words in itertools.islice(itertools.cycle(SENTENCES), d, d + per_doc):
            out.append(Sentence(tuple(words), ("O",) * len(words), doc_id=f"doc{d}"))
    return out


def test_chunks_smaller_than_a_document_never_cut_it(doc_labeler) -> None:
    """Evaluation shows progress chunk by chunk; with document context a chunk ends only
    where a document does, so the tags are those of one pass over everything (issue 37
    item 15: the test meant to show this never made a chunk smaller than a document)."""
    import torch

    from seqrep.evaluate import chunked_logits, evaluate

    sents = documents(3, 7)
    whole: list[list[str]] = []
    evaluate(doc_labeler, sents, batch_size=2, keep=whole)  # one pass, no progress
    chunked: list[list[str]] = []
    done: list[int] = []
    evaluate(doc_labeler, sents, batch_size=2, progress=done.append, keep=chunked, chunk=3)
    assert chunked == whole
    assert done == [7, 14, 21]  # chunks of 3 sentences grow to the ends of documents of 7
    # what cutting the documents into chunks of 3 would give differs, so the check bites
    cut: list[list[str]] = []
    for i in range(0, len(sents), 3):
        evaluate(doc_labeler, sents[i:i + 3], batch_size=2, keep=cut)
    assert cut != whole
    # the logits training's validation and test take, chunk by chunk, are one pass's too
    done.clear()
    logits = chunked_logits(doc_labeler, sents, 2, progress=done.append, chunk=3)
    ref = doc_labeler.word_logits([s.words for s in sents], 2, docs=[s.doc_id for s in sents])
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(logits, ref, strict=True))
    assert done == [7, 14, 21]


def test_chunks_of_sentences_give_one_pass_in_input_order(tiny) -> None:
    """Without document context the chunks go longest first (less padding); the logits and
    tags still come back in input order, equal to one pass over all sentences."""
    import torch

    from seqrep.evaluate import chunked_logits, evaluate
    from seqrep.model.labeler import SequenceLabeler

    torch.manual_seed(0)
    lab = SequenceLabeler.from_model(tiny("llama"), labels=DOC_LABELS, repetitions=1,
                                     finetune="frozen", decoding="greedy").eval()
    sents = [Sentence(s.words, s.tags) for s in documents(2, 5)]  # no documents
    done: list[int] = []
    logits = chunked_logits(lab, sents, 2, progress=done.append, chunk=3)
    assert done == [3, 6, 9, 10]
    ref = lab.word_logits([s.words for s in sents], 2, docs=None)
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(logits, ref, strict=True))
    whole: list[list[str]] = []
    chunked: list[list[str]] = []
    evaluate(lab, sents, batch_size=2, keep=whole)
    evaluate(lab, sents, batch_size=2, keep=chunked, progress=lambda n: None, chunk=3)
    assert chunked == whole and [len(t) for t in whole] == [len(s) for s in sents]
