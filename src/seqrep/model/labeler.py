"""SequenceLabeler: backbone (cut at the exit layer) + attention strategy + repetition + head.

Data flow for a batch of sentences::

    words --WordTokenizer--> subtoken ids --encode_sentence--> segments (k copies, windows)
          --collate--> Batch (B, T) --backbone (+ unmasked layers)--> hidden (B, T, H)
          --pool reads of the last copy--> word states (W, H) --head--> logits (W, labels)

r = 0 runs exactly the same code with one copy, so every comparison changes one thing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from seqrep.config import LabelerConfig
from seqrep.encode.align import WordTokenizer
from seqrep.encode.batch import MAX_TOKENS, Batch, collate, length_batches
from seqrep.encode.repeat import RepeatSpec, Segment, encode_sentence
from seqrep.errors import ConfigError
from seqrep.model.backbone import Backbone, get_final_norm, layer_stack, load_backbone, lora_targets
from seqrep.model.head import TokenHead
from seqrep.model.masks import Unmasker, unmasked_layers


class SequenceLabeler(nn.Module):
    """A word-level tagger on top of any transformers backbone.

    Build one with :meth:`from_model` (new head) or :meth:`from_pretrained` (a saved run).
    """

    def __init__(self, config: LabelerConfig, backbone: Backbone) -> None:
        super().__init__()
        self.config = config
        self.backbone = backbone.model
        self.tokenizer = backbone.tokenizer
        self.info = backbone
        if backbone.is_encoder and config.unmask != "none":
            raise ConfigError(f"unmask={config.unmask!r} applies to decoders; {config.model} "
                              f"is an encoder and attends both ways already")
        self.words = WordTokenizer(self.tokenizer)
        self.spec = self._repeat_spec()
        self.layers_unmasked = unmasked_layers(config.unmask, backbone.num_layers)
        self.unmasker = Unmasker(layer_stack(self.backbone), self.layers_unmasked,
                                 self.backbone.config)
        self.head = TokenHead(backbone.hidden_size, max(len(config.labels), 1), config.dropout)
        if config.finetune == "lora":
            self._add_lora()
        elif config.finetune == "frozen":
            self.backbone.requires_grad_(False)
        elif not config.train_embeddings:
            self.backbone.get_input_embeddings().requires_grad_(False)

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_model(cls, model: str, labels: Sequence[str] = (), **options: Any) -> SequenceLabeler:
        """Load a backbone and put a fresh head on it.

        Args:
            model: packaged alias (``smollm2-135m``, ``gemma3-270m``, ``minilm-l6``), local
                folder or hub id.
            labels: the IOB2 tags, ``O`` first.
            **options: any :class:`~seqrep.config.LabelerConfig` field (``repetitions``,
                ``unmask``, ``exit_layer``, ``finetune`` ...).
        """
        config = LabelerConfig(model=model, labels=list(labels), **options)
        return cls(config, cls._load_backbone(config))

    @staticmethod
    def _load_backbone(config: LabelerConfig, source: str | None = None, cut: bool = True,
                       tokenizer: str | None = None) -> Backbone:
        return load_backbone(source or config.model, config.exit_layer if cut else None,
                             config.final_norm, config.attn_implementation, config.dtype,
                             config.trust_remote_code, tokenizer)

    @classmethod
    def from_pretrained(cls, path: str | Path) -> SequenceLabeler:
        """Load a labeler saved by :meth:`save_pretrained` (safetensors only)."""
        from seqrep.model.io import load_labeler

        return load_labeler(cls, Path(path))

    def save_pretrained(self, path: str | Path) -> Path:
        """Write the labeler to a folder atomically: config, labels, head, adapter/backbone."""
        from seqrep.model.io import save_labeler

        return save_labeler(self, Path(path))

    def _repeat_spec(self) -> RepeatSpec:
        tok, c = self.tokenizer, self.config
        prefix, suffix = list(self.words.prefix), list(self.words.suffix)
        if c.bos == "no":
            prefix, suffix = [], []
        elif c.bos == "yes" and tok.bos_token_id is not None and tok.bos_token_id not in prefix:
            prefix = [tok.bos_token_id] + prefix
        if c.separator == "none":
            sep: list[int] = []
        elif c.separator == "bos":
            if tok.bos_token_id is None:
                raise ConfigError(f"separator='bos' but {c.model} has no BOS token")
            sep = [tok.bos_token_id]
        else:
            sep = tok(c.separator, add_special_tokens=False)["input_ids"]
        return RepeatSpec(c.repetitions, tuple(prefix), tuple(suffix), tuple(sep), c.subtoken,
                          c.read, c.max_subtokens)

    def _add_lora(self) -> None:
        from peft import LoraConfig, get_peft_model

        c = self.config
        lora = LoraConfig(r=c.lora_rank, lora_alpha=c.lora_alpha, lora_dropout=c.lora_dropout,
                          target_modules=lora_targets(self.backbone))
        # LoRA wraps the backbone alone, so the head stays a plain, fully trained layer.
        self.backbone = get_peft_model(self.backbone, lora)

    # ----------------------------------------------------------------- encoding
    @property
    def label2id(self) -> dict[str, int]:
        return {t: i for i, t in enumerate(self.config.labels)}

    def encode(self, sentence: Sequence[str]) -> list[Segment]:
        """The segments (model rows) of one sentence."""
        return encode_sentence(self.words(sentence), self.spec, leads=self.words.leads(sentence))

    def batches(self, sentences: Sequence[Sequence[str]], batch_size: int = 32,
                max_tokens: int | None = MAX_TOKENS
                ) -> Iterator[tuple[Batch, list[tuple[int, Segment]]]]:
        """Length-sorted batches over all segments of ``sentences``: at most ``batch_size``
        rows and ``max_tokens`` padded tokens each, so little compute goes to padding.

        Yields:
            ``(batch, members)`` where members are ``(sentence index, segment)`` in row order.
        """
        items = [(i, seg) for i, s in enumerate(sentences) for seg in self.encode(s)]
        pad = self.info.pad_id
        for idx in length_batches([len(seg) for _, seg in items], batch_size,
                                  max_tokens=max_tokens):
            members = [items[j] for j in idx]
            yield collate([seg for _, seg in members], pad, self.config.padding_side), members

    # ----------------------------------------------------------------- forward
    @property
    def device(self) -> torch.device:
        return next(self.head.parameters()).device

    def hidden(self, batch: Batch, capture: Sequence[int] = ()) -> tuple[torch.Tensor, dict]:
        """Run the backbone on a batch.

        Args:
            batch: padded inputs.
            capture: 1-based layer numbers whose outputs to keep as well (probe mode).

        Returns:
            ``(last, captured)``: ``(B, T, H)`` states of the exit layer after the final norm
            (if on), and ``{layer: (B, T, H)}`` raw outputs of the captured layers.
        """
        captured: dict[int, torch.Tensor] = {}
        with self._capture(capture, captured), self.unmasker.active(batch.attention_mask):
            out = self.backbone(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                                position_ids=batch.position_ids, use_cache=False)
        return out.last_hidden_state, captured

    @contextlib.contextmanager
    def _capture(self, layers: Sequence[int], into: dict) -> Iterator[None]:
        stack = layer_stack(self.backbone)
        for layer in layers:
            if not 1 <= layer <= len(stack):
                raise ConfigError(f"layer {layer} not in 1..{len(stack)} (the exit layer)")

        def grab(layer: int):  # noqa: ANN202
            def hook(module: nn.Module, args: tuple, output: Any) -> None:
                into[layer] = output[0] if isinstance(output, tuple) else output
            return hook

        handles = [stack[layer - 1].register_forward_hook(grab(layer)) for layer in layers]
        try:
            yield
        finally:
            for h in handles:
                h.remove()

    @staticmethod
    def pool(hidden: torch.Tensor, batch: Batch) -> torch.Tensor:
        """``(B, T, H)`` -> ``(W, H)``: average each word's read positions."""
        picked = hidden[batch.read_batch, batch.read_pos] * batch.read_weight[:, None].to(hidden)
        out = hidden.new_zeros(batch.num_words, hidden.shape[-1])
        return out.index_add_(0, batch.read_word, picked)

    def forward(self, batch: Batch) -> torch.Tensor:
        """Logits ``(W, num_labels)`` of the words in ``batch``."""
        hidden, _ = self.hidden(batch)
        return self.head(self.pool(hidden, batch))

    # ----------------------------------------------------------------- per sentence
    @torch.no_grad()
    def _per_sentence(self, sentences: Sequence[Sequence[str]], fn: Any,
                      batch_size: int, max_tokens: int | None = MAX_TOKENS
                      ) -> list[torch.Tensor]:
        was_training = self.training
        self.eval()
        out: list[torch.Tensor | None] = [None] * len(sentences)
        try:
            for batch, members in self.batches(sentences, batch_size, max_tokens):
                rows = fn(batch.to(self.device))  # (W, ...)
                k = 0
                for i, seg in members:
                    if out[i] is None:
                        out[i] = rows.new_zeros((len(sentences[i]),) + rows.shape[1:])
                    out[i][list(seg.words)] = rows[k : k + len(seg.words)]
                    k += len(seg.words)
        finally:
            self.train(was_training)
        shape = next((o.shape[1:] for o in out if o is not None), ())
        return [o if o is not None else torch.zeros((0, *shape)) for o in out]

    def word_states(self, sentences: Sequence[Sequence[str]], batch_size: int = 32,
                    max_tokens: int | None = MAX_TOKENS) -> list[torch.Tensor]:
        """One ``(words, H)`` tensor of exit-layer states per sentence."""
        return self._per_sentence(sentences, lambda b: self.pool(self.hidden(b)[0], b).float(),
                                  batch_size, max_tokens)

    def word_logits(self, sentences: Sequence[Sequence[str]], batch_size: int = 32,
                    max_tokens: int | None = MAX_TOKENS) -> list[torch.Tensor]:
        """One ``(words, num_labels)`` tensor of logits per sentence."""
        return self._per_sentence(sentences, self.forward, batch_size, max_tokens)

    def layer_states(self, sentences: Sequence[Sequence[str]], layers: Sequence[int],
                     batch_size: int = 32, max_tokens: int | None = MAX_TOKENS
                     ) -> list[torch.Tensor]:
        """Probe mode: word states of several layers from one forward pass.

        Args:
            sentences: lists of words.
            layers: 1-based layer numbers up to the exit layer; the final norm is applied to
                each when ``final_norm`` is on, as early exit at that layer would.

        Returns:
            One ``(words, len(layers), H)`` tensor per sentence.
        """
        norm = get_final_norm(self.backbone) if self.config.final_norm else nn.Identity()
        n = len(layer_stack(self.backbone))

        def fn(batch: Batch) -> torch.Tensor:
            last, captured = self.hidden(batch, [x for x in layers if x != n])
            states = [last if x == n else norm(captured[x]) for x in layers]
            return torch.stack([self.pool(h, batch) for h in states], dim=1).float()

        return self._per_sentence(sentences, fn, batch_size, max_tokens)
