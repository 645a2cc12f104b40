"""The Labeler protocol names what prediction needs; the labelers prediction runs on provide
it, and predict_text, the batcher and the spaCy component are typed against it."""

from __future__ import annotations

import inspect
import typing

import pytest

from seqrep.model.labeler import SequenceLabeler
from seqrep.predict.labeler import Labeler
from seqrep.predict.tagger import decode_logits, predict_tags, predict_text


@pytest.fixture(scope="module")
def labeler(tiny) -> SequenceLabeler:
    return SequenceLabeler.from_model(tiny("llama"), labels=["O", "B-PER", "I-PER"],
                                      finetune="frozen").eval()


def test_the_labelers_prediction_runs_on_provide_it(labeler) -> None:
    assert isinstance(labeler, Labeler)
    assert not isinstance(object(), Labeler)

    class NoLogits:
        config, encoder = labeler.config, labeler.encoder

    assert not isinstance(NoLogits(), Labeler)


def test_prediction_is_typed_against_it() -> None:
    for fn in (predict_text, predict_tags, decode_logits):
        assert typing.get_type_hints(fn)["labeler"] is Labeler, fn.__name__
    from seqrep.serve.batcher import Batcher

    assert "Labeler" in str(inspect.signature(Batcher.__init__).parameters["labeler"].annotation)
    spacy = pytest.importorskip("spacy")
    assert spacy
    from seqrep.serve.spacy_component import SeqrepComponent

    hint = inspect.signature(SeqrepComponent.__init__).parameters["labeler"].annotation
    assert hint == "Labeler | None"
