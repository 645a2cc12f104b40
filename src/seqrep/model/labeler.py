"""SequenceLabeler: backbone (cut at the exit layer) + attention strategy + repetition + head.

Data flow for a batch of sentences::

    words --Encoder (seqrep.encode.pipeline)--> Batch (B, T) of k-fold repeated rows
          --backbone (+ unmasked layers)--> hidden (B, T, H)
          --pool reads of the last copy--> word states (W, H) --head--> logits (W, labels)

r = 0 runs exactly the same code with one copy, so every comparison changes one thing.
A forward pass keeps its masks and captured states in local (per-thread) state, so several
threads may run passes through one labeler at once.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from seqrep.core.labeler_methods import LabelerMethods
from seqrep.encode import BATCH_SENTENCES, BATCH_TOKENS
from seqrep.encode.batch import Batch
from seqrep.encode.pipeline import Encoder, EncodesSentences, fit_positions, per_sentence
from seqrep.encode.rows import Item
from seqrep.errors import ConfigError
from seqrep.model.backbone import Backbone, get_final_norm, layer_stack, load_backbone
from seqrep.model.casts import WeightCasts
from seqrep.model.device import DTYPES, Placement
from seqrep.model.exit_layer import cut_layer
from seqrep.model.head import TokenHead
from seqrep.model.labeler_config import LabelerConfig
from seqrep.model.masks import Unmasker, unmasked_layers


class SequenceLabeler(LabelerMethods, EncodesSentences, nn.Module):
    """A word-level tagger on top of any transformers backbone.

    Build one with :meth:`from_model` (new head) or :meth:`from_pretrained` (a saved run, or
    ``org/name`` on the Hub); label with :meth:`predict` (raw text) or :meth:`predict_words`,
    score with :meth:`evaluate` (the methods of every labeler, from
    :class:`~seqrep.core.labeler_methods.LabelerMethods`).
    """

    runtime = "torch"  # what runs the forward pass (OnnxLabeler: "onnx")

    def __init__(self, config: LabelerConfig, backbone: Backbone) -> None:
        super().__init__()
        # bf16 / fp16 inference runs on these casts of the Linear weights (made at the first
        # inference pass, checked at every one: see refresh_inference_weights)
        self.inference_weights = WeightCasts()
        info = backbone.info
        # the layer it runs at, not the setting ("2/3", "default"): what a saved labeler records
        self.config = config = config.replace(exit_layer=cut_layer(
            config.exit_layer, info.total_layers, info.is_encoder))
        self.backbone_info = info
        self.backbone = backbone.model  # registered before the head: parameter order
        self.tokenizer = backbone.tokenizer
        if info.is_encoder and config.unmask != "none":
            raise ConfigError(f"unmask={config.unmask!r} applies to decoders; {config.model} "
                              f"is an encoder and attends both ways already")
        # the per-copy window is bounded by the model's positions (k copies must fit them;
        # RoBERTa-type tables hold the positions before the first token too: 514 = 2 + 512);
        # the cut is recorded in the config, so a saved or exported labeler windows alike
        limit = getattr(backbone.model.config, "max_position_embeddings", None)
        limit = limit and limit - info.first_position
        spec = Encoder(self.tokenizer, config, info.pad_id).spec
        self.config = config = fit_positions(config, spec, limit)
        self.encoder = Encoder(self.tokenizer, config, info.pad_id)
        self.layers_unmasked = unmasked_layers(config.unmask, info.num_layers,
                                               info.total_layers)
        if config.unmask == "middle":  # record the layers: a cut, saved backbone is shallower
            self.config = config = config.replace(
                unmask=",".join(map(str, self.layers_unmasked)) or "none")
        self.unmasker = Unmasker(layer_stack(backbone.model), self.layers_unmasked,
                                 backbone.model.config)
        self.head = TokenHead(info.hidden_size, max(len(config.labels), 1), config.dropout)
        self.backbone = config.mode.prepare(self.backbone, config)  # after the head
        self.placement = Placement()

    def place(self, device: str | torch.device = "auto", precision: str = "auto"
              ) -> SequenceLabeler:
        """Move to ``device`` and run the backbone under ``precision`` autocast (see
        :mod:`seqrep.model.device`); returns self. Outputs always come back on the CPU."""
        self.placement = Placement.resolve(device, precision)
        self.inference_weights.clear()
        if getattr(self.backbone, "is_loaded_in_4bit", False):
            self.head.to(self.placement.device)  # a 4-bit base stays where bitsandbytes put it
        else:
            self.to(self.placement.device)
        return self

    def train(self, mode: bool = True) -> SequenceLabeler:
        """Training mode (``mode``) or eval mode, as ``nn.Module.train``; training mode drops
        the inference weights (training reads the fp32 weights; the copies would be stale)."""
        if mode:
            self.inference_weights.clear()
        return super().train(mode)

    def refresh_inference_weights(self) -> None:
        """Cast the inference weights again at the next bf16 / fp16 pass.

        Under bf16 or fp16 the backbone's Linear layers run on copies of their weights made
        once (:class:`~seqrep.model.casts.WeightCasts`). They are made again by themselves
        after an optimizer step (fused or not), ``load_state_dict``, peft's merge or unmerge,
        a replaced parameter, training mode or :meth:`place`, and when a sampled check of each
        weight differs (an in-place edit of a whole weight). Call this after changing
        weights by hand in place (through ``.data`` or under ``torch.no_grad()``): an edit of a
        few entries can escape the sampled check."""
        self.inference_weights.clear()

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_model(cls, model: str, labels: Sequence[str] = (), **options: Any) -> SequenceLabeler:
        """Load a backbone and put a fresh head on it.

        Args:
            model: packaged alias (``smollm2-135m``, ``gemma3-270m``, ``minilm-l6``), local
                folder or hub id.
            labels: the IOB2 tags, ``O`` first.
            **options: any :class:`LabelerConfig` field (``repetitions``,
                ``unmask``, ``exit_layer``, ``finetune`` ...), and ``device`` /
                ``precision`` (see :meth:`place`; default the CPU in fp32).
        """
        placement = {k: options.pop(k) for k in ("device", "precision") if k in options}
        config = LabelerConfig(model=model, labels=list(labels), **options)
        labeler = cls(config, cls._load_backbone(config))
        return labeler.place(**placement) if placement else labeler

    @staticmethod
    def _load_backbone(config: LabelerConfig, source: str | None = None, cut: bool = True,
                       tokenizer: str | None = None) -> Backbone:
        quantization = config.mode.quantization()
        return load_backbone(source or config.model, config.exit_layer if cut else None,
                             config.final_norm, config.attn_implementation, config.dtype,
                             config.trust_remote_code, tokenizer, quantization)

    @classmethod
    def from_pretrained(cls, path: str | Path, trust_remote_code: bool = False,
                        device: str | torch.device = "cpu", precision: str = "auto"
                        ) -> SequenceLabeler:
        """Load a labeler saved by :meth:`save_pretrained` or a run folder (safetensors only).

        Args:
            path: the labeler folder, or a run folder (its ``best/`` model).
            trust_remote_code: run code shipped with the backbone; only the caller decides,
                never the folder.
            device, precision: where and how to run it (see :meth:`place`); a folder trained
                on a GPU loads on a CPU.
        """
        from seqrep.model.io import load_labeler

        return load_labeler(cls, Path(path), trust_remote_code).place(device, precision)

    def save_pretrained(self, path: str | Path) -> Path:
        """Write the labeler to a folder atomically: config, labels, head, adapter/backbone."""
        from seqrep.model.io import save_labeler

        return save_labeler(self, Path(path))

    def push_to_hub(self, repo_id: str, private: bool = False, revision: str | None = None,
                    commit_message: str | None = None, token: str | None = None) -> Any:
        """Publish the labeler to the Hugging Face Hub as ``repo_id`` (``ORG/NAME``), with a
        generated model card; loads again with ``from_pretrained(repo_id)``. Returns
        huggingface_hub's CommitInfo (see :func:`seqrep.model.publish.push`)."""
        from seqrep.model.publish import push_labeler

        return push_labeler(self, repo_id, private=private, revision=revision,
                            commit_message=commit_message, token=token)

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
        inputs = {"input_ids": batch.input_ids, "attention_mask": batch.attention_mask,
                  "position_ids": self.model_positions(batch.position_ids), "use_cache": False}
        precision = self.placement.precision
        with self._capture(capture, captured), self.unmasker.active(batch.attention_mask), \
                self.placement.autocast():
            if precision != "fp32" and not torch.is_grad_enabled():
                # inference: each Linear's weight cast once, not by autocast at every call;
                # functional_call swaps the copies into the shared module for the pass, so
                # passes from several threads take turns (one could otherwise put back the
                # copies another swapped in, where the fp32 parameters belong)
                casts = self.inference_weights
                with casts.lock:
                    out = torch.func.functional_call(
                        self.backbone, casts.tensors(self.backbone, DTYPES[precision]), (),
                        inputs)
            else:
                out = self.backbone(**inputs)
        return out.last_hidden_state, captured

    def model_positions(self, position_ids: torch.Tensor) -> torch.Tensor:
        """A batch's 0-based ``position_ids`` numbered as the backbone numbers them (from 2
        for RoBERTa-type encoders; unchanged, the same tensor, for BERT and decoders)."""
        start = self.backbone_info.first_position
        return position_ids + start if start else position_ids

    @contextlib.contextmanager
    def _capture(self, layers: Sequence[int], into: dict) -> Iterator[None]:
        stack = layer_stack(self.backbone)
        for layer in layers:
            if not 1 <= layer <= len(stack):
                raise ConfigError(f"layer {layer} not in 1..{len(stack)} (the exit layer)")

        owner = threading.get_ident()

        def grab(layer: int):  # noqa: ANN202
            def hook(module: nn.Module, args: tuple, output: Any) -> None:
                if threading.get_ident() == owner:  # not another thread's pass
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
        """``(B, T, H)`` -> ``(W, H)``: average each word's read positions (in fp32, whatever
        precision the backbone ran in)."""
        picked = hidden[batch.read_batch, batch.read_pos].float() * batch.read_weight[:, None]
        out = picked.new_zeros(batch.num_words, hidden.shape[-1])
        return out.index_add_(0, batch.read_word, picked)

    def forward(self, batch: Batch) -> torch.Tensor:
        """Logits ``(W, num_labels)`` of the words in ``batch``."""
        hidden, _ = self.hidden(batch)
        return self.head(self.pool(hidden, batch))

    # ----------------------------------------------------------------- per sentence
    @torch.no_grad()
    def map_words(self, sentences: Sequence[Sequence[str]],
                  fn: Callable[[Batch], torch.Tensor], batch_size: int = BATCH_SENTENCES,
                  batch_tokens: int | None = BATCH_TOKENS, *, docs: Sequence[Any] | None = None,
                  items: Sequence[Item] | None = None) -> list[torch.Tensor]:
        """Run ``fn`` (a batch -> ``(W, ...)`` per-word rows) over ``sentences`` in inference
        mode and reassemble one ``(words, ...)`` tensor per sentence, in input order.
        ``docs``: each sentence's document id, read with ``context="document"`` (see
        :meth:`~seqrep.encode.pipeline.Encoder.items`), or None (the default) for each
        sentence alone; ``items``: the rows of ``sentences``
        already built by ``encoder.items(sentences, docs=docs)``, computed as they are.

        Dropout is off inside (the module's own training flag is left as it is, so a pass
        from another thread never flips it).
        """
        with _inference(self):
            return per_sentence(sentences, (
                (fn(batch.to(self.device)).cpu(), members)  # decoders read CPU tensors
                for batch, members in self.batches(sentences, batch_size, batch_tokens, docs,
                                                   items)))

    def word_states(self, sentences: Sequence[Sequence[str]], batch_size: int = BATCH_SENTENCES,
                    batch_tokens: int | None = BATCH_TOKENS, *, docs: Sequence[Any] | None = None
                    ) -> list[torch.Tensor]:
        """One ``(words, H)`` tensor of exit-layer states per sentence (``docs``: see
        :meth:`map_words`)."""
        return self.map_words(sentences, lambda b: self.pool(self.hidden(b)[0], b).float(),
                              batch_size, batch_tokens, docs=docs)

    def word_logits(self, sentences: Sequence[Sequence[str]], batch_size: int = BATCH_SENTENCES,
                    batch_tokens: int | None = BATCH_TOKENS, *, docs: Sequence[Any] | None = None,
                    items: Sequence[Item] | None = None) -> list[torch.Tensor]:
        """One ``(words, num_labels)`` tensor of logits per sentence (``docs`` and
        ``items``: see :meth:`map_words`)."""
        return self.map_words(sentences, self.forward, batch_size, batch_tokens, docs=docs,
                              items=items)

    def layer_states(self, sentences: Sequence[Sequence[str]], layers: Sequence[int],
                     batch_size: int = BATCH_SENTENCES, batch_tokens: int | None = BATCH_TOKENS, *,
                     docs: Sequence[Any] | None = None) -> list[torch.Tensor]:
        """Probe mode: word states of several layers from one forward pass.

        Args:
            sentences: lists of words.
            layers: 1-based layer numbers up to the exit layer; the final norm is applied to
                each when ``final_norm`` is on, as early exit at that layer would.
            docs: see :meth:`map_words`.

        Returns:
            One ``(words, len(layers), H)`` tensor per sentence.
        """
        norm = get_final_norm(self.backbone) if self.config.final_norm else nn.Identity()
        n = len(layer_stack(self.backbone))

        def fn(batch: Batch) -> torch.Tensor:
            last, captured = self.hidden(batch, [x for x in layers if x != n])
            states = [last if x == n else norm(captured[x]) for x in layers]
            return torch.stack([self.pool(h, batch) for h in states], dim=1).float()

        return self.map_words(sentences, fn, batch_size, batch_tokens, docs=docs)


@contextlib.contextmanager
def _inference(labeler: SequenceLabeler) -> Iterator[None]:
    """Eval mode for the pass. A labeler already in eval mode is left untouched, so concurrent
    inference threads never write the shared training flag; one in training mode (evaluation
    during training, single-threaded) is switched to eval and back."""
    if not labeler.training:
        yield
        return
    labeler.eval()
    try:
        yield
    finally:
        labeler.train()
