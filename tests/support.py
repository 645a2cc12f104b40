"""Helpers shared by the tests: tiny random models of several families built from configs and
saved as ordinary model folders, the sentences they label, and a synthetic CoNLL corpus."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    import pytest

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


def _roberta_tokenizer(texts: list[str] = CORPUS, wordpiece: bool = False):
    """RoBERTa's layout: byte-level BPE, ``<s> $A </s>``, ``<pad>`` at id 1 (the padding_idx
    its positions are numbered after), trained on ``texts``; ``wordpiece``: all-mpnet-base-v2's
    lowercased WordPiece in the BPE's place, with the same special tokens."""
    from tokenizers import (
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )
    from transformers import PreTrainedTokenizerFast

    specials = ["<s>", "<pad>", "</s>", "<unk>"]
    if wordpiece:
        tok = Tokenizer(models.WordPiece(unk_token="<unk>"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        trainer = trainers.WordPieceTrainer(vocab_size=300, special_tokens=specials)
    else:
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=specials,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts * 3, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   cls_token="<s>", sep_token="</s>", pad_token="<pad>",
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
    if family == "mpnet":  # an encoder without an sdpa path (all-mpnet-base-v2's family)
        return tf.MPNetConfig(vocab_size=vocab, num_hidden_layers=layers, hidden_size=32,
                              intermediate_size=64, num_attention_heads=4)
    if family == "roberta":  # positions numbered from padding_idx + 1 = 2
        return tf.RobertaConfig(vocab_size=vocab, num_hidden_layers=layers, hidden_size=32,
                                intermediate_size=64, num_attention_heads=4, pad_token_id=1,
                                bos_token_id=0, eos_token_id=2)
    raise ValueError(family)


DECODERS = ["llama", "qwen2", "qwen3", "mistral", "gemma3"]


def make_tiny(root: Path, family: str, layers: int = 4, seed: int = 0) -> Path:
    """Save a tiny random ``family`` model + tokenizer under ``root`` and return the folder."""
    from transformers import AutoModel

    path = root / f"{family}-{layers}"
    if (path / "config.json").exists():
        return path
    tok = _wordpiece_tokenizer() if family in ("bert", "mpnet") else \
        _roberta_tokenizer() if family == "roberta" else _byte_bpe_tokenizer()
    torch.manual_seed(seed)
    config = _config(family, len(tok), layers)
    model = AutoModel.from_config(config)
    model.save_pretrained(path, safe_serialization=True)
    tok.save_pretrained(path)
    return path


SENTENCES = [
    ["Obama", "visited", "Paris", "."],
    ["The", "European", "Union", "said", "on", "Thursday", "it", "disagreed", "with", "German",
     "advice", "."],
    ["Peter", "Blackburn"],
    ["Emoji", "🙂", "and", "東京", "Москва", "naïve", "!"],
]

# the ONNX export tests' sentences: SENTENCES and a one-letter one (a row of a single subtoken)
EXPORT_SENTENCES = [*SENTENCES[:3], ["x"], SENTENCES[3]]


# plain word lists for tests that need sentences without tags
WORDS = [["Obama", "visited", "Paris", "."], ["Peter", "Blackburn", "reports"],
         ["The", "European", "Union", "said", "on", "Thursday", "it", "disagreed", "."]]


PEOPLE = ["Obama", "Peter", "Nadim", "Angela", "Boris", "Maria"]
PLACES = ["Paris", "Berlin", "Brussels", "Tokyo", "Moscow", "Madrid"]
VERBS = ["visited", "left", "praised", "reached"]


def document(n: int) -> list[list[str]]:
    """``n`` sentences cycling through :data:`SENTENCES`: one document."""
    import itertools

    return [list(s) for s in itertools.islice(itertools.cycle(SENTENCES), n)]


def neighbours_change_labels(doc_labeler, sentence_labeler) -> bool:  # noqa: ANN001
    """Whether a document labeler's logits of a document's second sentence differ from a
    sentence labeler's of it read alone (the same weights: only the neighbours differ)."""
    doc = document(4)
    with_context = doc_labeler.word_logits(doc, docs=["d"] * 4)
    alone = sentence_labeler.word_logits(doc, docs=None)
    return not torch.allclose(with_context[1], alone[1], atol=1e-4)


def sharp_document_labeler(model: str, labels: list[str], **kw):  # noqa: ANN003, ANN201
    """A frozen labeler of ``model`` with document context (windows of 24 subtokens, greedy)
    and a random head made steeper (seed 4), so a change of context shows in its tags; in
    eval mode, every layer unless ``kw`` says otherwise (``exit_layer``)."""
    from seqrep.model.labeler import SequenceLabeler

    torch.manual_seed(0)
    kw = {"exit_layer": "all", **kw}  # the seeds were chosen on the whole model
    lab = SequenceLabeler.from_model(model, labels=labels, repetitions=1, finetune="frozen",
                                     decoding="greedy", context="document", context_tokens=24,
                                     **kw)
    torch.manual_seed(4)
    with torch.no_grad():
        for p in lab.head.parameters():
            p.normal_(0, 2.0)
    return lab.eval()


def write_corpus(path: Path, n: int, seed: int = 0) -> Path:
    """A CoNLL file of 'PER VERB LOC .' sentences with some two-word names."""
    rng = random.Random(seed)
    lines = []
    for _ in range(n):
        words, tags = [], []
        for i, name in enumerate(rng.sample(PEOPLE, rng.choice([1, 2]))):
            words.append(name)
            tags.append("B-PER" if i == 0 else "I-PER")
        words += [rng.choice(VERBS), "the", "city", "of", rng.choice(PLACES), "."]
        tags += ["O", "O", "O", "O", "B-LOC", "O"]
        lines += [f"{w} {t}" for w, t in zip(words, tags)] + [""]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def load_script(name: str):  # noqa: ANN201 - the script's module
    """``scripts/NAME.py`` of this repository, imported as a module named ``name``."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        name, Path(__file__).resolve().parents[1] / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def with_documents(path: Path, per_doc: int) -> Path:
    """The toy corpus at ``path`` cut into documents of ``per_doc`` sentences by -DOCSTART-
    lines, as CoNLL-2003 is."""
    blocks = path.read_text(encoding="utf-8").strip().split("\n\n")
    out = []
    for i, block in enumerate(blocks):
        if i % per_doc == 0:
            out.append("-DOCSTART- -X- -X- O")
        out.append(block)
    path.write_text("\n\n".join(out) + "\n", encoding="utf-8")
    return path


def train_configs(model: str, corpus: tuple[str, str], finetune: str = "full", **train_kw):
    """The training tests' configs: r=1, exit at 3, 3 epochs of batches of 8, fast rates."""
    from seqrep.config import LabelerConfig, TrainConfig

    lab = LabelerConfig(model=model, repetitions=1, finetune=finetune, exit_layer=3)
    kw = dict(dataset=corpus[0], test_split=corpus[1], epochs=3, batch_size=8, lr=3e-3,
              head_lr=1e-2, seed=7)
    kw.update(train_kw)
    return lab, TrainConfig(**kw)


class StandInPool:
    """ProcessPoolExecutor's stand-in for the bench tests: a context manager that takes the
    pool's arguments and does nothing else; a subclass's ``submit`` says what a job does."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def __enter__(self) -> StandInPool:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def cli(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    """Run ``seqrep ARGS`` in this process, its console script's entry point: (exit code,
    stdout, stderr)."""
    from seqrep.cli.app import main

    capsys.readouterr()
    try:
        main(list(args))
        code = 0
    except SystemExit as ex:
        code = ex.code if isinstance(ex.code, int) else 1
    out = capsys.readouterr()
    return code, out.out, out.err


@contextlib.asynccontextmanager
async def serving_app(app: Any, ready: bool = True) -> AsyncIterator[Any]:
    """Run ``app``'s lifespan and give an httpx.AsyncClient on it (no sockets)."""
    import httpx

    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test",
                                     timeout=60) as client:
            if ready:
                await _wait_ready(client)
            yield client


async def _wait_ready(client: Any, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while (await client.get("/health")).status_code != 200:
        if time.monotonic() > end:
            raise TimeoutError("the server never became ready")
        await asyncio.sleep(0.02)


TEACHER_LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def hand_made_teacher(model: str, folder: Path) -> Path:
    """A finished teacher run made by hand at ``folder``: a random labeler of ``model`` in
    ``best/`` (r=1, cut at 2) and a ``run.json`` naming it (the distillation tests read its
    files, not the quality of its labels)."""
    import json

    from seqrep.model.labeler import SequenceLabeler

    SequenceLabeler.from_model(model, labels=TEACHER_LABELS, repetitions=1, finetune="full",
                               exit_layer=2).save_pretrained(folder / "best")
    (folder / "run.json").write_text(json.dumps({
        "labeler": {"model": model, "labels": TEACHER_LABELS}, "train": {"dataset": "toy"}}))
    return folder


def train_tiny_run(model: str, root: Path) -> tuple[Path, Path]:
    """``(run folder, its training file)``: two steps of ``seqrep train`` on 12 sentences,
    through the command line as a user makes a run."""
    from seqrep.cli.app import main

    data = write_corpus(root / "train.txt", 12)
    run = root / "run"
    try:
        main(["train", "--model", model, "--dataset", str(data), "--test-split", "",
              "--epochs", "1", "--exit-layer", "1", "--max-steps", "2", "-o", str(run),
              "--quiet"])
    except SystemExit as stop:
        assert stop.code in (0, None)
    return run, data
