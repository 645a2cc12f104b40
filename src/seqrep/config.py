"""Configuration objects, one frozen dataclass per stage; each validates itself.

Every field carries ``metadata["help"]``; the CLI reads its help texts from there, so each
default lives in one place. Configs are saved as JSON beside every checkpoint and result.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from seqrep.encode.repeat import COPY_READS, SUBTOKEN_READS
from seqrep.errors import ConfigError
from seqrep.model.tuning import MODES, modes_help
from seqrep.tasks import SPANS, TASKS, check_decoding, task_names


def _f(default: Any, help: str, **kw: Any) -> Any:
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata={"help": help}, **kw)
    return field(default=default, metadata={"help": help}, **kw)


def _choice(name: str, value: Any, allowed: tuple) -> None:
    if value not in allowed:
        raise ConfigError(f"{name}={value!r}; expected one of {', '.join(map(str, allowed))}")


UNMASK_NAMES = ("none", "full", "middle")
ATTENTION = ("sdpa", "eager", "flash_attention_2", "flash_attention_3", "flex_attention")
# What a labeler config may ask for: a config read from a shared folder must not allocate
# gigabytes or loop for minutes before the first prediction. The largest tag sets in use have
# a few hundred tags; the paper repeats a sentence at most 4 times.
LIMITS = {"repetitions": (0, 64), "max_subtokens": (8, 1 << 17), "frozen_layers": (0, 1 << 14),
          "lora_rank": (1, 1 << 14), "lora_alpha": (1, 1 << 20)}
MAX_LABELS = 2048
MAX_LABEL_CHARS = 200


def _check_types(config: Any) -> None:
    """Refuse a field whose value is not of its annotated type (a config read from a file
    may hold anything: ``repetitions: 1.5``, ``separator: 5``, ``labels: "x"``)."""
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        kinds = str(f.type).replace(" ", "").split("|")
        ok = (value is None and "None" in kinds
              or isinstance(value, bool) and "bool" in kinds
              or not isinstance(value, bool) and (
                  isinstance(value, int) and ("int" in kinds or "float" in kinds)
                  or isinstance(value, float) and "float" in kinds
                  or isinstance(value, str) and "str" in kinds
                  or isinstance(value, list) and "list[str]" in kinds
                  and all(isinstance(x, str) for x in value)))
        if not ok:
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "..."
            raise ConfigError(f"{f.name}={shown}; expected {' or '.join(kinds)}")


def _rates(rate: str) -> str:
    """The default ``rate`` (``lr`` or ``head_lr``) of each fine-tuning mode, for a help text:
    ``full 5e-5, lora 2e-4 ...``, or one value when every mode has the same."""
    shown = {m.name: f"{getattr(m, rate):.0e}".replace("e-0", "e-") for m in MODES.values()}
    if len(set(shown.values())) == 1:
        return next(iter(shown.values()))
    return "by --finetune: " + ", ".join(f"{k} {v}" for k, v in shown.items())


def parse_unmask(value: str) -> str | tuple[int, ...]:
    """An ``unmask`` setting: ``none``, ``full``, ``middle``, or sorted 0-based layer indices
    from a comma list (``"0,3,5"``). Whether the layers exist is checked against the model."""
    if value in UNMASK_NAMES:
        return value
    try:
        layers = tuple(sorted({int(x) for x in value.split(",") if x.strip()}))
    except (ValueError, AttributeError):
        layers = ()
    if not layers or any(i < 0 for i in layers):
        raise ConfigError(f"unmask={value!r}; expected none, full, middle or a comma-separated "
                          f"list of 0-based layer indices")
    return layers


class _Config:
    """JSON round trip and copies with changes, shared by the config dataclasses."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        """Build from a dict, ignoring keys this version does not know (saved by a newer one)."""
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        return cls(**{k: v for k, v in data.items() if k in names})

    def replace(self, **changes: Any) -> Any:
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]


@dataclass(frozen=True)
class LabelerConfig(_Config):
    """What the labeler is: backbone, repetition, attention strategy, exit layer and head."""

    model: str = _f("smollm2-135m", "packaged alias, local folder or Hugging Face hub id")
    labels: list[str] = _f([], "the model's classes: IOB2 tags with 'O' first (task=spans) or "
                               "plain tags (task=tokens); empty: taken from the training data")
    task: str = _f("auto", "spans (IOB2 tags, span F1; NER, slots, chunks), tokens (one tag per "
                           "word, token accuracy; POS) or auto (tokens when every training word "
                           "has a plain tag and no word is O or I-)")
    repetitions: int = _f(1, "r: the sentence is fed k = r + 1 times; words are read from the "
                             "last copy")
    unmask: str = _f("none", "layers made bidirectional: none, full, middle or a comma list")
    exit_layer: int | str | None = _f(None, "use only the first L layers (None: all; auto: "
                                            "the layer whose frozen probe scores best on "
                                            "validation, chosen before fine-tuning)")
    final_norm: bool = _f(True, "apply the model's final norm to the exit layer's states")
    subtoken: str = _f("first", "where a word is read: first, last or mean of its subtokens")
    read: str = _f("last", "copies read: last (the paper) or mean over all copies")
    separator: str = _f("none", "between copies: none, bos, or a literal string")
    bos: str = _f("auto", "special tokens around the input: auto (the tokenizer's own), yes "
                          "(force BOS), no")
    max_subtokens: int = _f(256, "subtokens per copy, at most what the model's positions "
                                 "hold for k copies (a labeler cuts it to that and records "
                                 "it); longer sentences are cut into overlapping windows")
    context: str = _f("sentence", "what a model row holds: sentence (each sentence alone) "
                                  "or document (consecutive sentences of one document, in "
                                  "windows of --context-tokens; each word is read from the "
                                  "window where it has the most context; sentences without "
                                  "a document id stay alone)")
    context_tokens: int = _f(256, "with context=document: subtokens per copy of a document "
                                  "window (cut to what the model's positions hold for k "
                                  "copies); a longer sentence is windowed")
    context_separator: str = _f("\n", "with context=document: put before each sentence of a "
                                       "window but the document's first: none, bos, or a "
                                       "literal string (one the tokenizer reads as nothing, "
                                       "as BERT's WordPiece reads a newline, becomes its "
                                       "[SEP] token)")
    dropout: float = _f(0.1, "dropout before the linear head")
    padding_side: str = _f("right", "pad after (right) or before (left) the repeated sequence")
    finetune: str = _f("full", modes_help())
    train_embeddings: bool = _f(False, "with finetune=full, train the input embeddings too "
                                       "(off: a quarter less time per step on CPU)")
    frozen_layers: int = _f(0, "with finetune=full, keep the lowest N transformer blocks fixed "
                               "(their backward pass is skipped: faster steps)")
    lora_rank: int = _f(16, "LoRA rank")
    lora_alpha: int = _f(16, "LoRA alpha")
    lora_dropout: float = _f(0.1, "LoRA dropout")
    lora_targets: list[str] = _f([], "modules LoRA adapts, by name (repeat the option or give "
                                     "a comma list, e.g. q_proj,v_proj); empty: the attention "
                                     "projections found in the model (q, k, v, o)")
    decoding: str = _f("constrained", "greedy (argmax per word) or constrained (Viterbi over "
                                      "valid IOB2 transitions)")
    attn_implementation: str = _f("sdpa", "attention backend: sdpa or eager")
    dtype: str = _f("float32", "weight dtype (float32 is fastest on CPU)")
    trust_remote_code: bool = _f(False, "allow code from the model repository")

    def __post_init__(self) -> None:
        _check_types(self)
        for name, (low, high) in LIMITS.items():
            if not low <= getattr(self, name) <= high:
                raise ConfigError(f"{name}={getattr(self, name)}; expected {low} to {high}")
        if len(self.labels) > MAX_LABELS or any(len(x) > MAX_LABEL_CHARS for x in self.labels):
            raise ConfigError(f"labels: {len(self.labels)} tags, the longest of "
                              f"{max(map(len, self.labels))} characters; expected at most "
                              f"{MAX_LABELS} of at most {MAX_LABEL_CHARS}")
        if isinstance(self.exit_layer, str) and self.exit_layer != "auto":
            if not self.exit_layer.strip().isdigit():
                raise ConfigError(f"exit_layer={self.exit_layer!r}; expected a layer number, "
                                  f"auto or None")
            object.__setattr__(self, "exit_layer", int(self.exit_layer))
        if isinstance(self.exit_layer, int) and self.exit_layer < 1:
            raise ConfigError(f"exit_layer={self.exit_layer}; expected 1 or more (or None)")
        parse_unmask(self.unmask)
        object.__setattr__(self, "lora_targets", [t.strip() for item in self.lora_targets
                                                  for t in str(item).split(",") if t.strip()])
        _choice("subtoken", self.subtoken, SUBTOKEN_READS)
        _choice("read", self.read, COPY_READS)
        _choice("bos", self.bos, ("auto", "yes", "no"))
        _choice("padding_side", self.padding_side, ("right", "left"))
        _choice("finetune", self.finetune, tuple(MODES))
        _choice("task", self.task, task_names(auto=True))
        _choice("dtype", self.dtype, ("float32", "bfloat16", "float16"))
        check_decoding(self.decoding)
        _choice("attn_implementation", self.attn_implementation, ATTENTION)
        _choice("context", self.context, ("sentence", "document"))
        if not 1 <= self.context_tokens <= LIMITS["max_subtokens"][1]:
            raise ConfigError(f"context_tokens={self.context_tokens}; expected 1 to "
                              f"{LIMITS['max_subtokens'][1]}")
        for name in ("dropout", "lora_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ConfigError(f"{name}={getattr(self, name)}; expected 0 <= {name} < 1")
        TASKS.get(self.task, SPANS).check_labels(self.labels)  # auto: as spans until resolved
        if len(set(self.labels)) != len(self.labels):
            raise ConfigError("labels contain duplicates")


@dataclass(frozen=True)
class TrainConfig(_Config):
    """How to train: data, optimisation, evaluation and checkpoints.

    The defaults are the CPU recipe measured in README.md (full fine-tuning of a cut SmolLM2
    with a faster head); the paper's GPU recipe is LoRA r=16 at lr 2e-4 for 10 epochs.
    """

    dataset: str = _f("conll2003", "named dataset or path to a data file")
    format: str | None = _f(None, "file format when --dataset is a path (default: detected)")
    train_split: str = _f("train", "split to train on")
    eval_split: str = _f("validation", "split for model selection")
    test_split: str | None = _f("test", "split evaluated with the best model at the end "
                                        "(empty: none)")
    max_train_sentences: int | None = _f(None, "train on a random subset of this many sentences")
    max_eval_sentences: int | None = _f(None, "select on a random subset of the eval split")
    max_test_sentences: int | None = _f(None, "test on the first N sentences of the test split "
                                              "(None: all)")
    subset_seed: int = _f(0, "seed of the subsets (fixed, so every training seed sees the "
                             "same data)")
    subset_unit: str = _f("sentence", "what the subsets take: sentence (sentences one by one) "
                                      "or document (whole documents, in an order drawn with "
                                      "subset_seed, until the count reaches the "
                                      "--max-*-sentences limit; a corpus without documents "
                                      "takes the same sentences as sentence), independent of "
                                      "--context, so runs of both contexts see the same data")
    epochs: int = _f(3, "passes over the training data")
    lr: float | None = _f(None, f"learning rate of the backbone or of the LoRA adapters (unset: "
                                f"{_rates('lr')})")
    head_lr: float | None = _f(None, f"learning rate of the linear head (unset: "
                                     f"{_rates('head_lr')})")
    weight_decay: float = _f(0.05, "AdamW weight decay (not on biases and norms)")
    warmup: float = _f(0.0, "share of steps with linear warm-up before the linear decay")
    batch_size: int = _f(16, "sentences per batch (batches hold sentences of similar length)")
    batch_tokens: int | None = _f(None, "also close a training batch at this many padded "
                                        "tokens (None: no limit)")
    grad_accum: int = _f(1, "batches per optimizer step")
    max_grad_norm: float = _f(1.0, "gradient clipping norm (0: off)")
    gradient_checkpointing: bool = _f(False, "recompute activations in the backward pass "
                                             "(less memory, about a third more time)")
    compile: bool = _f(False, "torch.compile the backbone (dynamic shapes): 1.09x faster steps "
                              "after about 3 minutes of compiling on a 2-core CPU, so only for "
                              "long runs")
    eval_every: int = _f(0, "evaluate every N optimizer steps (0: at the end of each epoch)")
    checkpoint_every: int = _f(0, "write a resumable checkpoint every N optimizer steps "
                                  "(0: at each evaluation)")
    early_stopping: int = _f(0, "stop after N evaluations without improvement (0: never)")
    decoding: str = _f("auto", "auto (constrained unless greedy is better on validation), "
                               "greedy or constrained")
    seed: int = _f(42, "seed of initialisation, data order and dropout")
    exit_search_sentences: int = _f(1000, "with exit_layer=auto: training sentences the "
                                          "frozen-probe sweep fits on")
    max_steps: int | None = _f(None, "stop (resumably) after this many optimizer steps")
    threads: int | None = _f(None, "torch CPU threads (default: all cores)")
    device: str = _f("auto", "auto (CUDA when present, else the CPU), cpu, cuda, cuda:N or mps; "
                             "under torchrun / accelerate launch each process takes its GPU")
    precision: str = _f("auto", "autocast of the backbone: auto (bf16 on GPUs that have it, "
                                "fp32 on CPUs), fp32, bf16 or fp16; weights, head and loss "
                                "stay fp32")
    eval_batch_size: int = _f(64, "sentences per batch at evaluation")

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "grad_accum", "eval_batch_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}={getattr(self, name)}; expected 1 or more")
        for name in ("lr", "head_lr"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ConfigError(f"{name}={value}; expected a positive number")
        if not 0 <= self.warmup < 1:
            raise ConfigError(f"warmup={self.warmup}; expected a share in [0, 1)")
        check_decoding(self.decoding, auto=True)
        _choice("subset_unit", self.subset_unit, ("sentence", "document"))

    def resolved(self, finetune: str) -> TrainConfig:
        """This config with the learning rates a fine-tuning mode implies where they are unset
        (a value the user gave always wins); the run folder records the resolved values."""
        mode = MODES[finetune]
        return self.replace(lr=mode.lr if self.lr is None else self.lr,
                            head_lr=mode.head_lr if self.head_lr is None else self.head_lr)


# Padded tokens per inference batch. Sorted batches of a few hundred sentences still spread
# in length; closing a batch at this budget keeps padding near or under 10 % (see bench).
BATCH_TOKENS = 512


@dataclass(frozen=True)
class InferenceConfig(_Config):
    """How a trained labeler runs: the options ``predict``, ``evaluate``, ``serve``, ``export``
    and ``bench`` share, each with one default and one check (a command takes the fields it
    needs: :func:`seqrep.cli.options.inference_option`).

    Messages name the command-line option (``--batch-size 0; expected 1 or more``): these
    values come from the command line, or from a program that mirrors it.
    """

    runtime: str = _f("auto", "torch, onnx, onnx-int8 or auto (onnx for a seqrep export "
                              "folder)")
    device: str = _f("auto", "auto, cpu, cuda, cuda:N or mps")
    precision: str = _f("auto", "auto (bf16 on GPUs and on CPUs with native bf16, else fp32), "
                                "fp32, bf16 or fp16")
    batch_size: int = _f(32, "sentences per batch (batches hold sentences of similar length)")
    batch_tokens: int = _f(BATCH_TOKENS, "close a batch before it passes this many padded "
                                         "tokens")
    threads: int | None = _f(None, "torch CPU threads (default: all cores; seqrep serve: the "
                                   "cores less one, at least 1: the event loop keeps a core, "
                                   "so the model's threads never wait for it)")
    decoding: str | None = _f(None, "greedy or constrained (default: the run's)")
    trust_remote_code: bool = _f(False, "run code shipped with the model (never enabled by "
                                        "the run folder itself)")

    def __post_init__(self) -> None:
        _check_types(self)
        for f in dataclasses.fields(self):
            self.check(f.name, getattr(self, f.name))

    @staticmethod
    def check(name: str, value: Any, flag: str | None = None) -> Any:
        """``value`` if field ``name`` accepts it, else a ConfigError naming ``flag`` (default
        the field's option, ``--batch-size``); the commands' options call it as they are
        read, so a bad value fails before any model loads."""
        flag = flag or f"--{name.replace('_', '-')}"
        if name in ("batch_size", "batch_tokens", "threads") and value is not None \
                and value < 1:
            raise ConfigError(f"{flag} {value}; expected 1 or more")
        if name == "runtime":
            from seqrep.runtimes import CHOICES

            if value not in CHOICES:
                raise ConfigError(f"{flag} {value!r}; expected one of {', '.join(CHOICES)}")
        if name == "precision":
            from seqrep.runtimes import PRECISIONS

            if str(value).lower() not in PRECISIONS:
                raise ConfigError(f"{flag} {value!r}; expected one of {', '.join(PRECISIONS)}")
        if name == "device":
            from seqrep.runtimes import DEVICES

            d = str(value).lower()
            if d not in DEVICES and not (d.startswith("cuda:") and d[5:].isdigit()):
                raise ConfigError(f"{flag} {value!r}; expected auto, cpu, cuda, cuda:N or mps")
        if name == "decoding" and value is not None:
            check_decoding(value, flag)
        return value


@dataclass(frozen=True)
class ReaderConfig(_Config):
    """How to read data files: the reader options, the same on every command and in grids.

    Only the options that are set reach the reader (:meth:`options`); a reader that does not
    take one of them says so and lists its own.
    """

    format: str | None = _f(None, "file format of a path: conll, conllu, parallel, jsonl, "
                                  "semeval-xml, absa-tokenized, nlupp (default: detected)")
    tag_column: int | None = _f(None, "conll: index of the tag column (negative counts from "
                                      "the end; default -1, the last)")
    word_column: int | None = _f(None, "conll: index of the word column (default 0)")
    scheme: str | None = _f(None, "tag scheme: IOB1, IOB2/BIO, BIOES/BILOU, IO, TOKEN (plain "
                                  "tags such as POS; default: detected)")
    strict: bool = _f(False, "fail on invalid tag sequences instead of repairing them")
    label_column: str | None = _f(None, "conllu: label column name (upos, xpos, deprel ...) "
                                        "or index (default upos)")
    polarity: bool = _f(False, "ABSA: label aspect terms by polarity")
    domains: list[str] = _f([], "nlupp: domains to read (banking, hotels; default both)")
    folds: list[int] = _f([], "nlupp: folds to read (default: the split's)")
    alignment: str | None = _f(None, "character spans: expand, contract or strict (default "
                                     "expand)")

    def options(self) -> dict[str, Any]:
        """The reader keyword arguments that are set (``format`` apart)."""
        # `is` tests: 0 == False, so `v not in (None, False)` would drop tag_column 0
        out = {k: v for k, v in self.to_dict().items()
               if k != "format" and v is not None and v is not False and v != []}
        if self.label_column is not None and self.label_column.lstrip("-").isdigit():
            out["label_column"] = int(self.label_column)
        return out
