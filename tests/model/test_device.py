"""Devices and precision: one path, bad choices are one line, bf16 autocast on the CPU stays
close to fp32 end to end, and decoders take logits from any device (issue 12)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from support import write_corpus

from seqrep.data.decode import decode
from seqrep.errors import ConfigError
from seqrep.model.device import Placement, resolve_device, resolve_precision
from seqrep.model.labeler import SequenceLabeler

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def test_bad_choices_are_config_errors() -> None:
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="CUDA is not available"):
            resolve_device("cuda")
    with pytest.raises(ConfigError, match="expected auto"):
        resolve_device("tpu")
    with pytest.raises(ConfigError, match="'fp16' is not supported on the CPU"):
        resolve_precision("fp16", torch.device("cpu"))
    with pytest.raises(ConfigError, match="expected one of"):
        resolve_precision("fp8", torch.device("cpu"))
    assert resolve_precision("auto", torch.device("cpu")) == "fp32"  # conftest: no native bf16


def test_auto_is_bf16_for_inference_on_a_cpu_with_native_bf16(monkeypatch) -> None:
    from seqrep.model import device

    cpu = torch.device("cpu")
    monkeypatch.setenv("SEQREP_CPU_BF16", "1")
    device.cpu_has_bf16.cache_clear()
    try:
        assert device.cpu_has_bf16()
        assert resolve_precision("auto", cpu) == "bf16"
        assert resolve_precision("auto", cpu, training=True) == "fp32"
        assert resolve_precision("fp32", cpu) == "fp32"
        assert Placement.resolve("cpu", "auto").precision == "bf16"
        assert Placement.resolve("cpu", "auto", training=True).precision == "fp32"
        monkeypatch.setenv("SEQREP_CPU_BF16", "0")
        device.cpu_has_bf16.cache_clear()
        assert resolve_precision("auto", cpu) == "fp32"
    finally:
        device.cpu_has_bf16.cache_clear()


def test_bf16_autocast_stays_close_to_fp32(tiny) -> None:
    """The same weights under bf16 autocast: logits within 0.05 of fp32 (tiny random model,
    logits of order 1) and at least 95 % of the word argmaxes unchanged; the head and the
    outputs stay fp32 and on the CPU."""
    sents = [["Obama", "visited", "Paris", "."], ["Peter", "Blackburn", "left", "Berlin"]] * 4
    lab = SequenceLabeler.from_model(tiny("llama"), labels=LABELS, finetune="frozen").eval()
    fp32 = lab.word_logits(sents, docs=None)
    lab.place("cpu", "bf16")
    bf16 = lab.word_logits(sents, docs=None)
    assert all(x.dtype == torch.float32 and x.device.type == "cpu" for x in bf16)
    assert lab.head.linear.weight.dtype == torch.float32
    diff = max(float((a - b).abs().max()) for a, b in zip(fp32, bf16))
    assert 0 < diff < 0.05, diff  # > 0: autocast really ran in bf16
    same = sum(int((a.argmax(-1) == b.argmax(-1)).sum()) for a, b in zip(fp32, bf16))
    assert same >= 0.95 * sum(len(s) for s in sents)


def test_bf16_inference_casts_each_linear_weight_once(tiny, monkeypatch) -> None:
    """Autocast casts every Linear's fp32 weight to bf16 at every call: a quarter of the CPU
    recipe's labeling time (torch's profiler: aten::copy_ 24%, beside aten::mm's 36%).
    Inference keeps one bf16 copy instead. Its logits equal plain autocast's exactly (the
    same rounding of the same weights: torch's own autocast, with the copies switched off, is
    the reference), the copies are made once for many batches, and made again when a weight
    changes in place (an optimizer's step between two validations)."""
    from seqrep.model import device

    sents = [["Obama", "visited", "Paris", "."], ["Peter", "Blackburn", "left", "Berlin"]] * 4
    lab = SequenceLabeler.from_model(tiny("llama"), labels=LABELS, finetune="frozen").eval()
    lab.place("cpu", "bf16")
    made: list[str] = []
    real = device.WeightCasts._cast

    def counted(self, key, tensor, dtype):
        made.append(key)
        return real(self, key, tensor, dtype)

    monkeypatch.setattr(device.WeightCasts, "_cast", counted)
    with torch.no_grad():
        cached = lab.word_logits(sents, docs=None)
        again = lab.word_logits(sents, docs=None)
    linears = [m for m in lab.backbone.modules() if type(m) is torch.nn.Linear]
    assert linears and len(made) == len(linears)  # once each (no biases in Llama), not per batch
    with monkeypatch.context() as m:  # torch's autocast alone
        m.setattr(device.WeightCasts, "tensors", lambda self, module, dtype: {})
        with torch.no_grad():
            plain = lab.word_logits(sents, docs=None)
    assert all(torch.equal(a, b) for a, b in zip(cached, plain))
    assert all(torch.equal(a, b) for a, b in zip(again, plain))
    with torch.no_grad():  # a step changes a weight in place: the copy follows it
        linears[0].weight.mul_(1.5)
        moved = lab.word_logits(sents, docs=None)
    assert made[len(linears):] == [made[0]]
    with monkeypatch.context() as m:
        m.setattr(device.WeightCasts, "tensors", lambda self, module, dtype: {})
        with torch.no_grad():
            plain = lab.word_logits(sents, docs=None)
    assert all(torch.equal(a, b) for a, b in zip(moved, plain))


def test_bf16_training_keeps_gradients_on_the_fp32_weights(tiny) -> None:
    """The cast copies are for inference only: a forward pass with gradients on (training
    under bf16 autocast) reaches the fp32 Linear weights, which an optimizer updates."""
    sents = [["Obama", "visited", "Paris", "."], ["Peter", "Blackburn", "left", "Berlin"]]
    lab = SequenceLabeler.from_model(tiny("llama"), labels=LABELS, finetune="full")
    lab.place("cpu", "bf16").train()
    batch, _ = next(iter(lab.batches(sents, 8, None, None, None)))
    lab(batch).sum().backward()
    linears = [m for m in lab.backbone.modules() if type(m) is torch.nn.Linear]
    assert linears and all(m.weight.grad is not None and m.weight.grad.abs().sum() > 0
                           for m in linears)


def test_bf16_trains_evaluates_and_predicts(tiny, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from seqrep.cli.app import app

    runner = CliRunner()
    data = write_corpus(tmp_path / "train.txt", 30)
    out = tmp_path / "run"
    result = runner.invoke(app, ["train", "--model", tiny("llama"), "--dataset", str(data),
                                 "--epochs", "1", "--batch-size", "8", "--precision", "bf16",
                                 "--device", "cpu", "--output", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "run.json").read_text())["train"]["precision"] == "bf16"
    for args in (["evaluate", str(out), "--dataset", str(data), "--json"],
                 ["predict", str(out), "Obama visited Paris."]):
        result = runner.invoke(app, [*args, "--precision", "bf16", "--device", "cpu"])
        assert result.exit_code == 0, result.output


class _OnAnotherDevice(torch.Tensor):
    """A CPU tensor that says it lives on a GPU, to check that the decoder moves logits to
    its own device instead of mixing them with CPU transition tables."""

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return torch.device("cuda", 0)

    def cpu(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201
        return torch.Tensor(self.as_subclass(torch.Tensor))


def test_decoders_take_logits_from_any_device() -> None:
    logits = torch.tensor([[0.1, 3.0, 0.0, 0.0, 0.0], [0.0, 0.0, 2.0, 0.0, 0.0],
                           [3.0, 0.0, 0.0, 0.0, 0.5]])
    remote = logits.as_subclass(_OnAnotherDevice)
    assert remote.device.type == "cuda"
    for method in ("greedy", "constrained"):
        assert decode(remote, LABELS, method) == decode(logits, LABELS, method)


def test_placement_autocast_is_a_no_op_in_fp32() -> None:
    with Placement().autocast():
        assert not torch.is_autocast_enabled("cpu")
    with Placement(torch.device("cpu"), "bf16").autocast():
        assert torch.is_autocast_enabled("cpu")


def test_end_processes_destroys_the_group_and_the_cli_calls_it(monkeypatch) -> None:
    """A distributed command leaves its process group before exit (no gloo thread at exit)."""
    import torch.distributed as dist

    from seqrep.cli import app as cli
    from seqrep.model.device import end_processes

    end_processes()  # nothing initialised: nothing to do
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    assert dist.is_initialized()
    end_processes()
    assert not dist.is_initialized()
    called = []
    monkeypatch.setattr("seqrep.model.device.end_processes", lambda: called.append(1))
    cli.main(["models"])
    assert called == [1]


def test_ran_on_line_says_runtime_device_and_precision(monkeypatch) -> None:
    """The one stderr line every evaluating or predicting command prints (issue 27): runtime,
    device and precision, and whether a CPU's bf16 is native or emulated."""
    from types import SimpleNamespace

    from seqrep.model import device

    def lab(runtime: str, dev: str, precision: str) -> SimpleNamespace:
        return SimpleNamespace(runtime=runtime,
                               placement=Placement(torch.device(dev), precision))

    monkeypatch.setenv("SEQREP_CPU_BF16", "1")
    device.cpu_has_bf16.cache_clear()
    try:
        assert device.ran_on_line(lab("torch", "cpu", "bf16")) == \
            "running on cpu, PyTorch, bf16 autocast (native)"
        monkeypatch.setenv("SEQREP_CPU_BF16", "0")
        device.cpu_has_bf16.cache_clear()
        assert device.ran_on_line(lab("torch", "cpu", "bf16")) == \
            "running on cpu, PyTorch, bf16 autocast (emulated: this CPU has no native bf16)"
    finally:
        device.cpu_has_bf16.cache_clear()
    assert device.ran_on_line(lab("torch", "cpu", "fp32")) == "running on cpu, PyTorch, fp32"
    assert device.ran_on_line(lab("torch", "cuda:0", "fp16")) == \
        "running on cuda:0, PyTorch, fp16 autocast"
    assert device.ran_on_line(lab("onnx", "cpu", "fp32")) == "running on cpu, ONNX Runtime, fp32"
    assert device.ran_on_line(lab("onnx-int8", "cpu", "fp32")) == \
        "running on cpu, ONNX Runtime, int8 graph"
    assert device.ran_on_line(object()) == "running on an unknown device"


XEON = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz
flags\t\t: fpu vme sse4_2 avx2 avx512f avx512_vnni avx512_bf16 amx_int8 amx_tile
processor\t: 1
model name\t: Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz
flags\t\t: fpu vme sse4_2 avx2 avx512f avx512_vnni avx512_bf16 amx_int8 amx_tile
"""
SKYLAKE = """processor\t: 0
model name\t: Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz
flags\t\t: fpu sse4_2 avx2 avx512f avx512bw
"""
EPYC = """processor\t: 0
model name\t: AMD EPYC 7B12
flags\t\t: fpu sse4_2 avx avx2 fma
"""


def test_cpu_features_reads_the_model_and_the_flags_that_change_speed(monkeypatch) -> None:
    """What every benchmark JSON records about its CPU, from cpuinfo texts written by hand;
    native bf16 is the hardware's, whatever SEQREP_CPU_BF16 (set to 0 by conftest) says."""
    from seqrep.model import device

    xeon = device.cpu_features(XEON)
    assert {k: xeon[k] for k in ("model", "flags", "native_bf16")} == {
        "model": "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz",
        "flags": ["avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_int8"],
        "native_bf16": True}
    epyc = device.cpu_features(EPYC)
    assert (epyc["model"], epyc["flags"], epyc["native_bf16"]) == ("AMD EPYC 7B12", ["avx2"],
                                                                   False)
    skylake = device.cpu_features(SKYLAKE)  # AVX-512 without its bf16 extension
    assert (skylake["flags"], skylake["native_bf16"]) == (["avx2", "avx512f"], False)
    assert device.cpu_features("")["flags"] == [] and device.cpu_features("")["model"] is None
    assert xeon["cpus"] >= 1
    monkeypatch.delenv("SEQREP_CPU_BF16")
    for text, native in ((XEON, True), (EPYC, False)):
        monkeypatch.setattr(device, "_cpuinfo", lambda text=text: text)
        device.cpu_has_bf16.cache_clear()
        try:
            assert device.cpu_has_bf16() is native
        finally:
            device.cpu_has_bf16.cache_clear()


def test_place_names_its_parameters_and_the_cli_its_options(tiny, monkeypatch) -> None:
    """From Python, a device the machine lacks is one SeqrepError naming the parameter
    (``device='cuda'``), not the command line's ``--device`` (issue 37, item 16); the error's
    ``option_message``, which the CLI prints, names the option."""
    from seqrep.errors import SeqrepError

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # a CPU-only machine
    lab = SequenceLabeler.from_model(tiny("llama"), labels=LABELS, finetune="frozen")
    with pytest.raises(SeqrepError) as err:
        lab.place("cuda", "bf16")
    message = str(err.value)
    assert message.startswith("device='cuda': CUDA is not available here") and \
        "--device" not in message and "device='cpu'" in message and "\n" not in message
    with pytest.raises(SeqrepError, match=r"^precision='fp16' is not supported on the CPU"):
        lab.place("cpu", "fp16")
    with pytest.raises(SeqrepError, match=r"^device='tpu'; expected auto"):
        lab.place("tpu")
    assert err.value.option_message == ("--device cuda: CUDA is not available here (no GPU, "
                                        "or a CPU build of torch); use --device cpu")
    with pytest.raises(SeqrepError) as err:
        lab.place("cpu", "fp8")
    assert str(err.value).startswith("precision='fp8'; expected one of")
    assert err.value.option_message.startswith("--precision 'fp8'; expected one of")
    assert lab.place("cpu", "fp32") is lab  # a failed place left it usable


def test_the_cli_names_the_option_where_python_names_the_parameter(tiny, tmp_path: Path,
                                                                   monkeypatch) -> None:
    """`seqrep predict RUN --device cuda` on a CPU-only machine: one line naming --device."""
    from inprocess import seqrep

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    run = SequenceLabeler.from_model(tiny("llama"), labels=LABELS, finetune="frozen"
                                     ).save_pretrained(tmp_path / "lab")
    ran = seqrep("predict", str(run), "Obama visited Paris.", "--device", "cuda")
    assert ran.returncode == 2 and ran.stderr.count("\n") == 1, ran.stderr
    assert ran.stderr.startswith("error: --device cuda: CUDA is not available here")
    assert "device='cuda'" not in ran.stderr
