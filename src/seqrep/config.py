"""Configuration objects, one frozen dataclass per stage; each validates itself.

Every field carries ``metadata["help"]``; the CLI reads its help texts from there, so each
default lives in one place. Configs are saved as JSON beside every checkpoint and result.

:class:`LabelerConfig` (what a labeler is) is declared in :mod:`seqrep.model.labeler_config`,
below the labeler that builds it, and shown here beside the configs of the stages above it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from seqrep.core.configbase import ConfigBase, check_choice, check_types
from seqrep.core.configbase import option as _f  # every field line uses it
from seqrep.core.contexts import DOCUMENT, SENTENCE
from seqrep.data.tasks import DECODINGS
from seqrep.encode import BATCH_SENTENCES, BATCH_TOKENS
from seqrep.errors import ConfigError
from seqrep.model.labeler_config import LabelerConfig, parse_unmask
from seqrep.model.tuning import MODES, Mode

__all__ = ["InferenceConfig", "LabelerConfig", "ReaderConfig", "TrainConfig", "parse_unmask"]

# train fields added after runs were first saved, with the value such runs trained as: a
# run.json without the field resumes as its run trained, and identifies as the same run
TRAIN_SAVED_BEFORE: dict[str, Any] = {"batch_rows": True}


def _rates(rate: str) -> str:
    """The default ``rate`` (``lr`` or ``head_lr``) of each fine-tuning mode, for a help text:
    ``full 5e-5, lora 2e-4 ...``, or one value when every mode has the same."""
    shown = {m.name: f"{getattr(m, rate):.0e}".replace("e-0", "e-") for m in MODES.values()}
    if len(set(shown.values())) == 1:
        return next(iter(shown.values()))
    return "by --finetune: " + ", ".join(f"{k} {v}" for k, v in shown.items())


@dataclass(frozen=True)
class TrainConfig(ConfigBase):
    """How to train: data, optimisation, evaluation and checkpoints.

    The defaults are the CPU recipe measured in README.md (full fine-tuning of a cut SmolLM2
    with a faster head); the paper's GPU recipe is LoRA r=16 at lr 2e-4 for 10 epochs.
    """

    dataset: str = _f("conll2003", "named dataset or data file")
    format: str | None = _f(None, "file format of --dataset (default: detected)")
    train_split: str = _f("train", "split to train on")
    eval_split: str = _f("validation", "split for model selection")
    test_split: str | None = _f("test", "split tested at the end (empty: none)")
    max_train_sentences: int | None = _f(None, "train on a random subset of N sentences")
    max_eval_sentences: int | None = _f(None, "select on a random subset of N sentences")
    max_test_sentences: int | None = _f(None, "test on the first N sentences")
    subset_seed: int = _f(0, "seed of the subsets, the same for every seed")
    subset_unit: str = _f("sentence", "what subsets take: sentence or document")
    epochs: int = _f(3, "passes over the training data")
    lr: float | None = _f(None, f"learning rate of the backbone or the adapters (unset: "
                                f"{_rates('lr')})")
    head_lr: float | None = _f(None, f"learning rate of the linear head (unset: "
                                     f"{_rates('head_lr')})")
    weight_decay: float = _f(0.05, "AdamW weight decay (not on biases, norms)")
    warmup: float = _f(0.0, "share of steps warming up before linear decay")
    batch_size: int = _f(16, "sentences per batch, grouped by length")
    batch_rows: bool = _f(False, "with document context, count --batch-size in rows")
    batch_tokens: int | None = _f(None, "also close a batch at N padded tokens")
    grad_accum: int = _f(1, "batches per optimizer step")
    max_grad_norm: float = _f(1.0, "gradient clipping norm (0: off)")
    gradient_checkpointing: bool = _f(False, "recompute activations to save memory")
    compile: bool = _f(False, "torch.compile the backbone (for long runs)")
    eval_every: int = _f(0, "evaluate every N steps (0: each epoch)")
    checkpoint_every: int = _f(0, "checkpoint every N steps (0: at each evaluation)")
    early_stopping: int = _f(0, "stop after N evaluations without gain (0: never)")
    decoding: str = _f("auto", "auto (chosen on validation), greedy or constrained")
    seed: int = _f(42, "seed of initialisation, data order and dropout")
    exit_search_sentences: int = _f(1000, "with --exit-layer auto: sentences the probes fit on")
    max_steps: int | None = _f(None, "stop (resumably) after N optimizer steps")
    threads: int | None = _f(None, "torch CPU threads (default: all cores)")
    device: str = _f("auto", "auto (CUDA if present), cpu, cuda, cuda:N or mps")
    precision: str = _f("auto", "autocast: auto, fp32, bf16 or fp16")
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
        DECODINGS.check(self.decoding, auto=True)
        check_choice("subset_unit", self.subset_unit, (SENTENCE.name, DOCUMENT.name))

    def resolved(self, mode: Mode | str) -> TrainConfig:
        """This config with the learning rates a fine-tuning mode implies where they are unset
        (a value the user gave always wins); the run folder records the resolved values.
        ``mode``: the mode itself (a labeler config's ``mode``), or its name."""
        mode = MODES.of(mode)
        return self.replace(lr=mode.lr if self.lr is None else self.lr,
                            head_lr=mode.head_lr if self.head_lr is None else self.head_lr)


@dataclass(frozen=True)
class InferenceConfig(ConfigBase):
    """How a trained labeler runs: the options ``predict``, ``evaluate``, ``serve``, ``export``
    and ``bench`` share, each with one default and one check. Each command builds one from
    the options it has (:func:`seqrep.cli.options.inference_config`) and hands this object to
    loading (:func:`seqrep.export.load`), prediction, evaluation and serving, so each value
    is checked once, here, before anything loads.

    Messages name the command-line option (``--batch-size 0; expected 1 or more``): these
    values come from the command line, or from a program that mirrors it.
    """

    runtime: str = _f("auto", "torch, compile, openvino, onnx, onnx-int8 or auto (onnx for a "
                              "seqrep export folder)")
    device: str = _f("auto", "auto, cpu, cuda, cuda:N or mps")
    precision: str = _f("auto", "auto (bf16 where the device has it natively, else fp32), "
                                "fp32, bf16 or fp16")
    batch_size: int = _f(BATCH_SENTENCES, "sentences per batch, grouped by length (as in "
                                          "training)")
    batch_tokens: int = _f(BATCH_TOKENS, "close a batch before it passes this many padded "
                                         "tokens")
    threads: int | None = _f(None, "torch CPU threads (default: all cores; seqrep serve: all "
                                   "but one)")
    decoding: str | None = _f(None, "greedy or constrained (default: the run's)")
    context_overlap: float | None = _f(None, "with document context: share of a window the "
                                             "next one repeats, 0 to 0.75 (default: the "
                                             "run's; less is faster)")
    trust_remote_code: bool = _f(False, "run code shipped with the model (never enabled by "
                                        "the run folder itself)")

    def __post_init__(self) -> None:
        check_types(self)
        for f in dataclasses.fields(self):
            self.check(f.name, getattr(self, f.name))

    @property
    def layout(self) -> dict[str, Any]:
        """The labeler's layout settings this config overrides (``context_overlap``), for a
        partial output's identity: empty when none is, as before the override existed."""
        return {} if self.context_overlap is None else {"context_overlap": self.context_overlap}

    @staticmethod
    def check(name: str, value: Any, flag: str | None = None) -> Any:
        """``value`` if field ``name`` accepts it, else a ConfigError naming ``flag`` (default
        the field's option, ``--batch-size``): what building a config runs for each field,
        and what ``bench`` runs for the fields it shares."""
        flag = flag or f"--{name.replace('_', '-')}"
        if name in ("batch_size", "batch_tokens", "threads") and value is not None \
                and value < 1:
            raise ConfigError(f"{flag} {value}; expected 1 or more")
        if name == "runtime":
            from seqrep.core.runtimes import RUNTIMES

            RUNTIMES.check(value, flag, auto=True)
        if name == "precision":
            from seqrep.core.runtimes import PRECISIONS

            if str(value).lower() not in PRECISIONS:
                raise ConfigError(f"{flag} {value!r}; expected one of {', '.join(PRECISIONS)}")
        if name == "device":
            from seqrep.core.runtimes import DEVICES

            d = str(value).lower()
            if d not in DEVICES and not (d.startswith("cuda:") and d[5:].isdigit()):
                raise ConfigError(f"{flag} {value!r}; expected auto, cpu, cuda, cuda:N or mps")
        if name == "decoding" and value is not None:
            DECODINGS.check(value, flag)
        if name == "context_overlap" and value is not None:
            from seqrep.encode.document import check_overlap

            check_overlap(value, f"{flag} ")
        return value


@dataclass(frozen=True)
class ReaderConfig(ConfigBase):
    """How to read data files: the reader options, the same on every command and in grids.

    Only the options that are set reach the reader (:meth:`options`); a reader that does not
    take one of them says so and lists its own.
    """

    format: str | None = _f(None, "file format of a path: conll, conllu, parallel, jsonl, "
                                  "semeval-xml, absa-tokenized, nlupp, parquet, arrow, hf-saved "
                                  "(default: detected)")
    tag_column: int | None = _f(None, "conll: tag column (default -1, the last)")
    word_column: int | None = _f(None, "conll: word column (default 0)")
    scheme: str | None = _f(None, "tag scheme: IOB1, IOB2, BIOES, IO or TOKEN (default: "
                                  "detected)")
    strict: bool = _f(False, "fail on invalid tag sequences, not repair them")
    label_column: str | None = _f(None, "conllu: label column, by name or index (default upos)")
    polarity: bool = _f(False, "ABSA: label aspect terms by polarity")
    domains: list[str] = _f([], "nlupp: domains to read (default: banking, hotels)")
    folds: list[int] = _f([], "nlupp: folds to read (default: the split's)")
    alignment: str | None = _f(None, "character spans: expand, contract or strict (default "
                                     "expand)")
    tokens_column: str | None = _f(None, "HF data: words column (default: tokens, else "
                                         "words)")
    tags_column: str | None = _f(None, "HF data: tags column (default: ner_tags, tags, "
                                       "...)")
    doc_column: str | None = _f(None, "HF data: doc column (doc_id, else "
                                      "document_id)")

    def options(self) -> dict[str, Any]:
        """The reader keyword arguments that are set (``format`` apart)."""
        # `is` tests: 0 == False, so `v not in (None, False)` would drop tag_column 0
        out = {k: v for k, v in self.to_dict().items()
               if k != "format" and v is not None and v is not False and v != []}
        if self.label_column is not None and self.label_column.lstrip("-").isdigit():
            out["label_column"] = int(self.label_column)
        return out
