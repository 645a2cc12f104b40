"""The spaCy component: doc.ents from seqrep's spans, aligned by character offsets."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

spacy = pytest.importorskip("spacy", reason="the spacy extra is not installed")

import seqrep.serve.spacy_component as component  # noqa: E402
from seqrep.predict.tagger import predict_text  # noqa: E402


@pytest.fixture(scope="module")
def nlp(labeler_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("seqrep", config={"model": str(labeler_dir)})
    return nlp


def _ents(doc) -> list[tuple[int, int, str]]:
    return [(e.start_char, e.end_char, e.label_) for e in doc.ents]


def test_doc_ents_are_the_predicted_spans(nlp, labeler, texts) -> None:
    for text in texts:
        doc = nlp(text)
        spans = predict_text(labeler, [text])[0]["spans"]
        aligned = [(s["start"], s["end"], s["label"]) for s in spans
                   if s not in doc._.seqrep_unaligned]
        assert _ents(doc) == aligned
        assert len(doc.ents) + len(doc._.seqrep_unaligned) == len(spans)  # none dropped
        for ent, s in zip(doc.ents, [s for s in spans if s not in doc._.seqrep_unaligned]):
            assert ent.text == s["text"] and ent._.seqrep_score == s["score"]


def test_pipe_batches_through_one_call(nlp, labeler, texts, monkeypatch) -> None:
    calls = []
    real = component.predict_text

    def counting(lab, batch, *args, **kw):  # noqa: ANN001, ANN202
        calls.append(list(batch))
        return real(lab, batch, *args, **kw)

    monkeypatch.setattr(component, "predict_text", counting)
    docs = list(nlp.pipe(texts, batch_size=len(texts)))
    assert calls == [texts]
    want = [[(s["start"], s["end"], s["label"]) for s in r["spans"]
             if s not in d._.seqrep_unaligned] for d, r in zip(docs, real(labeler, texts))]
    assert [_ents(d) for d in docs] == want


def test_unaligned_span_is_reported_not_dropped(nlp, caplog) -> None:
    doc = nlp.make_doc("The A.B.C company met Obama.")  # spaCy: one token 'A.B.C'
    pipe = nlp.get_pipe("seqrep")
    record = {"spans": [{"start": 4, "end": 8, "label": "ORG", "score": 0.9, "text": "A.B."},
                        {"start": 22, "end": 27, "label": "PER", "score": 0.8,
                         "text": "Obama"}]}
    with caplog.at_level(logging.WARNING, logger="seqrep.spacy"):
        pipe._set(doc, record)
    assert _ents(doc) == [(22, 27, "PER")]
    assert doc._.seqrep_unaligned == [record["spans"][0]]
    assert "'A.B.' [4:8] ORG" in caplog.text


def test_factory_found_by_entry_point(labeler_dir) -> None:
    """A fresh process that never imports seqrep finds the factory through the
    ``spacy_factories`` entry point of the installed package."""
    from importlib.metadata import entry_points

    if not any(e.name == "seqrep" for e in entry_points(group="spacy_factories")):
        pytest.skip("seqrep is installed without its spacy_factories entry point")
    code = ("import spacy, sys; nlp = spacy.blank('en'); "
            f"nlp.add_pipe('seqrep', config={{'model': {str(labeler_dir)!r}}}); "
            "doc = nlp('Obama visited Paris.'); print(len(doc.ents) >= 0, "
            "'seqrep.serve.spacy_component' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-2:] == ["True", "True"]


def test_model_is_required() -> None:
    with pytest.raises(ValueError, match="model"):
        spacy.blank("en").add_pipe("seqrep")
