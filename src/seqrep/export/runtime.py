"""``OnnxLabeler``: an exported labeler run by ONNX Runtime, with SequenceLabeler's inference
interface, so :func:`seqrep.predict.tagger.predict_text`, :func:`seqrep.evaluate.evaluate` and the
server's batcher take it unchanged.

It needs no torch model: the tokenizer and config come from the export folder, the batches
from seqrep's own :class:`~seqrep.encode.pipeline.Encoder` (so they, and the outputs, are
those of PyTorch), and ONNX Runtime's CPUExecutionProvider runs the graph. Outputs are CPU
torch tensors, as :meth:`SequenceLabeler.word_logits` returns them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from seqrep.config import LabelerConfig
from seqrep.core.labeler_methods import LabelerMethods
from seqrep.core.runtimes import RUNTIMES
from seqrep.encode import BATCH_SENTENCES, BATCH_TOKENS
from seqrep.encode.batch import Batch
from seqrep.encode.pipeline import Encoder, EncodesSentences, per_sentence
from seqrep.encode.rows import Item
from seqrep.errors import ConfigError, ModelError, first_line
from seqrep.export.files import META_FILE, require_onnx, sha256
from seqrep.export.folder import (
    backbone_info,
    check_graph,
    graph_file,
    labeler_config,
    load_tokenizer,
    read_meta,
)
from seqrep.model.backbone import BackboneInfo
from seqrep.model.checks import check_files
from seqrep.model.device import Placement


def is_export(path: str | Path) -> bool:
    """Whether ``path`` is a folder written by :func:`~seqrep.export.onnx.export_onnx`."""
    return (Path(path) / META_FILE).is_file()


class OnnxLabeler(LabelerMethods, EncodesSentences):
    """An exported labeler on ONNX Runtime (CPU).

    Build one with :meth:`from_pretrained`; label with :meth:`predict` or
    :meth:`predict_words` and score with :meth:`evaluate`, as a SequenceLabeler. Several
    threads may call it at once (ONNX Runtime sessions and the Encoder are thread-safe).

    Attributes:
        config: the labeler's :class:`~seqrep.config.LabelerConfig`.
        encoder: the Encoder that makes its batches.
        backbone_info: the backbone's facts saved at export.
        session: the ``onnxruntime.InferenceSession``.
        meta: the export's ``seqrep-onnx.json``.
    """

    training = False
    runtime = "onnx"  # the seqrep.core.runtimes name: "onnx-int8" when the int8 graph was loaded

    def __init__(self, session: Any, tokenizer: Any, config: LabelerConfig,
                 info: BackboneInfo, meta: dict[str, Any] | None = None) -> None:
        self.session = session
        self.tokenizer = tokenizer
        self.config = config
        self.backbone_info = info
        self.meta = meta or {}
        self.encoder = Encoder(tokenizer, config, info.pad_id)
        self.placement = Placement()
        self.model_file = ""
        self._inputs = [i.name for i in session.get_inputs()]
        self._outputs = [o.name for o in session.get_outputs()]
        if "logits" not in self._outputs:
            raise ModelError(f"the ONNX graph has no 'logits' output ({self._outputs})")

    # ----------------------------------------------------------------- construction
    @staticmethod
    def make_session(model_path: str | Path, intra_op_num_threads: int | None = None,
                     inter_op_num_threads: int | None = None) -> Any:
        """An ONNX Runtime CPU session with all graph optimisations."""
        require_onnx("onnxruntime")
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if intra_op_num_threads:
            options.intra_op_num_threads = int(intra_op_num_threads)
        if inter_op_num_threads:
            options.inter_op_num_threads = int(inter_op_num_threads)
        options.log_severity_level = 3  # errors only
        return ort.InferenceSession(str(model_path), options,
                                    providers=["CPUExecutionProvider"])

    @classmethod
    def from_pretrained(cls, path: str | Path, intra_op_num_threads: int | None = None,
                        model_file: str | None = None, verify: bool = True,
                        device: str = "auto", precision: str = "auto",
                        trust_remote_code: bool = False,
                        variant: str | None = None) -> OnnxLabeler:
        """Load an export folder.

        Args:
            path: the folder :func:`~seqrep.export.onnx.export_onnx` wrote.
            intra_op_num_threads: ONNX Runtime's threads per operator (default: its own,
                one per physical core).
            model_file: another graph in the folder (a quantized variant) instead of the
                exported one: a plain file name, like the metadata's own.
            verify: check the exported graph's sha256 against the metadata.
            device, precision: accepted for SequenceLabeler's signature; only ``cpu`` (or
                ``auto``, the default as on the commands: ONNX Runtime's only device here is
                the CPU) and ``fp32`` (or ``auto``) are possible.
            trust_remote_code: ignored (an export runs no model code; the tokenizer is loaded
                without remote code).
            variant: a recorded variant of the graph instead of fp32: ``int8`` (written by
                ``seqrep export --int8``, see :mod:`seqrep.export.quantize`).
        """
        _check_placement(device, precision)
        path = Path(path)
        # every file and field is checked before anything runs (seqrep.export.folder)
        meta = read_meta(path)
        check_files(path)
        graph, expected = graph_file(path, meta, model_file, variant)
        if verify and expected is not None:
            digest = sha256(graph)
            if digest != expected:
                raise ModelError(f"{graph}: sha256 {digest[:12]}... differs from the "
                                 f"metadata's {expected[:12]}...; the file was changed or "
                                 f"is incomplete")
        config = labeler_config(path, meta)
        info = backbone_info(path, meta)
        tokenizer = load_tokenizer(path)
        try:
            session = cls.make_session(graph, intra_op_num_threads)
        except Exception as err:  # noqa: BLE001 - ONNX Runtime raises its own error types
            raise ModelError(f"{graph}: not an ONNX graph ONNX Runtime can load "
                             f"({first_line(err)})") from None
        check_graph(path, graph, session, config, info, tokenizer)
        labeler = cls(session, tokenizer, config, info, meta)
        labeler.model_file = graph.name
        labeler.runtime = next((r.name for r in RUNTIMES.values()  # onnx, or onnx-int8
                                if r.onnx and r.variant == variant), f"onnx-{variant}")
        return labeler

    @classmethod
    def from_folder_parts(cls, model_path: str | Path, tokenizer: Any, config: LabelerConfig,
                          meta: dict[str, Any],
                          intra_op_num_threads: int | None = None) -> OnnxLabeler:
        """From a graph file and an in-memory tokenizer and config (the export's check)."""
        return cls(cls.make_session(model_path, intra_op_num_threads), tokenizer, config,
                   backbone_info(Path(model_path).parent, meta), meta)

    def place(self, device: str = "auto", precision: str = "auto") -> OnnxLabeler:
        """SequenceLabeler's :meth:`~seqrep.model.labeler.SequenceLabeler.place`: the graph
        runs on the CPU in fp32 only; returns self."""
        _check_placement(device, precision)
        return self

    def eval(self) -> OnnxLabeler:
        return self

    def train(self, mode: bool = True) -> OnnxLabeler:
        if mode:
            raise ModelError("an ONNX labeler is for inference only; train the PyTorch one")
        return self

    # ----------------------------------------------------------------- encoding
    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    @property
    def layers_unmasked(self) -> list[int]:
        return list(self.meta.get("unmasked_layers", []))

    # ----------------------------------------------------------------- forward
    def run(self, batch: Batch, outputs: Sequence[str] = ("logits",)) -> list[np.ndarray]:
        """The graph's ``outputs`` for one batch, as numpy arrays."""
        feed = {"input_ids": batch.input_ids, "attention_mask": batch.attention_mask,
                "position_ids": batch.position_ids, "read_batch": batch.read_batch,
                "read_pos": batch.read_pos, "read_word": batch.read_word,
                "read_weight": batch.read_weight}
        arrays = {k: v.cpu().numpy() for k, v in feed.items()}
        arrays["read_weight"] = arrays["read_weight"].astype(np.float32, copy=False)
        arrays["words"] = np.zeros(batch.num_words, dtype=np.float32)
        return self.session.run(list(outputs), {k: arrays[k] for k in self._inputs})

    def __call__(self, batch: Batch) -> torch.Tensor:
        """Logits ``(W, num_labels)`` of the words in ``batch``, like SequenceLabeler's
        forward."""
        return torch.from_numpy(self.run(batch)[0])

    def map_words(self, sentences: Sequence[Sequence[str]],
                  fn: Callable[[Batch], torch.Tensor], batch_size: int = BATCH_SENTENCES,
                  batch_tokens: int | None = BATCH_TOKENS, *, docs: Sequence[Any] | None = None,
                  items: Sequence[Item] | None = None) -> list[torch.Tensor]:
        """Run ``fn`` (a batch -> ``(W, ...)`` rows) over ``sentences`` and reassemble one
        ``(words, ...)`` tensor per sentence, in input order (as SequenceLabeler does, with
        its ``docs`` and ``items``)."""
        return per_sentence(sentences, ((fn(batch), members) for batch, members in self.batches(
            sentences, batch_size, batch_tokens, docs, items)))

    def word_logits(self, sentences: Sequence[Sequence[str]], batch_size: int = BATCH_SENTENCES,
                    batch_tokens: int | None = BATCH_TOKENS, *, docs: Sequence[Any] | None = None,
                    items: Sequence[Item] | None = None) -> list[torch.Tensor]:
        """One ``(words, num_labels)`` tensor of logits per sentence."""
        return self.map_words(sentences, self, batch_size, batch_tokens, docs=docs, items=items)

    def word_states(self, sentences: Sequence[Sequence[str]], batch_size: int = BATCH_SENTENCES,
                    batch_tokens: int | None = BATCH_TOKENS, *, docs: Sequence[Any] | None = None
                    ) -> list[torch.Tensor]:
        """One ``(words, H)`` tensor of exit-layer states per sentence."""
        if "states" not in self._outputs:
            raise ModelError("this ONNX graph has no 'states' output")
        return self.map_words(sentences, lambda b: torch.from_numpy(self.run(b, ["states"])[0]),
                              batch_size, batch_tokens, docs=docs)

    def layer_states(self, *args: Any, **kwargs: Any) -> list[torch.Tensor]:
        raise ModelError("probe mode (layer_states) needs the PyTorch labeler; the ONNX graph "
                         "ends at the exit layer")


def _check_placement(device: Any, precision: str | None) -> None:
    dev = str(device or "auto").lower()
    if dev not in ("cpu", "auto"):
        raise ConfigError(f"--device {device}: the ONNX runtime runs on the CPU only; use "
                          f"--device cpu (or the PyTorch labeler)")
    if (precision or "auto").lower() not in ("auto", "fp32"):
        raise ConfigError(f"--precision {precision}: the ONNX graph is fp32; use --precision "
                          f"fp32 or auto")
