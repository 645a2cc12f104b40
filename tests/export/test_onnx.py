"""ONNX export and ONNX Runtime inference against PyTorch on tiny random decoders.

Each family is exported once (a module-scoped cache: an export takes 10-20 s on two cores,
almost all of it torch.export's decompositions) and every test then runs in seconds. The graph
holds no repetition setting (r is the Encoder's: it only changes the rows fed in), so one
export serves r = 0 and r = 1 with the config changed on both sides: llama is saved at r = 0
and exported through the CLI command, qwen3 and gemma3 at r = 1 through ``export_onnx``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from support import EXPORT_SENTENCES

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
pytest.importorskip("onnxscript")

from seqrep.encode.pipeline import Encoder  # noqa: E402
from seqrep.errors import ConfigError, ModelError  # noqa: E402
from seqrep.export.check import long_sentence  # noqa: E402
from seqrep.export.files import META_FILE, sha256  # noqa: E402
from seqrep.export.onnx import DEFAULT_OPSET, export_onnx  # noqa: E402
from seqrep.export.runtime import OnnxLabeler  # noqa: E402
from seqrep.model.labeler import SequenceLabeler  # noqa: E402
from seqrep.predict.tagger import predict_tags, predict_text  # noqa: E402

TOL = 1e-4  # largest absolute logit difference accepted (measured: about 1e-6)
LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
FAMILIES = ["llama", "qwen3", "gemma3"]
SENTENCES = EXPORT_SENTENCES


def _labeler(tiny, family: str, r: int = 1, unmask: str = "none") -> SequenceLabeler:
    torch.manual_seed(0)  # the same head for every variant of a family
    # max_subtokens=16: long sentences are cut into windows; exit at layer 3 of 4
    return SequenceLabeler.from_model(tiny(family), LABELS, repetitions=r, exit_layer=3,
                                      unmask=unmask, max_subtokens=16, decoding="greedy").eval()


def _cli_app():
    import typer

    from seqrep.cli.export import export

    app = typer.Typer()
    app.callback()(lambda: None)  # a group, so the command is called by its name
    app.command("export")(export)
    return app


@pytest.fixture(scope="module")
def exported(tiny, tmp_path_factory):
    """``exported(family, unmask)`` -> (saved labeler folder, export folder), made once.
    llama is saved at r = 0 and exported through the CLI command (its output is kept in
    ``exported.cli``); the others at r = 1 through :func:`export_onnx`."""
    from typer.testing import CliRunner

    cache: dict = {}

    def get(family: str, unmask: str = "none") -> tuple[Path, Path]:
        if (family, unmask) not in cache:
            root = tmp_path_factory.mktemp(f"onnx-{family}-{unmask}")
            r = 0 if family == "llama" else 1
            saved = _labeler(tiny, family, r, unmask).save_pretrained(root / "labeler")
            if family == "llama":
                result = CliRunner().invoke(_cli_app(), ["export", str(saved), "--onnx",
                                                         str(root / "onnx")])
                assert result.exit_code == 0, result.output
                get.cli = result.output
            else:
                export_onnx(saved, root / "onnx")
            cache[family, unmask] = saved, root / "onnx"
        return cache[family, unmask]

    return get


def _pair(saved: Path, out: Path, r: int) -> tuple[SequenceLabeler, OnnxLabeler]:
    """The PyTorch labeler and its export, both with ``repetitions=r``."""
    torch_lab = SequenceLabeler.from_pretrained(saved)
    onnx_lab = OnnxLabeler.from_pretrained(out, intra_op_num_threads=2)
    if torch_lab.config.repetitions != r:
        for lab in (torch_lab, onnx_lab):
            lab.config = lab.config.replace(repetitions=r)
            lab.encoder = Encoder(lab.tokenizer, lab.config, lab.backbone_info.pad_id)
    return torch_lab, onnx_lab


def _max_diff(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    assert [x.shape for x in a] == [y.shape for y in b]
    return max(float((x - y).abs().max()) for x, y in zip(a, b) if x.numel())


@pytest.mark.parametrize("r", [0, 1])
@pytest.mark.parametrize("family", FAMILIES)
def test_logits_and_tags_match_pytorch(exported, family: str, r: int) -> None:
    torch_lab, onnx_lab = _pair(*exported(family), r)
    long = long_sentence(torch_lab)
    assert len(torch_lab.encode(long)) >= 2  # windowed
    sentences = SENTENCES + [long]
    ref = torch_lab.word_logits(sentences, 32, docs=None)
    for batch_size, max_tokens in ((1, None), (3, 64), (32, 512)):  # dynamic batch and length
        got = onnx_lab.word_logits(sentences, batch_size, max_tokens, docs=None)
        assert _max_diff(ref, got) < TOL
        assert all(torch.equal(x.argmax(-1), y.argmax(-1)) for x, y in zip(ref, got))
    assert [t for t, _ in predict_tags(onnx_lab, sentences, docs=None)] == \
        [t for t, _ in predict_tags(torch_lab, sentences, docs=None)]
    text = ["Obama visited Paris. Peter Blackburn left for 東京 !", "", "x"]
    a, b = predict_text(onnx_lab, text), predict_text(torch_lab, text)
    assert [s["tags"] for r_ in a for s in r_["sentences"]] == \
        [s["tags"] for r_ in b for s in r_["sentences"]]
    assert [[(x["start"], x["end"], x["label"]) for x in r_["spans"]] for r_ in a] == \
        [[(x["start"], x["end"], x["label"]) for x in r_["spans"]] for r_ in b]


def test_word_states_and_shapes(exported) -> None:
    torch_lab, onnx_lab = _pair(*exported("llama"), 1)
    assert _max_diff(torch_lab.word_states(SENTENCES, docs=None),
                     onnx_lab.word_states(SENTENCES, 2, docs=None)) < TOL
    # every batch shape of the graph directly: 1 row of 1 word up to 5 rows, padded lengths
    for size in (1, 2, 5):
        for batch, _ in onnx_lab.batches(SENTENCES, size):
            with torch.no_grad():
                ref = torch_lab(batch)
            got = onnx_lab(batch)
            assert got.shape == ref.shape == (batch.num_words, len(LABELS))
            assert float((got - ref).abs().max()) < TOL
    assert onnx_lab.word_logits([], docs=None) == []
    mixed = [[], ["x"]]
    assert [x.shape for x in onnx_lab.word_logits(mixed, docs=None)] == \
        [x.shape for x in torch_lab.word_logits(mixed, docs=None)]


def test_unmasked_layers_stay_bidirectional(exported) -> None:
    """unmask=full is exported through the Unmasker's pre-hooks: the ONNX logits equal the
    bidirectional PyTorch ones, and differ clearly from the causal model's (same weights),
    so a graph that had silently stayed causal would fail. Gemma3's sliding-window layers
    keep their symmetric window (the long sentence is longer than the window of 12)."""
    torch_lab, onnx_lab = _pair(*exported("gemma3", "full"), 1)
    _, causal = _pair(*exported("gemma3", "none"), 1)
    sentences = SENTENCES + [long_sentence(torch_lab)]
    ref = torch_lab.word_logits(sentences, docs=None)
    got = onnx_lab.word_logits(sentences, 3, 64, docs=None)
    assert _max_diff(ref, got) < TOL
    assert _max_diff(causal.word_logits(sentences, docs=None), got) > 1e-2
    assert onnx_lab.layers_unmasked == [0, 1, 2]
    meta = onnx_lab.meta
    assert meta["check"]["max_abs_logit_diff"] < TOL and meta["check"]["same_argmax"]


def test_metadata_and_folder(exported, tmp_path: Path) -> None:
    saved, out = exported("qwen3")
    meta = json.loads((out / META_FILE).read_text(encoding="utf-8"))
    assert meta["opset"] == DEFAULT_OPSET and meta["exporter"].startswith("torch.onnx.export")
    assert meta["sha256"] == sha256(out / meta["model_file"])
    assert meta["labeler"] == SequenceLabeler.from_pretrained(saved).config.to_dict()
    assert meta["backbone"]["num_layers"] == 3 and meta["backbone"]["total_layers"] == 4
    assert (out / "tokenizer").is_dir()
    from seqrep.model.io import read_config

    assert read_config(out).labels == LABELS  # the server reads the config before loading
    onnx_lab = OnnxLabeler.from_pretrained(out)
    assert onnx_lab.place("cpu", "fp32") is onnx_lab and onnx_lab.eval() is onnx_lab
    with pytest.raises(ConfigError, match="CPU only"):
        onnx_lab.place("cuda")
    with pytest.raises(ConfigError, match="fp32"):
        OnnxLabeler.from_pretrained(out, precision="bf16")
    broken = shutil.copytree(out, tmp_path / "broken")
    with open(broken / meta["model_file"], "ab") as f:
        f.write(b"\0")
    with pytest.raises(ModelError, match="sha256"):
        OnnxLabeler.from_pretrained(broken)
    with pytest.raises(ModelError, match="not a seqrep ONNX export"):
        OnnxLabeler.from_pretrained(saved)


def test_load_labeler_picks_the_runtime(exported) -> None:
    from seqrep.export import load_labeler

    saved, out = exported("qwen3")
    assert isinstance(load_labeler(out), OnnxLabeler)
    assert isinstance(load_labeler(out, "onnx", threads=1), OnnxLabeler)
    assert isinstance(load_labeler(saved, device="cpu"), SequenceLabeler)
    assert (load_labeler(out).runtime, load_labeler(saved, device="cpu").runtime) == (
        "onnx", "torch")
    with pytest.raises(ConfigError, match="ONNX export"):
        load_labeler(out, "torch")
    with pytest.raises(ModelError, match="not a seqrep ONNX export"):
        load_labeler(saved, "onnx")
    with pytest.raises(ConfigError, match="--runtime"):
        load_labeler(out, "tensorrt")


def test_cli_exports_an_r0_folder(exported, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    saved, out = exported("llama")
    assert "largest logit difference" in exported.cli
    onnx_lab = OnnxLabeler.from_pretrained(out)
    assert onnx_lab.config.repetitions == 0 and onnx_lab.meta["check"]["same_argmax"]
    bad = CliRunner().invoke(_cli_app(), ["export", str(saved), "--onnx", str(tmp_path / "o"),
                                          "--opset", "9"])
    assert bad.exit_code != 0 and isinstance(bad.exception, ConfigError)
    assert not (tmp_path / "o").exists()


def test_int8_variant(exported, tmp_path: Path) -> None:
    """The int8 recipe of seqrep.export.quantize: written beside the fp32 graph, recorded in
    the metadata, loaded by variant; close to fp32 (the first and last layers stay fp32)."""
    from seqrep.export import load_labeler
    from seqrep.export.quantize import INT8_FILE, quantize_int8

    _, out = exported("qwen3")
    folder = shutil.copytree(out, tmp_path / "onnx")
    with pytest.raises(ModelError, match="no int8 graph"):
        OnnxLabeler.from_pretrained(folder, variant="int8")
    target = quantize_int8(folder)
    assert target.name == INT8_FILE
    meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
    int8 = meta["variants"]["int8"]
    assert int8["sha256"] == sha256(target) and int8["quantized_nodes"] > 0
    assert int8["fp32_nodes"] > 0
    fp32 = OnnxLabeler.from_pretrained(folder)
    q = load_labeler(folder, "onnx-int8")
    assert q.model_file == INT8_FILE and fp32.model_file == meta["model_file"]
    assert (q.runtime, fp32.runtime) == ("onnx-int8", "onnx")
    a, b = fp32.word_logits(SENTENCES, docs=None), q.word_logits(SENTENCES, 2, docs=None)
    diff = _max_diff(a, b)
    assert 0 < diff < 0.05


def test_predict_runs_on_onnx(exported, tmp_path: Path) -> None:
    """`seqrep predict --runtime onnx` on an export folder: the same sentences, tags and spans
    as the torch labeler it came from."""
    from typer.testing import CliRunner

    from seqrep.cli.app import app

    saved, out = exported("llama")
    runner = CliRunner()
    text = "Obama visited Paris. Maria left Tokyo 🙂 today!"
    a = runner.invoke(app, ["predict", str(saved), text, "--runtime", "torch"])
    b = runner.invoke(app, ["predict", str(out), text, "--runtime", "onnx"])
    assert a.exit_code == 0 and b.exit_code == 0, b.output
    ra, rb = json.loads(a.stdout), json.loads(b.stdout)
    assert ra["sentences"] == rb["sentences"]
    assert [(s["start"], s["end"], s["label"]) for s in ra["spans"]] == [
        (s["start"], s["end"], s["label"]) for s in rb["spans"]]
