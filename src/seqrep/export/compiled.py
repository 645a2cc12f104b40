"""``CompiledLabeler``: a trained labeler whose forward pass runs through ``torch.compile``.

The labeler is a :class:`~seqrep.model.labeler.SequenceLabeler` in every other way (the same
folder, tokenizer, batches, pooling, head and decoding, the same placement and precision):
only :meth:`hidden` differs, where the backbone's inference pass is compiled by inductor,
its rows and length dynamic and its weights' shapes fixed, so its norms, activations and
multiplications are fused around the matrix products instead of each reading and writing
the states again.

The Linear layers' weights are frozen into the graph (inductor's ``freezing``: packed once
for the CPU's matrix units, AMX where present), the rest (embeddings, norms) stay its
inputs. The frozen weights are the labeler's inference weights
(:attr:`~seqrep.model.labeler.SequenceLabeler.inference_weights`: the bf16 or fp16 copies,
or in fp32 the parameters themselves), and the graph is built again whenever they are made
again (an optimizer step, ``load_state_dict``, an adapter merge, an edit of a whole weight,
``refresh_inference_weights()``: see :class:`~seqrep.model.casts.WeightCasts`), so a pass
never reads weights older than the labeler's. In bf16 the states between layers stay in
bf16 (:class:`_Pass`), as transformers runs a model loaded in bf16. On the recipe
(Gemma-3-270m cut at 11, AMX, two cores, the first 1,000 CoNLL-2003 test sentences) the two
made the pass 1.07x as fast as weights read as inputs with fp32 states
(``benchmarks/compile_probe.py --variants shipped,live``: 1,143 against 1,065 words/s), and
the test F1 stayed (92.92 at overlap 0.125; fp32 92.85). Where the labeler pads on the
right and the backbone runs transformers' SDPA attention, the pass tells the attention it is
causal instead of giving it the padding mask (:func:`_causal_attention`): no mask is made,
each key-value head is read once, and the kernel skips the blocks above the diagonal. A
batch whose rows are longer than the backbone's shortest sliding window runs eagerly
(:meth:`CompiledLabeler._too_long`): dynamo would otherwise guard on the length and compile a
second graph in the middle of a labeling. On the full CoNLL-2003 test set at overlap 0.125
the forward pass ran 1.15x the words/s of the masked one (2,707 against 2,361, one batch of
62 eager, ``compile_probe.py --sentences 3453 --overlap 0.125 --variants shipped,masked``).

Compiling takes one to two minutes for Gemma-3-270m on two cores, in every process (a graph
with frozen weights bypasses inductor's FX graph cache: measured 100 s in a fresh process
of the speed run) and again after each change of the weights. A batch of one row
has a graph of its own (dynamo specializes a size of 1), made with the others. Before its
first use each compiled pass is checked against the eager pass on seqrep's check
sentences, in three batchings, and refused in one line if a state differs by more than
1e-3 (fp32) or a fifth (bf16, fp16) of the largest, or is not finite. Training, gradients
and layer probes run eagerly. A labeler with bidirectional (unmasked) layers is refused:
their masks are set per batch from Python hooks, which a compiled graph would keep from its
first batch.
"""

from __future__ import annotations

import copy
import itertools
import threading
import types
from typing import Any

import torch
import torch._inductor.config as inductor_config

from seqrep.core.contexts import labeler_context
from seqrep.encode.batch import Batch
from seqrep.errors import ConfigError, ModelError, first_line
from seqrep.export.check import check_sentences
from seqrep.model.device import DTYPES
from seqrep.model.labeler import SequenceLabeler
from seqrep.model.masks import layer_windows

# how far the compiled pass may drift from the eager one, as a share of the largest state
TOLERANCE = {"fp32": 1e-3, "bf16": 0.2, "fp16": 0.2}
_BUILDS = itertools.count()  # compiled passes built in this process


CAUSAL = "seqrep_causal_sdpa"  # the attention the compiled pass runs (_causal_attention)


def _causal_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor,
                      value: torch.Tensor, attention_mask: Any, *,
                      sliding_window: int | None = None, **kwargs: Any) -> Any:
    """transformers' SDPA attention told the mask is causal (``is_causal``) instead of given
    one: in a causal model's right-padded row a real token never attends to a later one, so
    the padding needs no mask. The kernel then skips the blocks above the diagonal and reads
    each key-value head once (no copy per query head), and no mask is made per layer type.
    A sliding-window layer over a row longer than its window gets the window's band."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    length = key.shape[-2]
    if sliding_window is not None and length > sliding_window:
        at = torch.arange(length, device=query.device)
        gap = at[:, None] - at[None, :]  # query position minus key position
        band = (gap >= 0) & (gap < sliding_window)
        return sdpa_attention_forward(module, query, key, value, band[None, None],
                                      is_causal=False, **kwargs)
    return sdpa_attention_forward(module, query, key, value, None, is_causal=True, **kwargs)


def _register_attention() -> None:
    from transformers import AttentionInterface

    AttentionInterface.register(CAUSAL, _causal_attention)


class _Pass(torch.nn.Module):
    """The backbone's inference pass with its states between layers in ``dtype`` from the
    embeddings on (in bf16 or fp16 half the bytes read and written around each layer; the
    eager pass under autocast keeps them in fp32), as transformers runs a model loaded in
    that dtype."""

    def __init__(self, backbone: torch.nn.Module, dtype: torch.dtype) -> None:
        super().__init__()
        self.backbone = backbone
        self.dtype = dtype

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor
                ) -> torch.Tensor:
        embeds = self.backbone.get_input_embeddings()(ids).to(self.dtype)
        return self.backbone(inputs_embeds=embeds, attention_mask=mask,
                             position_ids=positions, use_cache=False).last_hidden_state


class CompiledLabeler(SequenceLabeler):
    """A :class:`~seqrep.model.labeler.SequenceLabeler` whose inference pass is compiled.

    Load one with ``CompiledLabeler.from_pretrained(path)`` (or ``--runtime compile``); label,
    score and serve with it as with any labeler.
    """

    runtime = "compile"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pass: Any = None
        self._checked: tuple = ()
        self._pass_lock = threading.Lock()
        config = self.backbone.config
        # right padding under SDPA: the pass's attention is told it is causal (_build)
        self._causal = self.config.padding_side == "right" and \
            config._attn_implementation == "sdpa"
        windows = [w for w in layer_windows(config, config.num_hidden_layers) if w]
        # rows longer than this run eagerly (_too_long), known before any pass is built
        self._longest = min(windows, default=None) if self._causal else None

    def place(self, device: str | torch.device = "auto", precision: str = "auto",
              *args: Any, **kwargs: Any) -> CompiledLabeler:
        """As :meth:`SequenceLabeler.place`; the compiled pass is checked again there."""
        if self.unmasker.unmasked:
            raise ConfigError(f"--runtime compile: this labeler unmasks layers "
                              f"({self.config.unmask}), whose per-batch masks a compiled "
                              f"graph cannot follow; use --runtime torch or openvino")
        super().place(device, precision, *args, **kwargs)
        self._checked = ()
        return self

    def compile(self) -> CompiledLabeler:
        """Compile and check the inference pass now (else at the first pass); returns self."""
        self._compiled()
        return self

    def _inference_weights(self) -> tuple[dict[str, torch.Tensor], int]:
        """The Linear weights a pass freezes now, and their generation."""
        casts = self.inference_weights
        with casts.lock:
            return casts.tensors(self.backbone, DTYPES[self.placement.precision]), \
                casts.generation

    def _build(self, linear: dict[str, torch.Tensor]) -> Any:
        """A compiled pass over a copy of the backbone that holds ``linear`` as its Linear
        layers' weights (shared, not copied) and every other tensor as the labeler's own,
        read at each call; a new module, so dynamo's guards never take it for an earlier
        pass's."""
        params = dict(self.backbone.named_parameters(remove_duplicate=False))
        memo: dict[int, Any] = {id(t): t for t in (*params.values(), *self.backbone.buffers())}
        for name, tensor in linear.items():
            memo[id(params[name])] = torch.nn.Parameter(tensor.detach(), requires_grad=False)
        wrapper = _Pass(copy.deepcopy(self.backbone, memo), DTYPES[self.placement.precision])
        if self._causal:  # left padding (real tokens after the padding) keeps the mask
            _register_attention()
            # the copy's config: the labeler's own backbone is untouched
            wrapper.backbone.config._attn_implementation = CAUSAL  # see _causal_attention
        frozen = {id(params[name]) for name in linear}
        live = [name for name, t in (*self.backbone.named_parameters(),
                                     *self.backbone.named_buffers()) if id(t) not in frozen]
        autocast = self.placement.autocast

        def forward(ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor,
                    tensors: dict[str, torch.Tensor]) -> torch.Tensor:
            with autocast():
                return torch.func.functional_call(wrapper, tensors, (ids, mask, positions))

        # a code object of its own: dynamo keeps its graphs per code object, so an earlier
        # build's (their frozen weights with them) go with it, and rebuilds never run into
        # dynamo's recompile limit (past it, dynamo runs the function eagerly, silently)
        code = forward.__code__.replace(co_name=f"seqrep_pass_{next(_BUILDS)}")
        compiled = torch.compile(types.FunctionType(code, forward.__globals__, code.co_name,
                                                    None, forward.__closure__))
        backbone = self.backbone

        def run(*inputs: torch.Tensor) -> torch.Tensor:
            # detached: an nn.Parameter reaching the graph is frozen as a constant even as an
            # input (Gemma's 1 + weight folded, an edit unseen); a plain view stays an input
            state = dict((*backbone.named_parameters(), *backbone.named_buffers()))
            with inductor_config.patch(freezing=True):
                return compiled(*inputs, {f"backbone.{name}": state[name].detach()
                                          for name in live})
        return run

    def _too_long(self, batch: Batch) -> bool:
        """Whether ``batch``'s rows are longer than a sliding window of the causal attention
        (:func:`_causal_attention`): such a batch runs eagerly, so that dynamo never sees a
        length past the window, whose guard would compile a second graph in the middle of a
        labeling (one batch of 513 tokens in the recipe's rows on the CoNLL-2003 test set)."""
        return self._longest is not None and batch.input_ids.shape[1] > self._longest

    def _run(self, fn: Any, batch: Batch) -> torch.Tensor:
        inputs = (batch.input_ids, batch.attention_mask, self.model_positions(batch.position_ids))
        for tensor in inputs:  # rows and length vary; the weights' shapes never do
            torch._dynamo.maybe_mark_dynamic(tensor, 0)
            torch._dynamo.maybe_mark_dynamic(tensor, 1)
        return fn(*inputs)

    def _compiled(self) -> Any:
        with self._pass_lock:
            linear, generation = self._inference_weights()
            state = (self.placement.device, self.placement.precision, generation)
            if self._checked != state:
                self._pass = None  # its frozen weights, freed before the next are packed
                fn = self._build(linear)
                self._check(fn)
                self._pass, self._checked = fn, state
            return self._pass

    def _check(self, fn: Any) -> None:
        """The compiled pass against the eager one on the check sentences in three batchings;
        refused in one line where a state drifts past :data:`TOLERANCE` or is not finite."""
        sentences = check_sentences(self)
        docs = ["check"] * len(sentences) if labeler_context(self).documents else None
        # in several batchings, one row alone among them: dynamo makes a graph of its own
        # for a size of 1, made here rather than at a server's first single request
        batches = [b for size in (32, 2)
                   for b, _ in self.batches(sentences, size, None, docs)]
        batches += [b for b, _ in self.batches(sentences[:1], 1, None, docs and docs[:1])]
        batches = [b for b in batches if not self._too_long(b)]  # those run eagerly
        limit = TOLERANCE[self.placement.precision]
        device = self.placement.device
        was = self.backbone.training
        self.backbone.eval()  # no dropout in either pass
        try:
            self._compare(fn, batches, limit, device)
        finally:
            self.backbone.train(was)

    def _compare(self, fn: Any, batches: list[Batch], limit: float,
                 device: torch.device) -> None:
        with torch.no_grad():
            for batch in batches:
                batch = batch.to(device)
                ref = SequenceLabeler.hidden(self, batch)[0].float()
                try:
                    out = self._run(fn, batch).float()
                except Exception as e:  # noqa: BLE001 - any compiler failure is one line
                    raise ModelError(f"torch.compile could not compile {self.config.model}: "
                                     f"{first_line(e)}; use --runtime torch") from e
                keep = batch.attention_mask.bool()
                diff = float((out - ref)[keep].abs().max())
                scale = float(ref[keep].abs().max())
                if not diff <= limit * max(scale, 1.0):
                    raise ModelError(f"torch.compile's pass of {self.config.model} differs "
                                     f"from the eager pass by {diff:.3g} (states up to "
                                     f"{scale:.3g}) on seqrep's check sentences; use "
                                     f"--runtime torch")

    def hidden(self, batch: Batch, capture: Any = ()) -> tuple[torch.Tensor, dict]:
        """The exit layer's states from the compiled pass; training, gradients and layer
        probes (``capture``) run eagerly."""
        if capture or self.training or torch.is_grad_enabled() or self._too_long(batch):
            return super().hidden(batch, capture)
        return self._run(self._compiled(), batch), {}
