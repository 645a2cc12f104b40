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


def test_the_window_fit_counts_the_separators_between_copies() -> None:
    from seqrep.encode.pipeline import fit_positions
    from seqrep.encode.repeat import RepeatSpec

    config = LabelerConfig(model="x", repetitions=1, max_subtokens=256)
    spec = RepeatSpec(1, prefix=(1,), suffix=(2,), separator=(3, 4))
    # 100 positions, minus BOS, EOS and one 2-token separator between the 2 copies: 96 / 2
    assert fit_positions(config, spec, 100).max_subtokens == 48
    spec = RepeatSpec(2, prefix=(1,), suffix=(2,), separator=(3, 4))
    # 3 copies, 2 separators: (100 - 1 - 1 - 4) // 3
    assert fit_positions(config.replace(repetitions=2), spec, 100).max_subtokens == 31


def test_a_word_longer_than_the_window_is_cut_to_the_window() -> None:
    tok = _byte_bpe_tokenizer()
    enc = Encoder(tok, LabelerConfig(model="x", repetitions=0, bos="no", max_subtokens=8),
                  pad_id=0)
    (seg,) = enc.segments(["1996199619961996"])
    # 17 tokens (a lone "Ġ", then one per digit), cut to the 8 a copy holds
    assert tok.convert_ids_to_tokens(list(seg.input_ids)) == ["Ġ", "1", "9", "9", "6", "1",
                                                               "9", "9"]


def test_sentence_context_never_tokenizes_the_context_separator() -> None:
    tok = _byte_bpe_tokenizer()
    texts: list = []

    class Recording:
        def __getattr__(self, name: str):  # noqa: ANN204
            return getattr(tok, name)

        def __call__(self, text, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN204
            texts.append(text)
            return tok(text, *args, **kwargs)

    Encoder(Recording(), LabelerConfig(model="x", context_separator="@@"), pad_id=0)
    assert all("@@" not in str(x) for x in texts)


def test_a_row_counts_the_sentences_whose_first_word_it_reads() -> None:
    from seqrep.encode.pipeline import Item
    from seqrep.encode.repeat import Segment

    seg = Segment((7, 8, 9), (0, 1, 2), ((0,), (1,), (2,)))
    assert Item(5, seg).starts == 1
    assert Item(5, Segment((7, 8), (3, 4), ((0,), (1,)))).starts == 0
    # a document row: the end of sentence 5, then sentences 6 and 7 from their first words
    assert Item(5, seg, places=((5, 3), (6, 0), (7, 0))).starts == 2


def test_a_shifted_row_reads_the_same_words_of_sentences_further_on() -> None:
    """A row built for sentences numbered from 0, placed after 3 others, reads the same
    words of sentences 3 on (the serving batcher joins rows each job encoded)."""
    from seqrep.encode.repeat import Segment
    from seqrep.encode.rows import Item

    seg = Segment((7, 8, 9), (0, 1, 2), ((0,), (1,), (2,)))
    alone = Item(1, seg, labels=(0, 2, 1)).shifted(3)
    assert (alone.sentence, alone.segment, alone.labels, alone.places) == (4, seg, (0, 2, 1), None)
    assert alone.targets() == ((4, 0), (4, 1), (4, 2))
    row = Item(0, seg, places=((0, 3), (1, 0), (2, 0))).shifted(3)
    assert row.sentence == 3 and row.targets() == ((3, 3), (4, 0), (5, 0))
