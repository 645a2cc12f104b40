"""seqrep bench's OpenVINO rows: where they run, which ceiling each is measured against, and
a measured row whose states are those of the PyTorch fp32 row."""

from __future__ import annotations

import pytest
from support import WORDS

from seqrep.errors import ConfigError
from seqrep.lab.bench import BenchConfig, bench_jobs
from seqrep.lab.bench_rows import _ceiling_precision, _measure


def test_openvino_rows_run_at_every_context_and_for_the_encoders_too() -> None:
    """The runtime that labels the recipe is timed on the encoders as well (an even
    comparison), at each context; its rows are on the CPU."""
    cfg = BenchConfig(model="m", repetitions=(1,), exit_layers=(3,), encoder="e",
                      precisions=("bf16", "openvino-bf16"), baseline=False,
                      context=("sentence", "document-focus"), device="auto")
    assert bench_jobs(cfg) == [
        ("m", 1, 3, "cut", "bf16", "sentence", "none", None),
        ("m", 1, 3, "cut", "bf16", "document-focus", "none", 256),
        ("m", 1, 3, "cut", "openvino-bf16", "sentence", "none", None),
        ("m", 1, 3, "cut", "openvino-bf16", "document-focus", "none", 256),
        ("e", 0, None, "encoder", "fp32", "sentence", "none", None),
        ("e", 0, None, "encoder", "fp32", "document-focus", "none", 256),
        ("e", 0, None, "encoder", "openvino-bf16", "sentence", "none", None),
        ("e", 0, None, "encoder", "openvino-bf16", "document-focus", "none", 256)]
    assert cfg.resolved_device() == "cpu"
    assert _ceiling_precision("openvino-bf16") == "bf16"
    assert _ceiling_precision("openvino-fp32") == "fp32"
    with pytest.raises(ConfigError, match="expected a comma list of fp32, bf16, "
                                          "openvino-fp32, openvino-bf16"):
        BenchConfig(precisions=("openvino",))


def test_a_measured_openvino_row_has_the_states_of_the_fp32_row(tiny) -> None:
    pytest.importorskip("openvino")
    model = tiny("llama")
    words = WORDS * 3
    fp32 = _measure(model, 1, 1, words, 4, None, 2, "cut", None)
    ov = _measure(model, 1, 1, words, 4, None, 2, "cut", None, precision="openvino-fp32")
    assert ov["precision"] == "openvino-fp32" and ov["tokens"] == fp32["tokens"]
    assert ov["checksum"] == pytest.approx(fp32["checksum"], rel=1e-5)


def test_compiled_rows_are_timed_for_the_encoders_too_and_keep_the_states(tiny) -> None:
    cfg = BenchConfig(model="m", repetitions=(1,), exit_layers=(3,), encoder="e",
                      precisions=("compile-bf16",), baseline=False, context=("sentence",))
    assert bench_jobs(cfg) == [("m", 1, 3, "cut", "compile-bf16", "sentence", "none", None),
                               ("e", 0, None, "encoder", "fp32", "sentence", "none", None),
                               ("e", 0, None, "encoder", "compile-bf16", "sentence", "none",
                                None)]
    assert _ceiling_precision("compile-bf16") == "bf16"
    model = tiny("llama")
    words = WORDS * 3
    fp32 = _measure(model, 1, 1, words, 4, None, 2, "cut", None)
    fused = _measure(model, 1, 1, words, 4, None, 2, "cut", None, precision="compile-fp32")
    assert fused["precision"] == "compile-fp32" and fused["tokens"] == fp32["tokens"]
    assert fused["checksum"] == pytest.approx(fp32["checksum"], rel=1e-5)
