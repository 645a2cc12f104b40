"""Document context for encoders (issue 24, FLERT-style): a BERT-like encoder at r=0 reads
neighbouring sentences of its document in the window, with [CLS] and [SEP] around the row
only, sentence boundaries marked, and the window cut to the model's positions."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from support import SENTENCES, document, neighbours_change_labels

from seqrep.model.labeler import SequenceLabeler

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
BUDGET = 24


@pytest.fixture(scope="module")
def doc_labeler(tiny) -> SequenceLabeler:
    torch.manual_seed(0)
    return SequenceLabeler.from_model(tiny("bert", 2), labels=LABELS, repetitions=0,
                                      context="document", context_tokens=BUDGET).eval()


@pytest.fixture(scope="module")
def sentence_labeler(tiny, doc_labeler: SequenceLabeler) -> SequenceLabeler:
    lab = SequenceLabeler.from_model(tiny("bert", 2), labels=LABELS, repetitions=0).eval()
    lab.load_state_dict(doc_labeler.state_dict())
    return lab


def test_a_row_is_one_cls_sep_pair_with_sentences_marked_inside(doc_labeler) -> None:
    tok = doc_labeler.tokenizer
    cls, sep = tok.cls_token_id, tok.sep_token_id
    # the tiny WordPiece tokenizer, like BERT's, reads the default newline separator as nothing
    assert tok("\n", add_special_tokens=False)["input_ids"] == []
    doc = document(3)[:1] + [["Peter", "Blackburn"]]  # 4 + 2 words, far under the budget
    (item,) = doc_labeler.encoder.items(doc, docs=["d", "d"])
    ids = list(item.segment.input_ids)
    first = [i for w in doc[0] for i in doc_labeler.encoder.words([w])[0]]
    second = [i for w in doc[1] for i in doc_labeler.encoder.words([w])[0]]
    # [CLS] sentence 1 [SEP] sentence 2 [SEP]: the boundary stays visible
    assert ids == [cls] + first + [sep] + second + [sep]
    # the word after the boundary is read at its own first subtoken, not at the [SEP]
    assert item.targets()[4] == (1, 0)
    assert ids[item.segment.reads[4][0]] == second[0]


def test_every_word_of_a_40_sentence_document_is_labeled_once(doc_labeler) -> None:
    doc = document(40)
    items = doc_labeler.encoder.items(doc, docs=["d"] * 40)
    assert len(items) > 3
    read = sorted(p for it in items for p in it.targets())
    assert read == [(s, w) for s, sent in enumerate(doc) for w in range(len(sent))]
    tok = doc_labeler.tokenizer
    for it in items:  # one [CLS] at the start of every row, never inside
        assert it.segment.input_ids[0] == tok.cls_token_id
        assert tok.cls_token_id not in it.segment.input_ids[1:]
    logits = doc_labeler.word_logits(doc, docs=["d"] * 40)
    assert [len(x) for x in logits] == [len(s) for s in doc]


def test_a_one_sentence_document_equals_sentence_level(doc_labeler, sentence_labeler) -> None:
    for sent in SENTENCES:
        (doc,) = doc_labeler.word_logits([sent], docs=["x"])
        (alone,) = sentence_labeler.word_logits([sent], docs=None)
        torch.testing.assert_close(doc, alone, rtol=1e-5, atol=1e-6)


def test_a_sentence_s_labels_do_not_depend_on_its_batch(doc_labeler) -> None:
    a, b = document(6), document(9)[2:]
    together = doc_labeler.word_logits(a + b, batch_size=8,
                                       docs=["a"] * len(a) + ["b"] * len(b))
    alone = doc_labeler.word_logits(a, batch_size=1, docs=["a"] * len(a))
    for x, y in zip(together[: len(a)], alone):
        torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-5)


def test_neighbours_change_an_encoder_s_labels(doc_labeler, sentence_labeler) -> None:
    assert neighbours_change_labels(doc_labeler, sentence_labeler)


def test_the_window_fits_the_encoder_s_positions(tmp_path: Path) -> None:
    import transformers as tf
    from support import _wordpiece_tokenizer

    tok = _wordpiece_tokenizer()
    config = tf.BertConfig(vocab_size=len(tok), num_hidden_layers=1, hidden_size=32,
                           intermediate_size=64, num_attention_heads=4,
                           max_position_embeddings=40)
    torch.manual_seed(0)
    tf.AutoModel.from_config(config).save_pretrained(tmp_path / "bert40")
    tok.save_pretrained(tmp_path / "bert40")
    lab = SequenceLabeler.from_model(str(tmp_path / "bert40"), labels=LABELS, repetitions=0,
                                     context="document", context_tokens=512).eval()
    # 40 positions less [CLS] and [SEP]
    assert lab.config.context_tokens == 38
    doc = document(40)
    items = lab.encoder.items(doc, docs=["d"] * 40)
    assert max(len(it.segment) for it in items) <= 40
    logits = lab.word_logits(doc, docs=["d"] * 40)  # no position past the table
    assert [len(x) for x in logits] == [len(s) for s in doc]
    # a word as long as a whole copy, after a sentence boundary: its [SEP] and the word
    # together are cut to the copy (the word loses its last subtoken), never past position 40
    long = "parisberlin" * 8
    assert len(lab.encoder.words([long])[0]) == 38  # cut to the copy already
    doc = [["Obama", "visited"], [long, "Paris"]]
    items = lab.encoder.items(doc, docs=["d", "d"])
    assert max(len(it.segment) for it in items) <= 40
    logits = lab.word_logits(doc, docs=["d", "d"])
    assert [len(x) for x in logits] == [2, 2]


def test_separator_none_stays_nothing(doc_labeler) -> None:
    from seqrep.encode.pipeline import Encoder

    tok = doc_labeler.tokenizer
    enc = Encoder(tok, doc_labeler.config.replace(context_separator="none"), 0)
    (item,) = enc.items([["Obama"], ["Paris"]], docs=["d", "d"])
    assert item.segment.input_ids.count(tok.sep_token_id) == 1  # the row's closing [SEP]
