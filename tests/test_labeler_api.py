"""The labeler's own methods (issue 57, item 2): ``predict``, ``predict_words`` and
``evaluate`` on SequenceLabeler and on OnnxLabeler alike.

Every expected value comes from another route: the ``seqrep predict`` and ``seqrep
evaluate`` commands run in-process (:func:`support.cli`) on the saved folder, whose JSON is
compared with what the methods return.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from support import cli, sharp_document_labeler, write_corpus

from seqrep.model.labeler import SequenceLabeler

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
TEXTS = ["Obama visited Paris. Angela Merkel met the people of Berlin on Tuesday.",
         "",
         "Peter Blackburn reports from Brussels, Dr. Maria said."]


@pytest.fixture(scope="module")
def saved(tiny, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SequenceLabeler]:
    """A tiny labeler with a steep random head (so it predicts spans), saved and loaded back
    as the command loads it."""
    torch.manual_seed(0)
    lab = SequenceLabeler.from_model(tiny("llama"), LABELS, repetitions=1, exit_layer=3,
                                     finetune="frozen", max_subtokens=16, decoding="greedy")
    torch.manual_seed(3)
    with torch.no_grad():
        for p in lab.head.parameters():
            p.normal_(0, 2.0)
    folder = tmp_path_factory.mktemp("api") / "labeler"
    lab.save_pretrained(folder)
    return folder, SequenceLabeler.from_pretrained(folder)


def _json(value: object) -> object:
    return json.loads(json.dumps(value, ensure_ascii=False))


def _cli_records(capsys, *args: str) -> list[dict]:
    code, out, err = cli(capsys, "predict", *args, "--device", "cpu")
    assert code == 0, err
    return [json.loads(line) for line in out.splitlines()]


def test_predict_gives_the_spans_seqrep_predict_prints(saved, capsys, tmp_path) -> None:
    folder, lab = saved
    (tmp_path / "in.txt").write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    expected = _cli_records(capsys, str(folder), "--input", str(tmp_path / "in.txt"))
    assert len(expected) == 3 and sum(len(r["spans"]) for r in expected) >= 2
    assert _json(lab.predict(TEXTS)) == expected
    assert _json(lab.predict(tuple(TEXTS))) == expected
    assert _json(lab.predict(TEXTS[0])) == _cli_records(capsys, str(folder), TEXTS[0])[0]


def test_predict_words_gives_the_tags_of_seqrep_predict_words(saved, capsys) -> None:
    folder, lab = saved
    sentences = [t.split() for t in ("Obama visited Paris .", "Peter Blackburn reports",
                                     "Angela Merkel met the people of Berlin .")]
    out = lab.predict_words(sentences)
    assert len(out) == 3
    for words, got in zip(sentences, out):
        want = _cli_records(capsys, str(folder), " ".join(words), "--words")[0]
        assert got["words"] == words == want["sentences"][0]["words"]
        assert got["tags"] == want["sentences"][0]["tags"]
        assert [(s["words"], s["label"], s["score"], s["text"]) for s in _json(got["spans"])] \
            == [(s["words"], s["label"], s["score"], s["text"]) for s in want["spans"]]
    assert lab.predict_words([]) == []
    assert lab.predict_words([[]]) == [{"words": [], "tags": [], "spans": []}]


def test_documents_are_optional_and_read_where_given(tiny, tmp_path, capsys) -> None:
    """A text is its own document unless ``docs`` says otherwise; with ids, consecutive texts
    are one document, as ``seqrep predict`` reads a JSONL file's doc_id."""
    lab = sharp_document_labeler(tiny("llama"), LABELS)
    folder = tmp_path / "doc"
    lab.save_pretrained(folder)
    lab = SequenceLabeler.from_pretrained(folder)
    texts = ["Obama visited Paris .", "Peter Blackburn reports .", "Angela Merkel left ."]
    docs = ["a", "a", "b"]
    lines = [json.dumps({"text": t, "doc_id": d}) for t, d in zip(texts, docs)]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    together = _cli_records(capsys, str(folder), "--input", str(tmp_path / "in.jsonl"))
    (tmp_path / "in.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    alone = _cli_records(capsys, str(folder), "--input", str(tmp_path / "in.txt"))
    assert together != alone  # the neighbours change the labels: the check can fail
    assert _json(lab.predict(texts, docs=docs)) == together
    assert _json(lab.predict(texts)) == alone
    words = [t.split() for t in texts]
    assert [r["tags"] for r in lab.predict_words(words, docs=docs)] \
        == [r["sentences"][0]["tags"] for r in together]
    assert [r["tags"] for r in lab.predict_words(words)] \
        == [r["sentences"][0]["tags"] for r in alone]


def test_evaluate_gives_the_scores_seqrep_evaluate_prints(saved, capsys, tmp_path) -> None:
    folder, lab = saved
    data = write_corpus(tmp_path / "test.txt", 12)
    code, out, err = cli(capsys, "evaluate", str(folder), "--dataset", str(data), "--json",
                         "--quiet", "--device", "cpu")
    assert code == 0, err
    expected = json.loads(out)
    for got in (lab.evaluate(data), lab.evaluate(str(data), split="train")):
        got = _json(got)
        assert got.pop("seconds") >= 0 and expected.pop("seconds", 0) >= 0
        assert got == expected
    # sentences in memory: (words, tags) pairs, scored alike
    blocks = data.read_text(encoding="utf-8").strip().split("\n\n")
    pairs = [([x.split()[0] for x in b.splitlines()], [x.split()[1] for x in b.splitlines()])
             for b in blocks]
    got = _json(lab.evaluate(pairs))
    got.pop("seconds")
    assert {k: got[k] for k in ("f1", "precision", "recall", "per_label", "sentences")} \
        == {k: expected[k] for k in ("f1", "precision", "recall", "per_label", "sentences")}


def test_from_pretrained_by_hub_name_predicts_as_the_folder(saved, tmp_path,
                                                           monkeypatch) -> None:
    from hubcache import folder_files, lay_out_cache, use_cache

    folder, lab = saved
    root = use_cache(tmp_path / "hf-cache", monkeypatch)
    lay_out_cache(root, "acme/api-ner", folder_files(folder))
    assert SequenceLabeler.from_pretrained("acme/api-ner").predict(TEXTS) == lab.predict(TEXTS)


def test_docs_are_keyword_optional(saved) -> None:
    from seqrep.predict.tagger import predict_tags

    _, lab = saved
    words = [["Obama", "visited", "Paris", "."]]
    assert torch.equal(lab.word_logits(words)[0], lab.word_logits(words, docs=None)[0])
    assert lab.word_states(words)[0].shape[0] == 4
    assert predict_tags(lab, words) == predict_tags(lab, words, docs=None)


@pytest.mark.parametrize(("call", "error", "needle"), [
    (lambda lab: lab.predict(5), TypeError, "text_or_texts is 5"),
    (lambda lab: lab.predict(None), TypeError, "text_or_texts is None"),
    (lambda lab: lab.predict(b"Obama"), TypeError, "text_or_texts is b'Obama'"),
    (lambda lab: lab.predict({"text": "Obama"}), TypeError, "text_or_texts is {"),
    (lambda lab: lab.predict(["Obama", 3]), TypeError, "text_or_texts[1] is 3"),
    (lambda lab: lab.predict(["Obama"], docs=["a", "b"]), ValueError, "docs has 2"),
    (lambda lab: lab.predict(["Obama"], docs="a"), TypeError, "docs is 'a'"),
    (lambda lab: lab.predict("Obama", batch_size=0), ValueError, "batch_size is 0"),
    (lambda lab: lab.predict_words("Obama"), TypeError, "sentences is 'Obama'"),
    (lambda lab: lab.predict_words(["Obama", "left"]), TypeError, "sentences[0] is 'Obama'"),
    (lambda lab: lab.predict_words([["Obama", 3]]), TypeError, "sentences[0][1] is 3"),
    (lambda lab: lab.predict_words([["Obama"]], docs=[1, 2]), ValueError, "docs has 2"),
    (lambda lab: lab.evaluate(5), TypeError, "dataset is 5"),
])
def test_bad_input_is_one_line_naming_the_argument(saved, call, error, needle) -> None:
    _, lab = saved
    with pytest.raises(error) as info:
        call(lab)
    message = str(info.value)
    assert needle in message and "\n" not in message, message
    assert info.value.__traceback__.tb_next is not None
    # raised by the method's own check, not from inside the model
    assert "seqrep/model" not in str(info.traceback[-1].path)


def test_empty_and_long_inputs_get_answers(saved) -> None:
    _, lab = saved
    assert lab.predict([]) == []
    assert lab.predict("") == {"text": "", "sentences": [], "spans": []}
    assert lab.predict("   \n ") == {"text": "   \n ", "sentences": [], "spans": []}
    # far past the backbone's positions and the 16-subtoken window: windowed, not cut
    words = ["Obama", "visited", "Paris", "and", "Berlin"] * 400
    record = lab.predict(" ".join(words))
    assert [w for s in record["sentences"] for w in s["words"]] == words
    assert all(len(s["tags"]) == len(s["words"]) for s in record["sentences"])
    text = record["text"]
    assert all(text[s["start"]:s["end"]] == s["text"] for s in record["spans"])
    (tags,) = [r["tags"] for r in lab.predict_words([words])]
    assert tags == record["sentences"][0]["tags"]


def test_the_labeler_methods_live_in_one_place() -> None:
    """SequenceLabeler and OnnxLabeler inherit them from one class: no copy per runtime."""
    from seqrep.export.runtime import OnnxLabeler

    for name in ("predict", "predict_words", "evaluate"):
        assert getattr(SequenceLabeler, name) is getattr(OnnxLabeler, name), name


def test_the_onnx_labeler_predicts_as_the_torch_labeler(saved, tmp_path) -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    from seqrep.export.onnx import export_onnx
    from seqrep.export.runtime import OnnxLabeler

    folder, lab = saved
    export_onnx(folder, tmp_path / "onnx", check=False)  # parity: below
    onnx = OnnxLabeler.from_pretrained(tmp_path / "onnx")
    want, got = lab.predict(TEXTS), onnx.predict(TEXTS)
    strip = [{**r, "spans": [{k: v for k, v in s.items() if k != "score"} for s in r["spans"]]}
             for r in want]
    assert [{**r, "spans": [{k: v for k, v in s.items() if k != "score"} for s in r["spans"]]}
            for r in got] == strip
    assert all(abs(a["score"] - b["score"]) <= 2e-4 for r, q in zip(want, got)
               for a, b in zip(r["spans"], q["spans"]))
    assert [r["tags"] for r in onnx.predict_words([["Obama", "visited", "Paris"]])] \
        == [r["tags"] for r in lab.predict_words([["Obama", "visited", "Paris"]])]
