"""The Hugging Face peer's labelings at the precisions it offers besides fp32 run the same
model: ONNX Runtime's logits match the torch model's, torch's dynamic int8 stays near them
(and really is quantized), on a tiny random MPNet (the peers' encoder's architecture)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from peers import hf_peer  # noqa: E402

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")


@pytest.fixture(scope="module")
def tiny() -> tuple[object, dict]:
    torch.manual_seed(0)
    cfg = transformers.MPNetConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1,
                                   num_attention_heads=2, intermediate_size=64, num_labels=5)
    model = transformers.MPNetForTokenClassification(cfg).eval()
    ids = torch.randint(3, 100, (3, 7))
    mask = torch.ones_like(ids)
    mask[1, 5:] = 0  # a padded row, as a batch of sentences of different lengths has
    mask[2, 3:] = 0
    return model, {"input_ids": ids, "attention_mask": mask}


def test_onnx_matches_torch(tiny: tuple, tmp_path: Path) -> None:
    model, enc = tiny
    with torch.inference_mode():
        want = model(**enc).logits
    got = hf_peer._forward(model, "onnx", tmp_path, 1)(enc)
    assert (tmp_path / "onnx" / "model.onnx").is_file()
    assert torch.allclose(got, want, atol=1e-4)
    # another batch shape runs through the same graph (its axes are dynamic)
    longer = {k: v.repeat(2, 2) for k, v in enc.items()}
    with torch.inference_mode():
        want = model(**longer).logits
    assert torch.allclose(hf_peer._forward(model, "onnx", tmp_path, 1)(longer), want, atol=1e-4)


def test_int8_is_quantized_and_close(tiny: tuple, tmp_path: Path) -> None:
    model, enc = tiny
    with torch.inference_mode():
        want = model(**enc).logits
        got = hf_peer._forward(model, "int8", tmp_path, 1)(enc)
    diff = (got - want).abs().max().item()
    assert 0 < diff < 0.1 * want.abs().max().item()  # not fp32 (0), not another model


def test_fp32_is_the_model(tiny: tuple, tmp_path: Path) -> None:
    model, enc = tiny
    with torch.inference_mode():
        assert torch.equal(hf_peer._forward(model, "fp32", tmp_path, 1)(enc),
                           model(**enc).logits)


def test_openvino_matches_torch_on_padded_rows_of_any_shape(tiny: tuple, tmp_path: Path
                                                            ) -> None:
    """OpenVINO's defaults on this CPU (bf16 where it is native, else f32): near torch's
    fp32 logits on the real tokens, at the example's shape and at another."""
    pytest.importorskip("openvino")
    model, enc = tiny
    run = hf_peer._forward(model, "openvino", tmp_path, 1)
    for batch in (enc, {k: v.repeat(2, 2) for k, v in enc.items()}):
        with torch.inference_mode():
            want = model(**batch).logits
        keep = batch["attention_mask"].bool()
        diff = (run(batch) - want)[keep].abs().max().item()
        assert diff < 0.05 * want.abs().max().item()


def test_compile_matches_torch_under_bf16_autocast(tiny: tuple, tmp_path: Path) -> None:
    """torch.compile under the labeling's bf16 autocast: near the fp32 logits on the real
    tokens, at a shape its warm-up did not see."""
    from torch._dynamo.utils import counters

    model, enc = tiny
    torch._dynamo.reset()  # compiled here, not taken from an earlier test's graph
    counters.clear()
    run = hf_peer._forward(model, "compile", tmp_path, 1)
    if torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported():
        # the weights frozen into the graph, as seqrep's compile runtime freezes its own: only
        # freezing packs them for the matrix units, so the comparison stays even
        assert counters["inductor"]["mkldnn_linear_weight_pack_matcher_count"] >= 1
    with torch.inference_mode():
        want = model(**enc).logits
        with torch.autocast("cpu", dtype=torch.bfloat16):
            got = run(enc)
    keep = enc["attention_mask"].bool()
    assert (got.float() - want)[keep].abs().max().item() < 0.05 * want.abs().max().item()
