"""What a labeler is: :class:`LabelerConfig`, validated against the strategy tables it names
(the copy and subtoken reads of :mod:`seqrep.encode.repeat`, the fine-tuning modes of
:mod:`seqrep.model.tuning`, the tasks and decodings of :mod:`seqrep.data.tasks`, the contexts of
:mod:`seqrep.core.contexts`).

It sits in the model package, below those who train and run a labeler, so that the labeler and
its folders build it without an import back up; :mod:`seqrep.config` shows it beside the other
configs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from seqrep.core.configbase import ConfigBase, check_choice, check_types
from seqrep.core.configbase import option as _f  # every field line uses it
from seqrep.core.contexts import CONTEXTS, SENTENCE
from seqrep.data.tasks import DECODINGS, TASKS
from seqrep.encode.document import OVERLAP, check_overlap
from seqrep.encode.repeat import COPY_READS, SUBTOKEN_READS
from seqrep.errors import ConfigError
from seqrep.model.exit_layer import EXIT_DEFAULT, parse_exit_layer
from seqrep.model.tuning import MODES, Mode

UNMASK_NAMES = ("none", "full", "middle")
ATTENTION = ("sdpa", "eager", "flash_attention_2", "flash_attention_3", "flex_attention")
# What a labeler config may ask for: a config read from a shared folder must not allocate
# gigabytes or loop for minutes before the first prediction. The largest tag sets in use have
# a few hundred tags; the paper repeats a sentence at most 4 times.
LIMITS = {"repetitions": (0, 64), "max_subtokens": (8, 1 << 17), "frozen_layers": (0, 1 << 14),
          "lora_rank": (1, 1 << 14), "lora_alpha": (1, 1 << 20)}
MAX_LABELS = 2048
MAX_LABEL_CHARS = 200
# A context separator marks where a sentence starts (a newline, a few words at most); it is
# glued before a sentence's first word, which must fit one copy of a window with it, so one
# of 300 words outgrew the copy. Whether it fits in subtokens is checked with the tokenizer
# (seqrep.encode.pipeline); this bound refuses the absurd before any model loads.
MAX_SEPARATOR_CHARS = 200


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


@dataclass(frozen=True)
class LabelerConfig(ConfigBase):
    """What the labeler is: backbone, repetition, attention strategy, exit layer and head."""

    model: str = _f("smollm2-135m", "packaged alias, local folder or Hugging Face hub id")
    labels: list[str] = _f([], "the tags, 'O' first for spans (empty: from the data)")
    task: str = _f("auto", "spans (IOB2 tags, span F1), tokens (one tag per word, accuracy) or "
                           "auto")
    repetitions: int = _f(1, "r: the sentence is fed r + 1 times")
    unmask: str = _f("none", "bidirectional layers: none, full, middle or a list")
    exit_layer: int | str | None = _f(EXIT_DEFAULT, "read labels from layer N, a fraction of "
                                                    "the depth, all, or auto (probed)",
                                      shown="2/3; encoders: all")
    final_norm: bool = _f(True, "apply the final norm to the exit layer's states")
    subtoken: str = _f("first", "where a word is read: first, last or mean subtoken")
    read: str = _f("last", "copies read: last (the paper's) or mean")
    separator: str = _f("none", "between copies: none, bos or a literal string")
    bos: str = _f("auto", "special tokens: auto (the tokenizer's), yes or no")
    max_subtokens: int = _f(256, "subtokens per copy (longer sentences: in windows)")
    context: str = _f(SENTENCE.name, CONTEXTS.help("what a model row holds: "))
    context_tokens: int = _f(256, "with document context: subtokens per window")
    context_overlap: float = _f(OVERLAP, "documents: window overlap, 0 to 0.75")
    context_separator: str = _f("\n", "with document context: text before each sentence but the "
                                      "first (none, bos or a string)")
    dropout: float = _f(0.1, "dropout before the linear head")
    padding_side: str = _f("right", "pad on the right or on the left")
    finetune: str = _f("full", MODES.help())
    train_embeddings: bool = _f(False, "with --finetune full, train the embeddings too")
    frozen_layers: int = _f(0, "with --finetune full, keep the lowest N blocks fixed")
    lora_rank: int = _f(16, "LoRA rank")
    lora_alpha: int = _f(16, "LoRA alpha")
    lora_dropout: float = _f(0.1, "LoRA dropout")
    lora_targets: list[str] = _f([], "modules LoRA adapts, e.g. q_proj,v_proj (empty: the "
                                     "attention projections)")
    decoding: str = _f("constrained", "greedy (argmax per word) or constrained (Viterbi over "
                                      "valid IOB2 transitions)")
    attn_implementation: str = _f("sdpa", "attention backend: sdpa or eager")
    dtype: str = _f("float32", "weight dtype: float32, bfloat16 or float16")
    trust_remote_code: bool = _f(False, "allow code from the model repository")

    @classmethod
    def from_saved(cls, data: dict[str, Any]) -> LabelerConfig:
        """A configuration a run or a labeler folder recorded: one without ``exit_layer`` ran
        at every layer (the default before it was a fraction of the depth), so it stays there."""
        return cls.from_dict({"exit_layer": None, **data})

    def __post_init__(self) -> None:
        check_types(self)
        for name, (low, high) in LIMITS.items():
            if not low <= getattr(self, name) <= high:
                raise ConfigError(f"{name}={getattr(self, name)}; expected {low} to {high}")
        if len(self.labels) > MAX_LABELS or any(len(x) > MAX_LABEL_CHARS for x in self.labels):
            raise ConfigError(f"labels: {len(self.labels)} tags, the longest of "
                              f"{max(map(len, self.labels))} characters; expected at most "
                              f"{MAX_LABELS} of at most {MAX_LABEL_CHARS}")
        object.__setattr__(self, "exit_layer", parse_exit_layer(self.exit_layer))
        parse_unmask(self.unmask)
        object.__setattr__(self, "lora_targets", [t.strip() for item in self.lora_targets
                                                  for t in str(item).split(",") if t.strip()])
        check_choice("subtoken", self.subtoken, SUBTOKEN_READS)
        check_choice("read", self.read, COPY_READS)
        check_choice("bos", self.bos, ("auto", "yes", "no"))
        check_choice("padding_side", self.padding_side, ("right", "left"))
        MODES.check(self.finetune)
        TASKS.check(self.task, auto=True)
        check_choice("dtype", self.dtype, ("float32", "bfloat16", "float16"))
        DECODINGS.check(self.decoding)
        check_choice("attn_implementation", self.attn_implementation, ATTENTION)
        CONTEXTS.check(self.context)
        if len(self.context_separator) > MAX_SEPARATOR_CHARS:
            raise ConfigError(f"context_separator: {len(self.context_separator)} characters; "
                              f"expected at most {MAX_SEPARATOR_CHARS} (it marks where a "
                              f"sentence starts, inside a window)")
        if not 1 <= self.context_tokens <= LIMITS["max_subtokens"][1]:
            raise ConfigError(f"context_tokens={self.context_tokens}; expected 1 to "
                              f"{LIMITS['max_subtokens'][1]}")
        check_overlap(self.context_overlap, "context_overlap=")
        for name in ("dropout", "lora_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ConfigError(f"{name}={getattr(self, name)}; expected 0 <= {name} < 1")
        TASKS.of(self.task).check_labels(self.labels)  # auto: as spans until resolved
        if len(set(self.labels)) != len(self.labels):
            raise ConfigError("labels contain duplicates")

    @property
    def mode(self) -> Mode:
        """The fine-tuning mode ``finetune`` names (:data:`~seqrep.model.tuning.MODES`,
        checked when the config was built): the one lookup, passed on from here."""
        return MODES[self.finetune]
