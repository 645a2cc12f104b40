"""Position numbering: the labeler's backbone states equal what the Hugging Face model computes
for each row alone with its own default positions. RoBERTa-type encoders (RoBERTa, MPNet, ...)
number positions from padding_idx + 1 (2), BERT and the decoders from 0; the expected states
come from calling the transformers model directly on the unpadded ids, without position ids."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from support import SENTENCES, _roberta_tokenizer, make_tiny

from seqrep.model.labeler import SequenceLabeler
from seqrep.predict.tagger import predict_tags

LABELS = ["O", "B-PER", "I-PER"]
TEXT = [" ".join(s) for s in SENTENCES] + ["Obama visited Paris and Berlin last week ."]
HIDDEN = dict(hidden_size=32, intermediate_size=64, num_attention_heads=4, num_hidden_layers=2)


def make_roberta_like(root: Path, family: str, max_positions: int = 514) -> str:
    """A tiny random RoBERTa or MPNet with a tokenizer whose <pad> is id 1."""
    import transformers as tf

    path = root / f"{family}-{max_positions}"
    if (path / "config.json").exists():
        return str(path)
    # <pad> is id 1, the padding_idx both models number positions after (MPNet's is 1
    # whatever its config says)
    tok = _roberta_tokenizer(TEXT, wordpiece=family == "mpnet")
    assert tok.pad_token_id == 1
    cls = tf.RobertaConfig if family == "roberta" else tf.MPNetConfig
    config = cls(vocab_size=len(tok), pad_token_id=1, bos_token_id=0, eos_token_id=2,
                 max_position_embeddings=max_positions, **HIDDEN)
    torch.manual_seed(0)
    tf.AutoModel.from_config(config).save_pretrained(path, safe_serialization=True)
    tok.save_pretrained(path)
    return str(path)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("positions")

    def get(family: str, max_positions: int = 514) -> str:
        if family in ("roberta", "mpnet"):
            return make_roberta_like(root, family, max_positions)
        return str(make_tiny(root, family, layers=2))
    return get


def _reference(path: str):
    from transformers import AutoModel

    return AutoModel.from_pretrained(path, attn_implementation="eager").eval()


def _assert_rows_match(lab: SequenceLabeler, reference, batch) -> None:
    """Each row's states at its real tokens equal the reference model's on that row alone."""
    with torch.no_grad():
        got, _ = lab.hidden(batch)
        for b in range(batch.input_ids.shape[0]):
            real = batch.attention_mask[b].bool()
            ids = batch.input_ids[b][real][None]
            want = reference(input_ids=ids).last_hidden_state[0]  # its own default positions
            diff = (got[b][real] - want).abs().max().item()
            assert diff < 1e-4, f"row {b}: states differ by {diff:.3g}"


@pytest.mark.parametrize("family", ["roberta", "mpnet", "bert", "llama"])
@pytest.mark.parametrize("side", ["right", "left"])
def test_states_match_the_models_own_positions(folder, family: str, side: str) -> None:
    path = folder(family)
    lab = SequenceLabeler.from_model(path, LABELS, repetitions=1, padding_side=side,
                                     attn_implementation="eager",
                                     exit_layer="all").eval()  # as the reference: every layer
    batch = lab.encoder.collate(lab.encoder.items(SENTENCES[:3]))
    lengths = batch.attention_mask.sum(1).tolist()
    assert len(set(lengths)) == 3  # rows of different lengths: padding in the batch
    _assert_rows_match(lab, _reference(path), batch)


@pytest.mark.parametrize("family", ["roberta", "mpnet"])
@pytest.mark.parametrize("context", ["sentence", "document"])
def test_rows_at_the_position_limit(folder, family: str, context: str) -> None:
    """RoBERTa-type max_position_embeddings counts the 2 positions before the first token
    (514 = 512 + 2): with 34 positions a row holds at most 32 tokens, and the longest row,
    at that limit, still matches the model's own computation."""
    path = folder(family, max_positions=34)
    lab = SequenceLabeler.from_model(path, LABELS, repetitions=1, context=context,
                                     attn_implementation="eager").eval()
    long = [["Obama", "visited", "Paris", "."] * 10, ["Peter", "Blackburn", "said", "."] * 3]
    docs = ["d", "d"] if context == "document" else None
    items = lab.encoder.items(long, docs=docs)
    lengths = [len(it.segment) for it in items]
    assert max(lengths) == 32, lengths  # <s>, 2 copies of 15 subtokens, </s>
    rows = [it for it in items if len(it.segment) == 32][:2]
    _assert_rows_match(lab, _reference(path), lab.encoder.collate(rows))
    # and the whole text labels without an index error
    tags = predict_tags(lab, long, docs=docs)
    assert [len(t) for t, _ in tags] == [len(s) for s in long]


def test_first_position_by_table_and_by_embedding(monkeypatch: pytest.MonkeyPatch) -> None:
    import transformers as tf
    from torch import nn

    from seqrep.model.architectures import FIRST_POSITION, first_position

    def build(config) -> nn.Module:  # noqa: ANN001
        return tf.AutoModel.from_config(config)

    small = dict(vocab_size=50, hidden_size=8, intermediate_size=16, num_attention_heads=2,
                 num_hidden_layers=1)
    roberta = build(tf.RobertaConfig(pad_token_id=1, **small))
    # transformers numbers RoBERTa's positions from its pad id + 1, and XLM-R (not in the
    # table) alike; MPNet's padding_idx is 1 whatever the config's pad id
    assert first_position(roberta) == 2
    assert first_position(build(tf.RobertaConfig(pad_token_id=0, **small))) == 1
    assert first_position(build(tf.XLMRobertaConfig(pad_token_id=1, **small))) == 2
    assert first_position(build(tf.MPNetConfig(pad_token_id=0, **small))) == 2
    assert first_position(build(tf.BertConfig(pad_token_id=0, **small))) == 0
    assert first_position(build(tf.LlamaConfig(num_key_value_heads=2, **small))) == 0
    monkeypatch.setitem(FIRST_POSITION, "roberta", 0)  # a user's override wins
    assert first_position(roberta) == 0

    class Embeddings(nn.Module):  # padding_idx on positions, but no fairseq numbering code
        def __init__(self) -> None:
            super().__init__()
            self.position_embeddings = nn.Embedding(8, 4, padding_idx=0)

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embeddings = Embeddings()

    assert first_position(Model()) == 0


def test_saved_folders_keep_the_numbering_they_were_trained_with(folder, tmp_path: Path
                                                                  ) -> None:
    """A labeler folder records its first position; one written before seqrep numbered
    RoBERTa-type positions from 2 (no record) was trained on 0-based ones and keeps them."""
    import json

    from seqrep.errors import ModelError

    path = folder("mpnet")
    lab = SequenceLabeler.from_model(path, LABELS, repetitions=1, finetune="frozen").eval()
    saved = lab.save_pretrained(tmp_path / "lab")
    meta = json.loads((saved / "config.json").read_text())
    assert meta["first_position"] == 2
    batch = lab.encoder.collate(lab.encoder.items(SENTENCES[:3]))
    reference = _reference(path)
    _assert_rows_match(SequenceLabeler.from_pretrained(saved).eval(), reference, batch)

    del meta["first_position"]  # as every folder written before the fix
    (saved / "config.json").write_text(json.dumps(meta))
    old = SequenceLabeler.from_pretrained(saved).eval()
    assert old.backbone_info.first_position == 0
    with torch.no_grad():
        got, _ = old.hidden(batch)
        want = reference(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                         position_ids=batch.position_ids).last_hidden_state  # 0-based
    real = batch.attention_mask.bool()
    assert (got[real] - want[real]).abs().max() < 1e-4

    for bad in ("2", -1, 1 << 20, True):
        meta["first_position"] = bad
        (saved / "config.json").write_text(json.dumps(meta))
        with pytest.raises(ModelError, match="first_position"):
            SequenceLabeler.from_pretrained(saved)
