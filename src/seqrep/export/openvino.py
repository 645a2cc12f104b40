"""``OpenVinoLabeler``: a trained labeler whose backbone runs on OpenVINO (CPU).

The labeler is a :class:`~seqrep.model.labeler.SequenceLabeler` in every other way (the same
folder, tokenizer, batches, pooling, head and decoding): only :meth:`hidden` differs, where
the backbone's forward pass runs as an OpenVINO graph converted from the torch module
(``openvino.convert_model``) the first time it is needed.

Precision: ``fp32`` runs the graph in f32. ``bf16`` casts the inputs of each matrix product
to bf16 and its output back to f32 (inside an MLP, the activation and the gate's product
stay in bf16 up to the down projection), so the products run on the CPU's bf16 units (AMX,
AVX512-BF16) while norms, residual sums, rotary positions, softmax and attention stay in
f32, as torch's bf16 autocast keeps them. OpenVINO's own ``INFERENCE_PRECISION_HINT=bf16`` (every
operation in bf16) is never used: on seqrep's CoNLL-2003 recipe (Gemma-3-270m) it changed
0.9 % of the tags of 300 test sentences against fp32 (states off by up to 35), where this
graph changed none (up to 8.5; torch's bf16 autocast is of the same order), and marking
nodes to keep f32 (``disable_fp16_compression``) did not change OpenVINO's choice. ``auto`` is
``bf16`` where the CPU multiplies bf16 natively, else ``fp32``.

The graph is made again when the weights change: an optimizer step anywhere in the process,
``load_state_dict``, training mode, :meth:`place`, a replaced parameter or a sampled entry
of one that differs (call ``refresh_inference_weights()`` after editing a few by hand).
Training, gradients and layer probes (states of several layers) run on torch, in fp32.
"""

from __future__ import annotations

import random
import threading
import warnings
from typing import Any

import torch

from seqrep.core.contexts import labeler_context
from seqrep.core.extras import require
from seqrep.encode.batch import Batch
from seqrep.errors import ConfigError, ModelError, first_line
from seqrep.export.check import check_sentences
from seqrep.model import casts
from seqrep.model.device import cpu_has_bf16
from seqrep.model.labeler import SequenceLabeler

PRECISIONS = ("auto", "fp32", "bf16")
SAMPLED = 16  # entries of each parameter compared at every pass


class _Backbone(torch.nn.Module):
    """The backbone as the positional function OpenVINO converts: ids, mask, positions ->
    the exit layer's states, its unmasked layers (if any) reading the traced mask."""

    def __init__(self, model: torch.nn.Module, unmasker: Any, causal_right: bool) -> None:
        super().__init__()
        self.model = model
        self.unmasker = unmasker
        self.causal_right = causal_right

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                position_ids: torch.Tensor) -> torch.Tensor:
        # A causal decoder padded on the right: no real token sees a padding token, so the
        # model's own mask may say "no padding", which leaves no padding query without a
        # key (a query whose keys are all masked is NaN in OpenVINO's attention, and a NaN
        # reaches real tokens through a zero weight). Unmasked layers keep the real padding.
        mask = torch.ones_like(attention_mask) if self.causal_right else attention_mask
        with self.unmasker.active(attention_mask):
            return self.model(input_ids=input_ids, attention_mask=mask,
                              position_ids=position_ids, use_cache=False).last_hidden_state


# what may stand between an MLP's products and keep their bf16: the activation (GELU, SiLU)
# and the gate's product with the up projection
_MLP = {"Gelu", "Swish", "Multiply"}


def _mlp_inside(op: Any) -> bool:
    """Whether a product's output feeds only an MLP's activation or gate product (each of
    whose inputs comes from a product or an activation), so it may stay in bf16."""
    targets = [t.get_node() for t in op.output(0).get_target_inputs()]
    if not targets or any(n.get_type_name() not in _MLP for n in targets):
        return False
    return all(n.input_value(i).get_node().get_type_name() in {"MatMul", "Gelu", "Swish"}
               for n in targets if n.get_type_name() == "Multiply"
               for i in range(n.get_input_size()))


def bf16_products(model: Any) -> int:
    """Run every f32 ``MatMul`` of an OpenVINO model on bf16 inputs (constant weights fold to
    bf16 when compiled), its output back in f32, except inside an MLP, where the gate and up
    products, their activation and their product stay in bf16 up to the down projection
    (elementwise work on the MLP's widest tensors at half the memory traffic). Norms,
    residual sums, rotary positions and attention stay in f32. Returns the products cast."""
    import openvino as ov
    import openvino.opset13 as ops

    count = 0
    for op in model.get_ordered_ops():
        if op.get_type_name() != "MatMul" or not {
                op.input_value(i).get_element_type() for i in range(op.get_input_size())
        } <= {ov.Type.f32, ov.Type.bf16}:
            continue
        for i in range(op.get_input_size()):
            if op.input_value(i).get_element_type() == ov.Type.f32:
                op.input(i).replace_source_output(
                    ops.convert(op.input_value(i), ov.Type.bf16).output(0))
        count += 1
        if _mlp_inside(op):
            continue
        targets = list(op.output(0).get_target_inputs())
        back = ops.convert(op.output(0), ov.Type.f32)
        for target in targets:
            target.replace_source_output(back.output(0))
    model.validate_nodes_and_infer_types()
    return count


def _fingerprint(module: torch.nn.Module, seed: int = 0) -> list[tuple]:
    """Each parameter's identity, storage and a few sampled entries (as bits): what the
    converted graph was made from."""
    rng = random.Random(seed)
    out = []
    for name, p in module.named_parameters():
        flat = p.detach().reshape(-1)
        at = torch.tensor(sorted(rng.sample(range(flat.numel()), min(SAMPLED, flat.numel()))))
        out.append((name, id(p), p.data_ptr(), p.dtype, tuple(p.shape),
                    flat[at].float().view(torch.int32).tolist()))
    return out


class OpenVinoLabeler(SequenceLabeler):
    """A :class:`~seqrep.model.labeler.SequenceLabeler` whose backbone runs on OpenVINO.

    Load one with ``OpenVinoLabeler.from_pretrained(path)`` (or ``--runtime openvino``);
    label, score and serve with it as with any labeler. Several threads may call it at once
    (each has its own infer request).
    """

    runtime = "openvino"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        require("openvino", "--runtime openvino")
        super().__init__(*args, **kwargs)
        self.ov_precision = "fp32"
        self.ov_threads: int | None = None
        self._graph: Any = None
        self._made_from: tuple = ()
        self._local = threading.local()
        self._graph_lock = threading.Lock()
        self.register_load_state_dict_post_hook(lambda module, keys: self._drop())

    def place(self, device: str | torch.device = "auto", precision: str = "auto",
              threads: int | None = None) -> OpenVinoLabeler:
        """Run on the CPU (the only device here) at ``precision`` (``auto``, ``fp32`` or
        ``bf16``: see the module's notes) with ``threads`` OpenVINO threads (default: torch's
        thread count); returns self."""
        if str(device) not in ("auto", "cpu"):
            raise ConfigError(f"--runtime openvino runs on the CPU; got --device {device} "
                              f"(use --runtime torch for {device})")
        if precision not in PRECISIONS:
            raise ConfigError(f"--runtime openvino takes --precision auto, fp32 or bf16; "
                              f"got {precision!r}")
        super().place("cpu", "fp32")  # pooling and the head: fp32 torch
        self.ov_precision = precision if precision != "auto" else (
            "bf16" if cpu_has_bf16() else "fp32")
        self.ov_threads = threads
        self._drop()
        return self

    @property
    def numerics_note(self) -> str:
        """What the ``running on`` line says of the numerics."""
        return "bf16 products, f32 elsewhere" if self.ov_precision == "bf16" else "fp32"

    def train(self, mode: bool = True) -> OpenVinoLabeler:
        if mode:
            self._drop()
        return super().train(mode)

    def refresh_inference_weights(self) -> None:
        super().refresh_inference_weights()
        self._drop()

    def _drop(self) -> None:
        with getattr(self, "_graph_lock", threading.Lock()):
            self._graph = None
            self._made_from = ()
            self._local = threading.local()

    def _state(self) -> tuple:
        return (casts._STEPS[0], self.ov_precision, self.ov_threads,
                tuple(map(tuple, _fingerprint(self.backbone))))

    def compile(self) -> OpenVinoLabeler:
        """Convert and compile the backbone now (else at the first pass); a backbone
        OpenVINO cannot convert is one line."""
        self._compiled()
        return self

    def _compiled(self) -> Any:
        state = self._state()
        with self._graph_lock:
            if self._graph is not None and state == self._made_from:
                return self._graph
            sentences = check_sentences(self)
            docs = ["check"] * len(sentences) if labeler_context(self).documents else None
            batches = [b for b, _ in self.batches(sentences, 32, None, docs)]
            model = self._convert(batches[0])
            fp32 = self._compile(model)
            self._check(fp32, batches + [b for b, _ in self.batches(sentences, 2, None, docs)])
            if self.ov_precision == "bf16":
                bf16_products(model)
                self._graph = self._compile(model)
            else:
                self._graph = fp32
            self._made_from = state
            self._local = threading.local()
            return self._graph

    def _inputs(self, batch: Batch) -> tuple[torch.Tensor, ...]:
        return (batch.input_ids, batch.attention_mask, self.model_positions(batch.position_ids))

    def _convert(self, example: Batch) -> Any:
        """The backbone traced on ``example`` (rows of several lengths, the longest the
        labeler makes) and converted to an OpenVINO model with any batch and length."""
        import openvino as ov

        was = self.backbone.training
        self.backbone.eval()
        try:
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the tracer's notes on Python branches
                causal_right = (not self.backbone_info.is_encoder
                                and self.config.padding_side == "right")
                traced = torch.jit.trace(_Backbone(self.backbone, self.unmasker, causal_right),
                                         self._inputs(example), check_trace=False,
                                         strict=False)
                return ov.convert_model(traced, example_input=self._inputs(example),
                                        input=[ov.PartialShape([-1, -1])] * 3)
        except Exception as e:  # noqa: BLE001 - any tracer or converter failure is one line
            raise ModelError(f"OpenVINO could not convert {self.config.model}: "
                             f"{first_line(e)}; use --runtime torch") from e
        finally:
            self.backbone.train(was)

    def _compile(self, model: Any, **options: Any) -> Any:
        """``model`` compiled for the CPU as this labeler runs it (f32 hint, its threads),
        with any further OpenVINO ``options`` (the profiler's ``PERF_COUNT``)."""
        import openvino as ov

        return ov.Core().compile_model(model, "CPU", {
            "INFERENCE_PRECISION_HINT": "f32",
            "INFERENCE_NUM_THREADS": self.ov_threads or torch.get_num_threads(),
            "PERFORMANCE_HINT": "LATENCY", **options})

    def _check(self, graph: Any, batches: list[Batch]) -> None:
        """The f32 graph against torch's fp32 pass on the check sentences in two batchings
        (a traced graph can keep a branch its example took); refused in one line if a state
        differs by more than 1e-3 of the largest."""
        request = graph.create_infer_request()
        for batch in batches:
            with torch.no_grad():
                ref = SequenceLabeler.hidden(self, batch)[0]
            out = torch.from_numpy(request.infer(
                [x.numpy() for x in self._inputs(batch)])[graph.output(0)].copy())
            keep = batch.attention_mask.bool()
            diff = float((out - ref)[keep].abs().max())
            scale = float(ref[keep].abs().max())
            if not diff <= 1e-3 * max(scale, 1.0):
                raise ModelError(f"OpenVINO's graph of {self.config.model} differs from "
                                 f"PyTorch by {diff:.3g} (states up to {scale:.3g}) on "
                                 f"seqrep's check sentences; use --runtime torch")

    def hidden(self, batch: Batch, capture: Any = ()) -> tuple[torch.Tensor, dict]:
        """The exit layer's states from the OpenVINO graph; training, gradients and layer
        probes (``capture``) run on torch, in fp32."""
        if capture or self.training or torch.is_grad_enabled():
            return super().hidden(batch, capture)
        graph = self._compiled()
        request = getattr(self._local, "request", None)
        if request is None or getattr(self._local, "graph", None) is not graph:
            request = self._local.request = graph.create_infer_request()
            self._local.graph = graph
        out = request.infer([x.numpy() for x in self._inputs(batch)])
        return torch.from_numpy(out[graph.output(0)].copy()), {}
