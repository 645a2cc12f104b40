"""Strategies carry their behaviour: a decoding and a context layout registered from outside the
package, each in one entry (plus one row builder for the layout), run through evaluation,
prediction (Python and the CLI) and serving, with nothing else edited.

- ``all-o``: a decoding that tags every word with the first class (``O``);
- ``neighbour``: a layout whose row for a sentence holds the sentence before it in its
  document, then the sentence, and reads only the sentence's words.

Expected values come from an independent route: a twin of the labeler whose saved config says
``context="sentence"`` (same weights) labels the two sentences joined as one, and its logits
for the second sentence's words are what the neighbour layout must give; the probabilities
are torch's softmax of those logits."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Hashable, Iterator, Sequence
from pathlib import Path

import pytest
import torch

from seqrep.core.contexts import CONTEXTS, Context
from seqrep.data.tasks import DECODINGS, SPANS, Decoding
from seqrep.data.types import Sentence
from seqrep.encode.repeat import build_segment
from seqrep.encode.rows import Item
from seqrep.evaluate import evaluate
from seqrep.model.labeler import SequenceLabeler
from seqrep.predict.tagger import predict_tags, predict_text

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
FIRST = ["Obama", "visited", "Paris", "."]
SECOND = ["Peter", "Blackburn", "reports", "from", "Brussels", "."]


def all_o(log_probs: torch.Tensor, labels: Sequence[str]) -> list[int]:
    """Every word gets class 0."""
    return [0] * int(log_probs.shape[0])


def neighbour_rows(encoder, sentences: Sequence[Sequence[str]],  # noqa: ANN001
                   tags: Sequence[Sequence[str]] | None = None,
                   docs: Sequence[Hashable | None] | None = None) -> list[Item]:
    """One row per sentence: the previous sentence of its document, then it; the row reads
    the sentence's words only."""
    out = []
    for i, words in enumerate(sentences):
        if not words:
            continue
        same = docs is not None and i and docs[i] is not None and docs[i - 1] == docs[i]
        before = list(sentences[i - 1]) if same else []
        ids, leads = encoder.word_ids(before + list(words))
        seg = build_segment(ids, encoder.spec, owned=range(len(before), len(ids)), leads=leads)
        places = tuple((i, w - len(before)) for w in seg.words)
        labels = None if tags is None else tuple(encoder.label2id[tags[i][w]] for _, w in places)
        out.append(Item(i, seg, labels, places))
    return out


@pytest.fixture(scope="module")
def registered() -> Iterator[None]:
    """The two entries, registered as a user's package would, removed afterwards."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(DECODINGS, "all-o", Decoding("all-o", "every word O", all_o))
        mp.setitem(CONTEXTS, "neighbour",
                   Context("neighbour", "the sentence before, then the sentence",
                           documents=True, rows=neighbour_rows))
        yield


@pytest.fixture(scope="module")
def folders(registered, tiny, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The neighbour labeler's folder and its sentence-context twin (same weights)."""
    root = tmp_path_factory.mktemp("strategies")
    lab = SequenceLabeler.from_model(tiny("llama", 2), labels=LABELS, repetitions=1,
                                     finetune="frozen", context="neighbour")
    path = lab.save_pretrained(root / "neighbour")
    twin = root / "sentence"
    shutil.copytree(path, twin)
    config = json.loads((twin / "config.json").read_text())
    assert config["labeler"]["context"] == "neighbour"
    config["labeler"]["context"] = "sentence"
    (twin / "config.json").write_text(json.dumps(config))
    return path, twin


@pytest.fixture(scope="module")
def labelers(folders) -> tuple[SequenceLabeler, SequenceLabeler]:
    return tuple(SequenceLabeler.from_pretrained(p).eval() for p in folders)


def _expected(twin: SequenceLabeler) -> list[torch.Tensor]:
    """The logits the neighbour layout must give FIRST and SECOND as one document."""
    alone, joined = twin.word_logits([FIRST, FIRST + SECOND], docs=None)
    return [alone, joined[len(FIRST):]]


def _greedy(logits: torch.Tensor) -> list[str]:
    return SPANS.written([LABELS[i] for i in logits.argmax(-1).tolist()])


def test_the_layout_builds_the_rows(labelers) -> None:
    lab, twin = labelers
    got = lab.word_logits([FIRST, SECOND], docs=["d", "d"])
    for a, b in zip(got, _expected(twin), strict=True):
        torch.testing.assert_close(a, b)
    # the sentence before is read: alone, the second sentence's logits differ
    assert not torch.allclose(got[1], twin.word_logits([SECOND], docs=None)[0])
    # in different documents each sentence is alone
    torch.testing.assert_close(lab.word_logits([FIRST, SECOND], docs=["a", "b"])[1],
                               twin.word_logits([SECOND], docs=None)[0])


def test_predict_runs_both(labelers) -> None:
    lab, twin = labelers
    expected = _expected(twin)
    tagged = predict_tags(lab, [FIRST, SECOND], "greedy", docs=["d", "d"])
    for (tags, probs), x in zip(tagged, expected, strict=True):
        assert tags == _greedy(x)
        # each word's probability is that of the tag written for it
        soft = torch.softmax(x, -1)
        torch.testing.assert_close(torch.tensor(probs),
                                   soft[range(len(tags)), [LABELS.index(t) for t in tags]],
                                   check_dtype=False)
    tagged = predict_tags(lab, [FIRST, SECOND], "all-o", docs=["d", "d"])
    assert [t for t, _ in tagged] == [["O"] * len(FIRST), ["O"] * len(SECOND)]
    for (_, probs), x in zip(tagged, expected, strict=True):
        torch.testing.assert_close(torch.tensor(probs), torch.softmax(x, -1)[:, 0],
                                   check_dtype=False)
    # raw text: one text is one document
    record = predict_text(lab, [" ".join(FIRST + SECOND)], "greedy")[0]
    assert [s["words"] for s in record["sentences"]] == [FIRST, SECOND]
    assert [s["tags"] for s in record["sentences"]] == [_greedy(x) for x in expected]


def test_evaluate_runs_both(labelers) -> None:
    lab, twin = labelers
    expected = [_greedy(x) for x in _expected(twin)]
    gold = [Sentence(FIRST, ["B-PER", "O", "B-LOC", "O"], doc_id="d"),
            Sentence(SECOND, ["B-PER", "I-PER", "O", "O", "B-LOC", "O"], doc_id="d")]
    kept: list[list[str]] = []
    result = evaluate(lab, gold, "greedy", keep=kept)
    assert kept == expected
    assert result["f1"] == SPANS.score([g.tags for g in gold], expected)["f1"]
    result = evaluate(lab, gold, "all-o")
    # 4 gold spans (counted by hand), none predicted
    assert (result["f1"], result["predicted_spans"], result["gold_spans"]) == (0.0, 0, 4)


def test_the_cli_predicts_with_both(folders, capsys) -> None:
    from inprocess import seqrep

    ran = seqrep("predict", str(folders[0]), " ".join(FIRST + SECOND), "--decoding", "all-o",
                 "--device", "cpu")
    assert ran.returncode == 0, ran.stderr
    record = json.loads(ran.stdout.splitlines()[0])
    assert [s["tags"] for s in record["sentences"]] == [["O"] * len(FIRST),
                                                        ["O"] * len(SECOND)]
    assert record["spans"] == []
    ran = seqrep("predict", str(folders[0]), "x", "--decoding", "beam")
    assert ran.returncode == 2
    assert ran.stderr == ("error: --decoding 'beam'; expected one of greedy, constrained, "
                          "all-o\n")


def test_serve_runs_both(labelers) -> None:
    pytest.importorskip("fastapi", reason="the serve extra is not installed")
    from fastapi.testclient import TestClient

    from seqrep.serve.app import create_app

    lab, twin = labelers
    with TestClient(create_app(labeler=lab), raise_server_exceptions=False) as client:
        for _ in range(500):
            if client.get("/health").status_code == 200:
                break
            threading.Event().wait(0.01)
        text = " ".join(FIRST + SECOND)
        body = client.post("/v1/label", json={"text": text, "decoding": "greedy"}).json()
        sentences = body["results"][0]["sentences"]
        assert [s["tags"] for s in sentences] == [_greedy(x) for x in _expected(twin)]
        r = client.post("/v1/label", json={"text": text, "decoding": "all-o"})
        assert r.status_code == 200, r.text
        assert r.json()["decoding"] == "all-o" and r.json()["results"][0]["spans"] == []
        r = client.post("/v1/label", json={"text": text, "decoding": "beam"})
        assert r.status_code == 422 and "all-o" in r.text
