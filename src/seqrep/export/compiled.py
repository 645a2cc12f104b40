"""``CompiledLabeler``: a trained labeler whose forward pass runs through ``torch.compile``.

The labeler is a :class:`~seqrep.model.labeler.SequenceLabeler` in every other way (the same
folder, tokenizer, batches, pooling, head and decoding, the same placement and precision):
only :meth:`hidden` differs, where the backbone's inference pass is compiled by inductor,
its rows and length dynamic and its weights' shapes fixed, so its norms, activations and
multiplications are fused around the matrix products instead of each reading and writing
the states again.

The weights stay inputs of the compiled graph, never constants: in bf16 or fp16 the pass
reads the labeler's own cast copies (:attr:`~seqrep.model.labeler.SequenceLabeler.
inference_weights`, made again whenever the weights change), in fp32 the parameters
themselves, so a training step, ``load_state_dict`` or an edit is seen at the next pass
without compiling again. (Freezing the weights into the graph was measured no faster on
the recipe: ``benchmarks/compile_probe.py``.)

Compiling takes about a minute for Gemma-3-270m on two cores, once per process; inductor
keeps its kernels in its cache (``TORCHINDUCTOR_CACHE_DIR``, by default under the system's
temporary folder), so a later process spends about half a minute (dynamo's tracing is
not cached). A batch of one row has a graph of its own (dynamo specializes a size of 1), made with
the others. Before its first use the compiled pass
is checked against the eager pass on seqrep's check sentences, in three batchings, and refused
in one line if a state differs by more than 1e-3 (fp32) or a fifth (bf16, fp16) of the
largest, or is not finite. Training, gradients and layer probes run eagerly. A labeler
with bidirectional (unmasked) layers is refused: their masks are set per batch from Python
hooks, which a compiled graph would keep from its first batch.
"""

from __future__ import annotations

import threading
from typing import Any

import torch

from seqrep.core.contexts import labeler_context
from seqrep.encode.batch import Batch
from seqrep.errors import ConfigError, ModelError, first_line
from seqrep.export.check import check_sentences
from seqrep.model.device import DTYPES
from seqrep.model.labeler import SequenceLabeler

# how far the compiled pass may drift from the eager one, as a share of the largest state
TOLERANCE = {"fp32": 1e-3, "bf16": 0.2, "fp16": 0.2}


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

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor,
                 weights: dict[str, torch.Tensor]) -> torch.Tensor:
        with self.placement.autocast():
            out = torch.func.functional_call(self.backbone, weights, (), {
                "input_ids": ids, "attention_mask": mask, "position_ids": positions,
                "use_cache": False})
        return out.last_hidden_state

    def _weights(self) -> dict[str, torch.Tensor]:
        precision = self.placement.precision
        if precision == "fp32":
            return dict(self.backbone.named_parameters())
        with self.inference_weights.lock:
            return self.inference_weights.tensors(self.backbone, DTYPES[precision])

    def _run(self, fn: Any, batch: Batch) -> torch.Tensor:
        inputs = (batch.input_ids, batch.attention_mask, self.model_positions(batch.position_ids))
        for tensor in inputs:  # rows and length vary; the weights' shapes never do
            torch._dynamo.maybe_mark_dynamic(tensor, 0)
            torch._dynamo.maybe_mark_dynamic(tensor, 1)
        return fn(*inputs, self._weights())

    def _compiled(self) -> Any:
        state = (self.placement.device, self.placement.precision)
        with self._pass_lock:
            if self._pass is None:
                self._pass = torch.compile(self._forward)
            if self._checked != state:
                self._check(self._pass)
                self._checked = state
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
        if capture or self.training or torch.is_grad_enabled():
            return super().hidden(batch, capture)
        return self._run(self._compiled(), batch), {}
