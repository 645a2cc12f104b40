"""``OnnxLabeler``: an exported labeler run by ONNX Runtime, with SequenceLabeler's inference
interface, so :func:`seqrep.predict.predict_text`, :func:`seqrep.evaluate.evaluate` and the
server's batcher take it unchanged.

It needs no torch model: the tokenizer and config come from the export folder, the batches
from seqrep's own :class:`~seqrep.encode.pipeline.Encoder` (so they, and the outputs, are
those of PyTorch), and ONNX Runtime's CPUExecutionProvider runs the graph. Outputs are CPU
torch tensors, as :meth:`SequenceLabeler.word_logits` returns them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from seqrep.config import LabelerConfig
from seqrep.encode.batch import MAX_TOKENS, Batch
from seqrep.encode.pipeline import Encoder, EncodesSentences, per_sentence
from seqrep.errors import ConfigError, ModelError
from seqrep.export.files import META_FILE, require_onnx, sha256
from seqrep.model.backbone import BackboneInfo
from seqrep.model.device import Placement
from seqrep.runtimes import RUNTIMES


def read_meta(path: str | Path) -> dict[str, Any]:
    """The ``seqrep-onnx.json`` of an export folder."""
    meta = Path(path) / META_FILE
    if not meta.is_file():
        raise ModelError(f"{path} is not a seqrep ONNX export (no {META_FILE}); make one with "
                         f"`seqrep export RUN --onnx OUT`")
    try:
        data = json.loads(meta.read_text(encoding="utf-8"))
        if data.get("format") != "seqrep-onnx":
            raise KeyError("format")
        return data
    except (json.JSONDecodeError, KeyError, AttributeError) as err:
        raise ModelError(f"{meta}: not a seqrep ONNX export ({err})") from None


def is_export(path: str | Path) -> bool:
    """Whether ``path`` is a folder written by :func:`~seqrep.export.onnx.export_onnx`."""
    return (Path(path) / META_FILE).is_file()


class OnnxLabeler(EncodesSentences):
    """An exported labeler on ONNX Runtime (CPU).

    Build one with :meth:`from_pretrained`. Several threads may call it at once (ONNX
    Runtime sessions and the Encoder are thread-safe).

    Attributes:
        config: the labeler's :class:`~seqrep.config.LabelerConfig`.
        encoder: the Encoder that makes its batches.
        backbone_info: the backbone's facts saved at export.
        session: the ``onnxruntime.InferenceSession``.
        meta: the export's ``seqrep-onnx.json``.
    """

    training = False
    runtime = "onnx"  # the seqrep.runtimes name: "onnx-int8" when the int8 graph was loaded

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
                exported one.
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
        meta = read_meta(path)
        expected = meta.get("sha256")
        name = model_file or meta.get("model_file", "model.onnx")
        if variant is not None:
            recorded = meta.get("variants", {}).get(variant)
            if recorded is None:
                raise ModelError(f"{path} has no {variant} graph; write one with `seqrep export "
                                 f"RUN --onnx OUT --{variant}`")
            name, expected = recorded["model_file"], recorded.get("sha256")
        model_path = path / name
        if not model_path.is_file():
            raise ModelError(f"{model_path}: no such ONNX graph")
        if verify and (variant is not None or name == meta.get("model_file")):
            digest = sha256(model_path)
            if digest != expected:
                raise ModelError(f"{model_path}: sha256 {digest[:12]}... differs from the "
                                 f"metadata's {str(expected)[:12]}...; the file was changed or "
                                 f"is incomplete")
        from seqrep.model.backbone import quiet_transformers

        with quiet_transformers():
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(str(path / "tokenizer"),
                                                      trust_remote_code=False)
        config = LabelerConfig.from_dict(meta["labeler"])
        session = cls.make_session(model_path, intra_op_num_threads)
        labeler = cls(session, tokenizer, config, _info(meta), meta)
        labeler.model_file = name
        labeler.runtime = next((r.name for r in RUNTIMES.values()  # onnx, or onnx-int8
                                if r.onnx and r.variant == variant), f"onnx-{variant}")
        return labeler

    @classmethod
    def from_folder_parts(cls, model_path: str | Path, tokenizer: Any, config: LabelerConfig,
                          meta: dict[str, Any],
                          intra_op_num_threads: int | None = None) -> OnnxLabeler:
        """From a graph file and an in-memory tokenizer and config (the export's check)."""
        return cls(cls.make_session(model_path, intra_op_num_threads), tokenizer, config,
                   _info(meta), meta)

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
                  fn: Callable[[Batch], torch.Tensor], batch_size: int = 32,
                  max_tokens: int | None = MAX_TOKENS, docs: Sequence[Any] | None = None
                  ) -> list[torch.Tensor]:
        """Run ``fn`` (a batch -> ``(W, ...)`` rows) over ``sentences`` and reassemble one
        ``(words, ...)`` tensor per sentence, in input order (as SequenceLabeler does)."""
        return per_sentence(sentences, ((fn(batch), items) for batch, items in
                                        self.batches(sentences, batch_size, max_tokens, docs)))

    def word_logits(self, sentences: Sequence[Sequence[str]], batch_size: int = 32,
                    max_tokens: int | None = MAX_TOKENS, docs: Sequence[Any] | None = None
                    ) -> list[torch.Tensor]:
        """One ``(words, num_labels)`` tensor of logits per sentence."""
        return self.map_words(sentences, self, batch_size, max_tokens, docs)

    def word_states(self, sentences: Sequence[Sequence[str]], batch_size: int = 32,
                    max_tokens: int | None = MAX_TOKENS, docs: Sequence[Any] | None = None
                    ) -> list[torch.Tensor]:
        """One ``(words, H)`` tensor of exit-layer states per sentence."""
        if "states" not in self._outputs:
            raise ModelError("this ONNX graph has no 'states' output")
        return self.map_words(sentences, lambda b: torch.from_numpy(self.run(b, ["states"])[0]),
                              batch_size, max_tokens, docs)

    def layer_states(self, *args: Any, **kwargs: Any) -> list[torch.Tensor]:
        raise ModelError("probe mode (layer_states) needs the PyTorch labeler; the ONNX graph "
                         "ends at the exit layer")


def _info(meta: dict[str, Any]) -> BackboneInfo:
    b = meta.get("backbone", {})
    try:
        return BackboneInfo(str(b.get("source", "")), bool(b.get("is_encoder", False)),
                            int(b["total_layers"]), int(b["num_layers"]),
                            int(b["hidden_size"]), int(b.get("pad_id", 0)),
                            int(b.get("first_position", 0)))
    except (KeyError, TypeError, ValueError) as err:
        raise ModelError(f"{META_FILE}: incomplete backbone facts ({err})") from None


def _check_placement(device: Any, precision: str | None) -> None:
    dev = str(device or "auto").lower()
    if dev not in ("cpu", "auto"):
        raise ConfigError(f"--device {device}: the ONNX runtime runs on the CPU only; use "
                          f"--device cpu (or the PyTorch labeler)")
    if (precision or "auto").lower() not in ("auto", "fp32"):
        raise ConfigError(f"--precision {precision}: the ONNX graph is fp32; use --precision "
                          f"fp32 or auto")
