"""The encoder on real tokenizers: read positions and training labels, written out by hand."""

from __future__ import annotations

import pytest
from support import _byte_bpe_tokenizer

from seqrep.config import LabelerConfig
from seqrep.encode.pipeline import Encoder


def _word_level(n: int):
    """A tokenizer that maps each of the words w0..w{n-1} to one id of its own."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "[PAD]": 1, **{f"w{i}": i + 2 for i in range(n)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]")


@pytest.mark.parametrize("subtoken,expected", [
    ("first", [(12,), (16,), (20,)]),
    ("mean", [(12, 13, 14), (16, 17, 18, 19), (20, 21)]),
])
def test_reads_skip_a_words_lone_space_token(subtoken: str, expected: list) -> None:
    tok = _byte_bpe_tokenizer()
    enc = Encoder(tok, LabelerConfig(model="x", repetitions=1, bos="no", subtoken=subtoken),
                  pad_id=0)
    (seg,) = enc.segments(["Obama", "1996", "Paris"])
    # byte-level BPE of this vocabulary, one copy (11 tokens), written out by hand:
    copy = ["Ġ", "Ob", "am", "a", "Ġ", "1", "9", "9", "6", "ĠPa", "ris"]
    assert tok.convert_ids_to_tokens(list(seg.input_ids)) == copy * 2
    # the last copy starts at 11; "Obama" is read at "Ob" (12), "1996" at "1" (16), never at
    # the lone "Ġ" (11, 15); "Paris" has no lone space and is read at "ĠPa" (20)
    assert list(seg.reads) == expected


def test_training_labels_of_a_windowed_sentence() -> None:
    labels = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    enc = Encoder(_word_level(20), LabelerConfig(model="x", repetitions=1, labels=labels,
                                                 max_subtokens=8), pad_id=1)
    words = [f"w{i}" for i in range(20)]
    tags = [labels[i % 5] for i in range(20)]  # word i has label id i % 5
    items = enc.items([words], [tags])
    # 20 one-token words, windows of 8 sharing 2 (8 // 4): 0-7, 6-13 and 12-19 own the words
    # 0-6, 7-12 and 13-19 (each word where it is furthest from a cut edge)
    assert [it.segment.words for it in items] == [tuple(range(0, 7)), tuple(range(7, 13)),
                                                  tuple(range(13, 20))]
    assert [it.labels for it in items] == [(0, 1, 2, 3, 4, 0, 1), (2, 3, 4, 0, 1, 2),
                                           (3, 4, 0, 1, 2, 3, 4)]
