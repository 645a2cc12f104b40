"""What a labeler is: :class:`LabelerConfig`, validated against the strategy tables it names
(the copy and subtoken reads of :mod:`seqrep.encode.repeat`, the fine-tuning modes of
:mod:`seqrep.model.tuning`, the tasks and decodings of :mod:`seqrep.tasks`, the contexts of
:mod:`seqrep.contexts`).

It sits in the model package, below those who train and run a labeler, so that the labeler and
its folders build it without an import back up; :mod:`seqrep.config` shows it beside the other
configs.
"""

from __future__ import annotations

from dataclasses import dataclass

from seqrep.configbase import ConfigBase, check_choice, check_types
from seqrep.configbase import option as _f  # every field line uses it
from seqrep.contexts import CONTEXTS, SENTENCE, contexts_help
from seqrep.encode.repeat import COPY_READS, SUBTOKEN_READS
from seqrep.errors import ConfigError
from seqrep.model.tuning import MODES, modes_help
from seqrep.tasks import SPANS, TASKS, check_decoding, task_names

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
    context: str = _f(SENTENCE.name, contexts_help())
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
        check_types(self)
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
        check_choice("subtoken", self.subtoken, SUBTOKEN_READS)
        check_choice("read", self.read, COPY_READS)
        check_choice("bos", self.bos, ("auto", "yes", "no"))
        check_choice("padding_side", self.padding_side, ("right", "left"))
        check_choice("finetune", self.finetune, tuple(MODES))
        check_choice("task", self.task, task_names(auto=True))
        check_choice("dtype", self.dtype, ("float32", "bfloat16", "float16"))
        check_decoding(self.decoding)
        check_choice("attn_implementation", self.attn_implementation, ATTENTION)
        check_choice("context", self.context, tuple(CONTEXTS))
        if len(self.context_separator) > MAX_SEPARATOR_CHARS:
            raise ConfigError(f"context_separator: {len(self.context_separator)} characters; "
                              f"expected at most {MAX_SEPARATOR_CHARS} (it marks where a "
                              f"sentence starts, inside a window)")
        if not 1 <= self.context_tokens <= LIMITS["max_subtokens"][1]:
            raise ConfigError(f"context_tokens={self.context_tokens}; expected 1 to "
                              f"{LIMITS['max_subtokens'][1]}")
        for name in ("dropout", "lora_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ConfigError(f"{name}={getattr(self, name)}; expected 0 <= {name} < 1")
        TASKS.get(self.task, SPANS).check_labels(self.labels)  # auto: as spans until resolved
        if len(set(self.labels)) != len(self.labels):
            raise ConfigError("labels contain duplicates")
