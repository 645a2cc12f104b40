"""A labeler saved with document context keeps it through ONNX export (issue 24): the export
records it, its check compares document rows too, and ``--runtime onnx`` labels a text as one
document, with the labels of the PyTorch labeler's own document encode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from support import cli, serving_app

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
pytest.importorskip("onnxscript")

from seqrep.export.onnx import export_onnx  # noqa: E402
from seqrep.export.runtime import OnnxLabeler  # noqa: E402
from seqrep.model.labeler import SequenceLabeler  # noqa: E402
from seqrep.predict.tagger import predict_text, split_text  # noqa: E402

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
TEXT = ("Obama visited Paris. The European Union said on Thursday it disagreed with German "
        "advice. Peter Blackburn met Angela in Berlin.")
TOL = 1e-4


@pytest.fixture(scope="module")
def folders(tiny, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("onnxdoc")
    torch.manual_seed(0)
    lab = SequenceLabeler.from_model(tiny("llama"), labels=LABELS, repetitions=1,
                                     exit_layer=3, finetune="frozen", decoding="greedy",
                                     context="document", context_tokens=24)
    torch.manual_seed(4)  # a steeper random head: context shows in the tags
    with torch.no_grad():
        for p in lab.head.parameters():
            p.normal_(0, 2.0)
    saved = lab.eval().save_pretrained(root / "lab")
    export_onnx(saved, root / "onnx")
    return saved, root / "onnx"


def _sentences(text: str) -> list[list[str]]:
    return [[text[s:e] for s, e in w] for _, w in split_text(text)]


def _tags(logits: list[torch.Tensor]) -> list[list[str]]:
    return [_as_written([LABELS[i] for i in x.argmax(-1).tolist()]) for x in logits]


def test_export_keeps_document_context_and_checks_its_rows(folders) -> None:
    saved, out = folders
    meta = json.loads((out / "seqrep-onnx.json").read_text())
    assert meta["labeler"]["context"] == "document"
    assert meta["labeler"]["context_tokens"] == 24
    check = meta["check"]["documents"]  # the check ran on rows of several sentences too
    assert check["max_abs_logit_diff"] < TOL and check["sentences"] >= 5
    onnx_lab = OnnxLabeler.from_pretrained(out)
    assert onnx_lab.config.context == "document"
    torch_lab = SequenceLabeler.from_pretrained(saved)
    sents = _sentences(TEXT) * 3  # 9 sentences, well past one window of 24 subtokens
    docs = ["d"] * len(sents)
    assert len(torch_lab.encoder.items(sents, docs=docs)) > 2
    want = torch_lab.word_logits(sents, docs=docs)
    for batch_size in (1, 4):
        got = onnx_lab.word_logits(sents, batch_size, docs=docs)
        for x, y in zip(want, got):
            torch.testing.assert_close(y, x, rtol=0, atol=TOL)
    for x, y in zip(torch_lab.word_states(sents, docs=docs),
                    onnx_lab.word_states(sents, 4, docs=docs)):
        torch.testing.assert_close(y, x, rtol=0, atol=TOL)


def test_predict_runtime_onnx_labels_a_text_as_one_document(folders, capsys) -> None:
    saved, out = folders
    torch_lab = SequenceLabeler.from_pretrained(saved)
    sents = _sentences(TEXT)
    want = _tags(torch_lab.word_logits(sents, docs=["d"] * len(sents)))
    assert want != _tags(torch_lab.word_logits(sents, docs=None))  # the context shows in the tags
    code, stdout, err = cli(capsys, "predict", str(out), TEXT, "--runtime", "onnx")
    assert code == 0, err
    record = json.loads(stdout)
    assert [s["tags"] for s in record["sentences"]] == want
    assert record == predict_text(OnnxLabeler.from_pretrained(out), [TEXT])[0]


def test_serve_runtime_onnx_labels_each_text_as_one_document(folders) -> None:
    """`seqrep serve EXPORT --runtime onnx`: each text of a request is one document, with the
    tags of the PyTorch labeler's own document encode of that text alone."""
    pytest.importorskip("fastapi", reason="the serve extra is not installed")
    import asyncio

    from seqrep.serve.app import create_app

    saved, out = folders
    torch_lab = SequenceLabeler.from_pretrained(saved)
    texts = [TEXT, "Maria left Tokyo for Moscow. Boris praised Madrid."]
    want = []
    for text in texts:
        sents = _sentences(text)
        want.append(_tags(torch_lab.word_logits(sents, docs=["d"] * len(sents))))
    assert want[0] != _tags(torch_lab.word_logits(_sentences(texts[0]), docs=None))

    async def main():  # noqa: ANN202
        async with serving_app(create_app(out, runtime="onnx")) as c:
            return await c.post("/v1/label", json={"texts": texts})

    answer = asyncio.run(main())
    assert answer.status_code == 200, answer.text
    got = [[s["tags"] for s in r["sentences"]] for r in answer.json()["results"]]
    assert got == want


def test_the_focus_layout_survives_export(tiny, tmp_path: Path) -> None:
    """document-focus rows (the last copy holds only the read words) come out of the export
    as they go in: the export records the context and its logits are the PyTorch labeler's."""
    torch.manual_seed(0)
    lab = SequenceLabeler.from_model(tiny("llama"), labels=LABELS, repetitions=1,
                                     exit_layer=2, finetune="frozen",
                                     context="document-focus", context_tokens=24).eval()
    export_onnx(lab.save_pretrained(tmp_path / "lab"), tmp_path / "onnx")
    meta = json.loads((tmp_path / "onnx" / "seqrep-onnx.json").read_text())
    assert meta["labeler"]["context"] == "document-focus"
    assert meta["check"]["documents"]["max_abs_logit_diff"] < TOL
    sents = _sentences(TEXT) * 3
    docs = ["d"] * len(sents)
    repeated = SequenceLabeler.from_model(tiny("llama"), labels=LABELS, repetitions=1,
                                          exit_layer=2, finetune="frozen",
                                          context="document", context_tokens=24)
    # the same windows, each read from its middle: focus rows are shorter
    focus_rows = [len(it.segment) for it in lab.encoder.items(sents, docs=docs)]
    repeated_rows = [len(it.segment) for it in repeated.encoder.items(sents, docs=docs)]
    assert len(focus_rows) == len(repeated_rows) > 2 and sum(focus_rows) < sum(repeated_rows)
    onnx_lab = OnnxLabeler.from_pretrained(tmp_path / "onnx")
    for x, y in zip(lab.word_logits(sents, docs=docs), onnx_lab.word_logits(sents, 4, docs=docs)):
        torch.testing.assert_close(y, x, rtol=0, atol=TOL)


def _as_written(tags):  # noqa: ANN001, ANN202
    from seqrep.data.tags import spans_to_tags, strict_spans
    return spans_to_tags(strict_spans(tags), len(tags), "IOB2")


def _written_probs(x, labels):  # noqa: ANN001, ANN202
    import torch
    soft = torch.softmax(x, -1)
    tags = _as_written([labels[i] for i in x.argmax(-1).tolist()])
    return [float(soft[i, labels.index(t)]) for i, t in enumerate(tags)]
