"""Serving a labeler saved with document context (issue 24): each text of a request is one
document, in /v1/label, the HF endpoint and the spaCy component alike, with the labels
``seqrep predict`` gives (itself checked against the labeler's own document encode)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import torch
from support import sharp_document_labeler

from seqrep.model.labeler import SequenceLabeler
from seqrep.predict.tagger import predict_text, split_text
from seqrep.serve.batcher import Batcher

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
TEXTS = ["Obama visited Paris. The European Union said on Thursday it disagreed with German "
         "advice. Peter Blackburn met Angela in Berlin.",
         "Maria left Tokyo for Moscow. Boris praised Madrid.",
         "Peter Blackburn left."]


@pytest.fixture(scope="module")
def doc_dir(tiny, tmp_path_factory: pytest.TempPathFactory) -> Path:
    # a steeper random head: context shows in the tags
    return sharp_document_labeler(tiny("llama"), LABELS).save_pretrained(
        tmp_path_factory.mktemp("servedoc") / "lab")


@pytest.fixture(scope="module")
def doc_lab(doc_dir: Path) -> SequenceLabeler:
    return SequenceLabeler.from_pretrained(doc_dir).eval()


def _tags(records: list[dict]) -> list[list[str]]:
    return [s["tags"] for r in records for s in r["sentences"]]


def _document_tags(lab: SequenceLabeler, text: str) -> list[list[str]]:
    """The labeler's own document encode of the text's sentences (the independent route)."""
    sents = [[text[s:e] for s, e in w] for _, w in split_text(text)]
    return [_as_written([LABELS[i] for i in x.argmax(-1).tolist()])
            for x in lab.word_logits(sents, docs=["d"] * len(sents))]


def _sentence_tags(lab: SequenceLabeler, text: str) -> list[list[str]]:
    sents = [[text[s:e] for s, e in w] for _, w in split_text(text)]
    return [_as_written([LABELS[i] for i in x.argmax(-1).tolist()])
            for x in lab.word_logits(sents, docs=None)]


def test_batched_requests_label_each_text_as_one_document(doc_lab, same) -> None:
    want = [t for text in TEXTS for t in _document_tags(doc_lab, text)]
    assert want != [t for text in TEXTS for t in _sentence_tags(doc_lab, text)]
    batcher = Batcher(doc_lab, batch_tokens=100_000, max_wait_ms=50)
    jobs = [batcher.submit(TEXTS), batcher.submit(TEXTS[:1]), batcher.submit(TEXTS[1:])]
    jobs.append(batcher.submit(TEXTS[1:2], word_scores=True))
    batcher.start()
    got = [j.result(timeout=60) for j in jobs]
    batcher.close()
    assert batcher.misses == 0 and batcher.largest == 4  # one shared pass for all four
    assert _tags(got[0]) == want
    same(got[0], predict_text(doc_lab, TEXTS))
    same(got[1] + got[2], predict_text(doc_lab, TEXTS))
    probs = [_written_probs(x, LABELS)
             for x in doc_lab.word_logits([["Maria", "left", "Tokyo", "for", "Moscow", "."],
                                           ["Boris", "praised", "Madrid", "."]], docs=[0, 0])]
    for sentence, p in zip(got[3][0]["sentences"], probs):
        assert sentence["scores"] == pytest.approx(p, abs=1.5e-4)


def test_label_and_hf_endpoints_answer_as_predict(doc_dir, doc_lab, serving, same) -> None:
    pytest.importorskip("fastapi", reason="the serve extra is not installed")
    from seqrep.serve.app import create_app

    app = create_app(doc_dir)
    want = predict_text(doc_lab, TEXTS)

    async def main() -> tuple:
        async with serving(app) as c:
            label = await c.post("/v1/label", json={"texts": TEXTS})
            hf = await c.post("/v1/hf", json={"inputs": TEXTS,
                                              "parameters": {"aggregation_strategy": "none"}})
            return label, hf

    label, hf = asyncio.run(main())
    assert label.status_code == 200 and hf.status_code == 200
    same(label.json()["results"], want)
    words = [[w for w, t in zip(s["words"], s["tags"]) if t != "O"]
             for r in want for s in r["sentences"]]
    assert [[w["word"] for w in r] for r in hf.json()] == \
        [[w for s in r["sentences"] for w, t in zip(s["words"], s["tags"]) if t != "O"]
         for r in want]
    assert any(words)


def test_spacy_doc_is_one_document(doc_dir, doc_lab) -> None:
    spacy = pytest.importorskip("spacy", reason="the spacy extra is not installed")
    import seqrep.serve.spacy_component  # noqa: F401 - registers the factory

    nlp = spacy.blank("en")
    nlp.add_pipe("seqrep", config={"model": str(doc_dir)})
    for doc, text in zip([nlp(TEXTS[0]), *nlp.pipe(TEXTS[1:])], TEXTS):
        record = predict_text(doc_lab, [text])[0]
        assert _tags([record]) == _document_tags(doc_lab, text)
        spans = [(s["start"], s["end"], s["label"]) for s in record["spans"]
                 if s not in doc._.seqrep_unaligned]
        assert [(e.start_char, e.end_char, e.label_) for e in doc.ents] == spans


def test_word_scores_of_a_request_of_several_texts_are_each_text_s_own(doc_lab) -> None:
    """Each text of a request is its own document in the scores too."""
    batcher = Batcher(doc_lab, batch_tokens=100_000, max_wait_ms=50)
    job = batcher.submit(TEXTS[1:], word_scores=True)
    batcher.start()
    got = job.result(timeout=60)
    batcher.close()
    for record, text in zip(got, TEXTS[1:]):
        sents = [[text[s:e] for s, e in w] for _, w in split_text(text)]
        probs = [_written_probs(x, LABELS)
                 for x in doc_lab.word_logits(sents, docs=[0] * len(sents))]
        for sentence, p in zip(record["sentences"], probs, strict=True):
            assert sentence["scores"] == pytest.approx(p, abs=1.5e-4)


def test_a_short_text_of_two_sentences_is_one_row_in_the_batch_budget(doc_lab) -> None:
    """The rows the batcher budgets are the document's: two short sentences within the
    24-subtoken window are one model row, not one row per sentence."""
    from seqrep.serve.batcher import Job, text_sentences

    text = "Maria left. Boris came."
    job = Job([text, text], pretokenized=False, decoding=None)
    job.documents = [tuple(text_sentences(t)) for t in job.texts]
    assert len(job.sentences) == 4
    assert len(Batcher(doc_lab)._rows(job)) == 2  # one row per text


def _as_written(tags):  # noqa: ANN001, ANN202
    from seqrep.data.tags import spans_to_tags, strict_spans
    return spans_to_tags(strict_spans(tags), len(tags), "IOB2")


def _written_probs(x, labels):  # noqa: ANN001, ANN202
    soft = torch.softmax(x, -1)
    tags = _as_written([labels[i] for i in x.argmax(-1).tolist()])
    return [float(soft[i, labels.index(t)]) for i, t in enumerate(tags)]


def test_each_sentence_of_a_document_batch_is_encoded_once(doc_lab, encodes) -> None:
    """With document context too, the rows the plan counted are the rows computed: each
    sentence is encoded once per batch."""
    batcher = Batcher(doc_lab, batch_tokens=100_000, max_wait_ms=50)
    jobs = [batcher.submit(["Maria left. Boris came."]), batcher.submit(["Peter left."])]
    seen = encodes()
    batcher.start()
    for job in jobs:
        job.result(timeout=60)
    batcher.close()
    assert sorted(seen) == [("Boris", "came", "."), ("Maria", "left", "."),
                            ("Peter", "left", ".")]
