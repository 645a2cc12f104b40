"""Request and response bodies of the HTTP API (pydantic; FastAPI turns them into /docs)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr, field_validator, model_validator

from seqrep.data.tasks import DECODINGS


class LabelRequest(BaseModel):
    """Give exactly one of ``text``, ``texts`` or ``words``."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "examples": [{"text": "Angela Merkel met Emmanuel Macron in Berlin."},
                     {"texts": ["Obama visited Paris.", "Peter Blackburn reports."],
                      "decoding": "greedy"},
                     {"words": [["Obama", "visited", "Paris", "."]]}]})

    text: StrictStr | None = Field(None, description="one raw text (cut into sentences and "
                                   "words as `seqrep predict` does)")
    texts: list[StrictStr] | None = Field(None, description="several raw texts")
    words: list[list[StrictStr]] | None = Field(
        None, description="pre-tokenized sentences, one list of words each; a word holds no "
        "whitespace. Each is labeled as one sentence whose text is its words joined by single "
        "spaces; offsets point into that text")
    decoding: StrictStr | None = Field(
        None, description="greedy (argmax per word) or constrained (Viterbi over valid IOB2 "
        "transitions), or another name of the decodings table; default: the model's own")

    @field_validator("decoding")
    @classmethod
    def _known_decoding(cls, value: str | None) -> str | None:
        """A name of the decodings table as it is when the request comes (a decoding
        registered after this module was imported is served too)."""
        if value is not None and value not in DECODINGS:
            raise ValueError(f"expected one of {', '.join(DECODINGS)}")
        return value

    @model_validator(mode="after")
    def _one_input(self) -> LabelRequest:
        given = [k for k in ("text", "texts", "words") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of text, texts or words"
                             + (f" (got {', '.join(given)})" if given else ""))
        return self


class Span(BaseModel):
    start: int = Field(description="character offset of the first character, into `text`")
    end: int = Field(description="offset after the last character: text[start:end] == span text")
    label: str
    score: float = Field(description="mean probability of the span's tags")
    text: str
    words: list[int] = Field(description="[first word, last word + 1] within the text's words")


class Sentence(BaseModel):
    start: int
    end: int
    words: list[str]
    tags: list[str]


class Record(BaseModel):
    """The record ``seqrep predict`` prints as one JSON line."""

    text: str
    sentences: list[Sentence]
    spans: list[Span]


class LabelResponse(BaseModel):
    decoding: str = Field(description="the decoding that was used")
    results: list[Record] = Field(description="one record per input text, in order")


class HFRequest(BaseModel):
    """The Hugging Face Inference API's token-classification body."""

    model_config = ConfigDict(extra="allow", json_schema_extra={
        "examples": [{"inputs": "My name is Sarah and I live in London"}]})

    inputs: StrictStr | list[StrictStr]
    parameters: HFParameters | None = None


class HFParameters(BaseModel):
    """HF's token-classification parameters that seqrep honours; any other is a 422."""

    model_config = ConfigDict(extra="forbid")

    aggregation_strategy: Literal["simple", "first", "none"] | None = Field(
        None, description="simple (the default) or first: one entity per span "
        "(`entity_group`, mean `score` of its words); the two are the same here, since "
        "seqrep reads each word at its first subtoken. none: one entity per word (`entity` "
        "= its tag, `index` = its word index in the text). average and max are refused: "
        "they pool scores over a word's subtokens, which seqrep does not compute")
    ignore_labels: list[StrictStr] | None = Field(
        None, description="entities with these labels are left out (default [\"O\"]); "
        "matched against `entity` (a tag) with none, against `entity_group` otherwise")


HFRequest.model_rebuild()


class HFEntity(BaseModel):
    entity_group: str
    score: float
    word: str
    start: int
    end: int


class ModelInfo(BaseModel):
    labels: list[str]
    entity_types: list[str]
    model: str = Field(description="the backbone the labeler was built on")
    source: str = Field(description="the run or labeler folder served")
    task: str
    repetitions: int
    exit_layer: int | None
    unmask: str
    decoding: str
    finetune: str
    runtime: str | None = Field(description="torch, onnx or onnx-int8; null until loaded")
    device: str | None = Field(description="where the forward pass runs; null until loaded")
    autocast: str | None = Field(description="fp32, bf16 or fp16; null until loaded")
    seqrep_version: str
    loaded: bool
    limits: dict[str, Any]


class Health(BaseModel):
    status: str
