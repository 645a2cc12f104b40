"""The per-copy window is bounded by the model's positions."""

from __future__ import annotations

import pytest
from support import SENTENCES

from seqrep.model.labeler import SequenceLabeler

LABELS = ["O", "B-PER", "I-PER"]


def test_repetition_on_a_512_position_encoder_windows_a_long_sentence(tiny) -> None:
    # BERT-like: 512 learned positions, [CLS] and [SEP] around k = 2 copies, so a copy holds
    # at most (512 - 2) // 2 = 255 subtokens, not the default 256 (which overran position 511)
    lab = SequenceLabeler.from_model(tiny("bert", 1), labels=LABELS, repetitions=1)
    assert lab.config.max_subtokens == 255
    words = (SENTENCES[1] * 40)[:400]  # 400 words, several subtokens some of them
    segments = lab.encode(words)
    assert len(segments) > 1 and max(len(s) for s in segments) <= 512
    (logits,) = lab.word_logits([words], docs=None)
    assert logits.shape == (400, 3)


@pytest.mark.parametrize("r,expected", [(4, 256), (15, 256), (16, 240), (20, 195)])
def test_window_follows_the_positions_and_k(tiny, r: int, expected: int) -> None:
    # the tiny decoders have 4,096 positions and no special tokens around the input: a copy
    # holds min(256, 4096 // k) subtokens (k = 16: 256; k = 17: 240; k = 21: 195)
    lab = SequenceLabeler.from_model(tiny("llama", 1), labels=LABELS, repetitions=r)
    assert lab.config.max_subtokens == expected
