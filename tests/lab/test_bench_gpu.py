"""scripts/bench_gpu.py, run on the CPU with its tiny config: the same code the GPU session
runs at Mistral-7B shape, so a broken script is caught here and not on the device."""

from __future__ import annotations

import importlib.util
import json

import pytest
import torch
from packaging.version import Version
from support import load_script


@pytest.fixture(scope="module")
def bench():
    return load_script("bench_gpu")


@pytest.fixture(scope="module")
def result(bench, tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("bench-gpu") / "gpu-bench.json"
    rc = bench.main(["--device", "cpu", "--config", "tiny", "--quick", "--sentences", "24",
                     "--max-tokens", "256,1024", "--train-sentences", "4", "--threads", "1",
                     "--output", str(out)])
    assert rc == 0
    return json.loads(out.read_text(encoding="utf-8"))


def test_every_setting_has_a_positive_rate_and_the_cut_model_has_l_layers(result) -> None:
    rows = result["rows"]
    assert not [r for r in rows if "error" in r]
    assert {(r["exit_layer"], r["repetitions"], r["max_tokens"]) for r in rows} == {
        (L, r, m) for L in (2, 4) for r in (0, 1, 4) for m in (256, 1024)}
    for row in rows:
        assert row["tokens_per_second"] > 0 and row["sentences_per_second"] > 0
        assert row["flops"] > 0 and row["tflops_per_second"] > 0
        assert row["share_of_measured_ceiling"] > 0
        assert row["layers_computed"] == row["config_layers"] == row["exit_layer"]
        assert row["total_layers"] == 4 and row["copies"] == row["repetitions"] + 1
        assert row["sentences"] == 24 and row["finite"]
        assert 0 <= row["padding_waste"] < 1 and row["tokens"] <= row["padded_tokens"]
    by = {(r["exit_layer"], r["repetitions"], r["max_tokens"]): r for r in rows}
    # same inputs, so the tokens are the same at both depths; FLOPs per token scale with L
    for r in (0, 1, 4):
        assert by[(2, r, 256)]["tokens"] == by[(4, r, 256)]["tokens"]
        assert by[(2, r, 256)]["flops"] * 2 == by[(4, r, 256)]["flops"]
    # more copies, more tokens: k = r + 1 copies of every sentence behind one BOS
    assert by[(4, 0, 256)]["tokens"] < by[(4, 1, 256)]["tokens"] < by[(4, 4, 256)]["tokens"]
    builds = {b["exit_layer"]: b for b in result["builds"]}
    assert builds[2]["layers_built"] == 2 and builds[4]["layers_built"] == 4
    assert builds[2]["parameters"] < builds[4]["parameters"]


def test_speedups_ceiling_environment_and_training_steps(result) -> None:
    ups = result["speedups"]
    assert {(s["repetitions"], s["max_tokens"]) for s in ups} == {
        (r, m) for r in (0, 1, 4) for m in (256, 1024)}
    for s in ups:
        assert s["exit_layer"] == 2 and s["against"] == 4 and s["speedup"] > 0
        assert s["ideal_speedup"] == 2.0
    assert result["matmul_ceiling"]["tflops"] > 0
    env = result["env"]
    assert env["device_type"] == "cpu" and env["device"]
    # the installed version, whichever build: the CUDA wheel from PyPI names itself 2.13.0
    # in its metadata and 2.13.0+cu130 in torch.__version__, the CPU wheel 2.13.0+cpu
    assert Version(env["torch"]).public == Version(torch.__version__).public
    assert env["transformers"]
    cfg = result["config"]
    assert cfg["name"] == "tiny" and cfg["shape"]["num_hidden_layers"] == 4
    assert cfg["labels"][0] == "O" and len(cfg["labels"]) == 9
    lora = result["lora"]
    assert lora["exit_layer"] == 4 and lora["repetitions"] == 1 and lora["sentences"] == 4
    assert lora["trainable_parameters"] > 0 and lora["finite"] and lora["seconds"] > 0
    assert lora["lora"] == {"r": 16, "alpha": 16, "dropout": 0.1,
                            "targets": ["k_proj", "o_proj", "q_proj", "v_proj"]}
    if importlib.util.find_spec("bitsandbytes") is None:
        assert result["qlora"] == {"skipped": "bitsandbytes is not installed"}
    else:
        assert result["qlora"].get("method") in ("memory", "saved"), result["qlora"]


def test_peak_table_and_synthetic_inputs(bench) -> None:
    assert bench.table_peak("NVIDIA H200") == 989.0
    assert bench.table_peak("NVIDIA H100 80GB HBM3") == 989.0
    assert bench.table_peak("NVIDIA H100 PCIe") == 756.0
    assert bench.table_peak("NVIDIA A100-SXM4-80GB") == 312.0
    assert bench.table_peak("NVIDIA L4") == 121.0
    assert bench.table_peak("NVIDIA L40S") is None
    stats = bench.sentence_stats(bench.synthetic_sentences(1024, 32000))
    assert 12.4 <= stats["words_mean"] <= 14.4
    assert 1.35 <= stats["subtokens_per_word"] <= 1.45
    assert bench.synthetic_sentences(8, 1000) == bench.synthetic_sentences(8, 1000)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_a_gpu_is_one_line_not_a_traceback(bench, capsys) -> None:
    assert bench.main(["--device", "cuda", "--config", "tiny"]) == 2
    err = capsys.readouterr().err
    assert "CUDA is not available" in err and "Traceback" not in err
    assert bench.main(["--device", "cpu", "--config", "mistral-7b-shape"]) == 2
    assert "--config tiny" in capsys.readouterr().err
