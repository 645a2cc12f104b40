"""The method's guarantees on tiny random models of five decoder families (issue 3)."""

from __future__ import annotations

import pytest
import torch
from support import DECODERS, SENTENCES
from transformers import AutoModel

from seqrep.encode.pipeline import Encoder
from seqrep.model.labeler import SequenceLabeler
from seqrep.model.masks import middle_layers

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def labeler(path: str, **kw) -> SequenceLabeler:
    kw.setdefault("finetune", "frozen")
    kw.setdefault("exit_layer", "all")  # the guarantees are checked against the whole model
    return SequenceLabeler.from_model(path, labels=LABELS, **kw).eval()


def with_encoder(lab: SequenceLabeler, **changes) -> SequenceLabeler:
    """``lab`` with other encoder settings (``repetitions``, ``padding_side``): they change only
    the rows fed to the model (the Encoder, built from the config as the constructor does),
    so one loaded backbone serves every value."""
    lab.config = lab.config.replace(**changes)
    lab.encoder = Encoder(lab.tokenizer, lab.config, lab.backbone_info.pad_id)
    return lab


@pytest.fixture(scope="module")
def loaded(tiny):
    """``loaded(family, layers, unmask=..., attn=..., **encoder)`` -> a labeler loaded once per
    module for each backbone setting (family, depth, unmasking, attention), with the encoder
    settings (r, padding side) set on it for this use. Backbone loads were most of this
    module's time; what a test compares never depends on the head (frozen, never trained)."""
    cache: dict = {}

    def get(family: str, layers: int = 4, unmask: str = "none", attn: str = "sdpa",
            **encoder) -> SequenceLabeler:
        key = family, layers, unmask, attn
        if key not in cache:
            lab = labeler(tiny(family, layers), unmask=unmask, attn_implementation=attn)
            cache[key] = lab, lab.config
        lab, config = cache[key]
        lab.config = config  # as loaded (an earlier use's settings do not carry over)
        return with_encoder(lab, **encoder)

    return get


@pytest.mark.parametrize("family", DECODERS)
@pytest.mark.parametrize("unmask", ["none", "full", "middle"])
def test_batch_invariance(loaded, family: str, unmask: str) -> None:
    """A sentence's logits alone equal its logits in a batch of longer and shorter ones."""
    for r in (0, 1, 2, 4):
        for side in ("right", "left"):
            lab = loaded(family, 6, unmask, repetitions=r, padding_side=side)
            together = lab.word_logits(SENTENCES, docs=None)
            for sent, logits in zip(SENTENCES, together):
                alone = lab.word_logits([sent], docs=None)[0]
                assert alone.shape == (len(sent), len(LABELS))
                assert (alone - logits).abs().max() < 1e-4, (family, unmask, r, side)


@pytest.mark.parametrize("family", DECODERS)
def test_r0_causal_reproduces_base_model(tiny, loaded, family: str) -> None:
    """r=0 with unmask=none gives the unmodified model's hidden states at the read positions."""
    lab = loaded(family, repetitions=0)
    base = AutoModel.from_pretrained(tiny(family)).eval()
    for sent, states in zip(SENTENCES, lab.word_states(SENTENCES, docs=None)):
        (seg,) = lab.encode(sent)
        with torch.no_grad():
            hidden = base(torch.tensor([seg.input_ids])).last_hidden_state[0]
        expected = torch.stack([hidden[list(r)].mean(0) for r in seg.reads])
        assert torch.allclose(states, expected, atol=1e-5)


@pytest.mark.parametrize("family", DECODERS)
@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_bidirectionality_at_batch_size_one(loaded, family: str, attn: str) -> None:
    """Changing the last word changes earlier words' states iff the strategy looks right."""
    a = ["Obama", "visited", "Paris", "and", "Berlin"]
    b = a[:-1] + ["Brussels"]
    for r, unmask, sees_right in [(0, "none", False), (1, "none", True), (2, "none", True),
                                  (0, "full", True), (0, "middle", True), (1, "middle", True)]:
        lab = loaded(family, unmask=unmask, attn=attn, repetitions=r)
        sa, sb = lab.word_states([a], docs=None)[0], lab.word_states([b], docs=None)[0]
        changed = (sa[:-1] - sb[:-1]).abs().max().item() > 1e-3  # not float noise
        assert changed == sees_right, (family, attn, r, unmask)


@pytest.mark.parametrize("family", DECODERS)
def test_unmasking_same_under_eager_and_sdpa(loaded, family: str) -> None:
    for unmask in ("full", "middle", "1"):
        eager = loaded(family, unmask=unmask, attn="eager", repetitions=1)
        sdpa = loaded(family, unmask=unmask, attn="sdpa", repetitions=1)
        for x, y in zip(eager.word_states(SENTENCES, docs=None),
                        sdpa.word_states(SENTENCES, docs=None)):
            assert torch.allclose(x, y, atol=1e-5)


@pytest.mark.parametrize("family", DECODERS)
def test_exit_layer_is_layer_l_of_full_model(tiny, family: str) -> None:
    """exit_layer=L equals norm(hidden_states[L]) of the full model and keeps L layers."""
    path = tiny(family, 6)
    base = AutoModel.from_pretrained(path).eval()
    full = labeler(path, repetitions=1)
    for L in (1, 3, 5, 6):
        cut = labeler(path, repetitions=1, exit_layer=L)
        assert len(cut.backbone.layers) == L
        assert sum(p.numel() for p in cut.backbone.parameters()) < \
            sum(p.numel() for p in base.parameters()) or L == 6
        probe = full.layer_states(SENTENCES, [L], docs=None)
        for sent, states, probed in zip(SENTENCES, cut.word_states(SENTENCES, docs=None), probe):
            (seg,) = cut.encode(sent)
            with torch.no_grad():
                out = base(torch.tensor([seg.input_ids]), output_hidden_states=True)
            h = out.hidden_states[L][0]
            # transformers returns the last entry already normed, the others raw
            h = h if L == 6 else base.norm(h)
            expected = torch.stack([h[list(r)].mean(0) for r in seg.reads])
            assert torch.allclose(states, expected, atol=1e-5)
            assert torch.allclose(probed[:, 0], expected, atol=1e-5)


@pytest.mark.parametrize("n,expected", [(26, (8, 17)), (28, (9, 18)), (32, (10, 21)),
                                        (36, (11, 24)), (42, (13, 28))])
def test_middle_layers(n: int, expected: tuple[int, int]) -> None:
    assert middle_layers(n) == list(range(expected[0], expected[1] + 1))


def test_long_sentence_every_word_gets_a_state(tiny) -> None:
    """A 1,000-word sentence with r=4 is windowed; every word gets its own state."""
    words = (SENTENCES[1] * 100)[:1000]
    lab = labeler(tiny("llama"), repetitions=4, max_subtokens=64)
    segments = lab.encode(words)
    assert len(segments) > 1
    assert sorted(w for s in segments for w in s.words) == list(range(1000))
    assert all(len(s) <= 5 * 64 for s in segments)
    (states,) = lab.word_states([words], docs=None)
    assert states.shape == (1000, 32)
    assert (states.abs().sum(-1) > 0).all()
    # each word's state is the one it has inside its own window, encoded as a sentence
    from seqrep.encode.repeat import windows

    lengths = [len(w) for w in lab.encoder.words(words)]
    for start, end, owned in windows(lengths, 64, 16)[:3]:
        alone = lab.word_states([words[start:end]], docs=None)[0]
        assert torch.allclose(states[owned], alone[[i - start for i in owned]], atol=1e-4)


def test_encoder_baseline(tiny) -> None:
    """Encoders go through the same interface; unmasking them is refused."""
    lab = labeler(tiny("bert"), repetitions=0)
    logits = lab.word_logits(SENTENCES, docs=None)
    assert [x.shape[0] for x in logits] == [len(s) for s in SENTENCES]
    from seqrep.errors import ConfigError

    with pytest.raises(ConfigError, match="encoder"):
        labeler(tiny("bert"), unmask="full")


def test_exit_layer_out_of_range(tiny) -> None:
    from seqrep.errors import ModelError

    with pytest.raises(ModelError, match="exit_layer=9 but .* has 4 layers"):
        labeler(tiny("llama"), exit_layer=9)
