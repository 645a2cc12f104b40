"""Shared fixtures: tiny randomly initialised backbones of several families, built from configs
and saved as ordinary model folders, so tests exercise the real loading path in seconds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

CORPUS = [
    "Obama visited Paris and Berlin last week .",
    "The European Union said on Thursday it disagreed with German advice .",
    "Peter Blackburn reports from Brussels for Reuters .",
    "Nadim Ladki ate a very long sandwich in Al-Ain , United Arab Emirates .",
    "Emoji 🙂 and naïve café résumé words , 東京 and Москва too !",
]


def _byte_bpe_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<unk>", "<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS * 3, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>")


def _wordpiece_tokenizer():
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=300,
                                        special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]"])
    tok.train_from_iterator(CORPUS * 3, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]",
                                   cls_token="[CLS]", sep_token="[SEP]")


TINY = dict(hidden_size=32, intermediate_size=64, num_attention_heads=4, num_key_value_heads=2,
            max_position_embeddings=4096)


def _config(family: str, vocab: int, layers: int):
    import transformers as tf

    if family == "llama":
        return tf.LlamaConfig(vocab_size=vocab, num_hidden_layers=layers, **TINY)
    if family == "qwen2":
        return tf.Qwen2Config(vocab_size=vocab, num_hidden_layers=layers, **TINY)
    if family == "qwen3":
        return tf.Qwen3Config(vocab_size=vocab, num_hidden_layers=layers, head_dim=8, **TINY)
    if family == "mistral":  # a short sliding window, so the window logic is exercised
        return tf.MistralConfig(vocab_size=vocab, num_hidden_layers=layers, sliding_window=12,
                                **TINY)
    if family == "gemma3":
        types = ["sliding_attention", "full_attention"] * (layers // 2) + \
            ["sliding_attention"] * (layers % 2)
        return tf.Gemma3TextConfig(vocab_size=vocab, num_hidden_layers=layers, head_dim=8,
                                   sliding_window=12, layer_types=types, **TINY)
    if family == "bert":
        return tf.BertConfig(vocab_size=vocab, num_hidden_layers=layers, hidden_size=32,
                             intermediate_size=64, num_attention_heads=4)
    raise ValueError(family)


DECODERS = ["llama", "qwen2", "qwen3", "mistral", "gemma3"]


def make_tiny(root: Path, family: str, layers: int = 4, seed: int = 0) -> Path:
    """Save a tiny random ``family`` model + tokenizer under ``root`` and return the folder."""
    from transformers import AutoModel

    path = root / f"{family}-{layers}"
    if (path / "config.json").exists():
        return path
    tok = _wordpiece_tokenizer() if family == "bert" else _byte_bpe_tokenizer()
    torch.manual_seed(seed)
    config = _config(family, len(tok), layers)
    model = AutoModel.from_config(config)
    model.save_pretrained(path, safe_serialization=True)
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tiny-models")


@pytest.fixture(scope="session")
def tiny(tiny_root: Path):
    """``tiny(family, layers=4)`` -> folder of a saved tiny random model."""
    return lambda family, layers=4: str(make_tiny(tiny_root, family, layers))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared datasets (``$SEQREP_DATA``, else ``../shared/data`` beside the repository);
    sets ``SEQREP_DATA`` for named datasets, skips the test when the folder is missing."""
    root = Path(os.environ.get("SEQREP_DATA",
                               Path(__file__).resolve().parents[1].parent / "shared" / "data"))
    if not root.is_dir():
        pytest.skip(f"shared data directory {root} is missing (set SEQREP_DATA)")
    os.environ["SEQREP_DATA"] = str(root)
    return root


@pytest.fixture(autouse=True, scope="session")
def _torch_threads() -> None:
    torch.set_num_threads(min(2, os.cpu_count() or 1))


SENTENCES = [
    ["Obama", "visited", "Paris", "."],
    ["The", "European", "Union", "said", "on", "Thursday", "it", "disagreed", "with", "German",
     "advice", "."],
    ["Peter", "Blackburn"],
    ["Emoji", "🙂", "and", "東京", "Москва", "naïve", "!"],
]
