"""Configuration objects, one frozen dataclass per stage; each validates itself.

Every field carries ``metadata["help"]``; the CLI reads its help texts from there, so each
default lives in one place. Configs are saved as JSON beside every checkpoint and result.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from seqrep.errors import ConfigError


def _f(default: Any, help: str, **kw: Any) -> Any:
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata={"help": help}, **kw)
    return field(default=default, metadata={"help": help}, **kw)


def _choice(name: str, value: Any, allowed: tuple) -> None:
    if value not in allowed:
        raise ConfigError(f"{name}={value!r}; expected one of {', '.join(map(str, allowed))}")


@dataclass(frozen=True)
class LabelerConfig:
    """What the labeler is: backbone, repetition, attention strategy, exit layer and head."""

    model: str = _f("smollm2-135m", "packaged alias, local folder or Hugging Face hub id")
    labels: list[str] = _f([], "IOB2 tag inventory, 'O' first")
    repetitions: int = _f(1, "r: the sentence is fed k = r + 1 times; words are read from the "
                             "last copy")
    unmask: str = _f("none", "layers made bidirectional: none, full, middle or a comma list")
    exit_layer: int | None = _f(None, "use only the first L layers (None: all)")
    final_norm: bool = _f(True, "apply the model's final norm to the exit layer's states")
    subtoken: str = _f("first", "where a word is read: first, last or mean of its subtokens")
    read: str = _f("last", "copies read: last (the paper) or mean over all copies")
    separator: str = _f("none", "between copies: none, bos, or a literal string")
    bos: str = _f("auto", "special tokens around the input: auto (the tokenizer's own), yes "
                          "(force BOS), no")
    max_subtokens: int = _f(256, "subtokens per copy; longer sentences are cut into "
                                 "overlapping windows")
    dropout: float = _f(0.1, "dropout before the linear head")
    padding_side: str = _f("right", "pad after (right) or before (left) the repeated sequence")
    finetune: str = _f("lora", "lora, full (all backbone weights) or frozen (head only)")
    lora_rank: int = _f(16, "LoRA rank")
    lora_alpha: int = _f(16, "LoRA alpha")
    lora_dropout: float = _f(0.1, "LoRA dropout")
    attn_implementation: str = _f("sdpa", "attention backend: sdpa or eager")
    dtype: str = _f("float32", "weight dtype (float32 is fastest on CPU)")
    trust_remote_code: bool = _f(False, "allow code from the model repository")

    def __post_init__(self) -> None:
        if self.repetitions < 0:
            raise ConfigError(f"repetitions={self.repetitions}; expected 0 or more")
        if self.exit_layer is not None and self.exit_layer < 1:
            raise ConfigError(f"exit_layer={self.exit_layer}; expected 1 or more (or None)")
        _choice("subtoken", self.subtoken, ("first", "last", "mean"))
        _choice("read", self.read, ("last", "mean"))
        _choice("bos", self.bos, ("auto", "yes", "no"))
        _choice("padding_side", self.padding_side, ("right", "left"))
        _choice("finetune", self.finetune, ("lora", "full", "frozen"))
        _choice("dtype", self.dtype, ("float32", "bfloat16", "float16"))
        if self.max_subtokens < 8:
            raise ConfigError(f"max_subtokens={self.max_subtokens}; expected at least 8")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout={self.dropout}; expected 0 <= dropout < 1")
        if self.labels and self.labels[0] != "O" and "O" in self.labels:
            raise ConfigError("labels must list 'O' first")
        if len(set(self.labels)) != len(self.labels):
            raise ConfigError("labels contain duplicates")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LabelerConfig:
        """Build from a dict, ignoring keys this version does not know (saved by a newer one)."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def replace(self, **changes: Any) -> LabelerConfig:
        return dataclasses.replace(self, **changes)
