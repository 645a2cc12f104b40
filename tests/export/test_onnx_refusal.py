"""An export whose graph does not compute what PyTorch does is refused, and nothing is
written: no folder, no temporary folder left beside it, a previous export untouched.

The graph is made wrong on purpose: the exporter is replaced by one that writes a placeholder
file and the ONNX Runtime labeler by one that returns PyTorch's logits plus a known offset,
so the test needs no real export (seconds, not minutes) and the expected verdict follows from
the offset and the documented tolerance (1e-3) alone."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
pytest.importorskip("onnxscript")

from seqrep.cli.app import main  # noqa: E402
from seqrep.errors import ModelError  # noqa: E402
from seqrep.export import onnx as onnx_export  # noqa: E402
from seqrep.export import runtime  # noqa: E402
from seqrep.model.labeler import SequenceLabeler  # noqa: E402

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


class Offset:
    """Stands in for the exported graph's runtime: PyTorch's logits plus ``delta`` on the
    first logit of every sentence's first word."""

    def __init__(self, labeler: SequenceLabeler, delta: float) -> None:
        self.labeler, self.delta = labeler, delta

    def word_logits(self, sentences, batch_size: int = 32, docs=None) -> list[torch.Tensor]:  # noqa: ANN001
        out = [x.clone() for x in self.labeler.word_logits(sentences, 32, docs=docs)]
        for x in out:
            if x.numel():
                x[0, 0] += self.delta
        return out


@pytest.fixture(scope="module")
def saved(tiny, tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    lab = SequenceLabeler.from_model(tiny("llama"), LABELS, repetitions=1, exit_layer=3,
                                     max_subtokens=16).eval()
    return lab.save_pretrained(tmp_path_factory.mktemp("refusal") / "labeler")


@pytest.fixture()
def wrong_graph(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    """``wrong_graph(delta)``: exports from now on write a placeholder graph whose runtime
    is PyTorch off by ``delta``."""
    def use(delta: float) -> None:
        exported = {}

        def fake_export(graph, args, path, **kw) -> None:  # noqa: ANN001
            exported["labeler"] = graph.lab  # the labeler the graph wraps
            Path(path).write_bytes(b"placeholder graph")

        def session(cls, path, tokenizer, config, meta):  # noqa: ANN001, ANN202
            return Offset(exported["labeler"], delta)

        monkeypatch.setattr(torch.onnx, "export", fake_export)
        monkeypatch.setattr(runtime.OnnxLabeler, "from_folder_parts", classmethod(session))

    return use


def _left_beside(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.parent.iterdir() if p.name.startswith(f".{folder.name}"))


@pytest.mark.parametrize("delta", [0.05, math.nan])  # NaN: a broken graph
def test_a_graph_off_by_more_than_the_tolerance_is_refused(saved: Path, tmp_path: Path,
                                                           wrong_graph, delta: float) -> None:  # noqa: ANN001
    wrong_graph(delta)
    out = tmp_path / "onnx"
    with pytest.raises(ModelError, match="does not compute what PyTorch does.*nothing was "
                                         "written"):
        onnx_export.export_onnx(saved, out)  # the default tolerance, 1e-3
    assert not out.exists() and _left_beside(out) == []


def test_a_graph_within_the_tolerance_is_written(saved: Path, tmp_path: Path,
                                                 wrong_graph) -> None:  # noqa: ANN001
    wrong_graph(1e-5)  # under 1e-3
    out = onnx_export.export_onnx(saved, tmp_path / "onnx")
    assert (out / "seqrep-onnx.json").is_file()
    assert (out / "model.onnx").read_bytes() == b"placeholder graph"


def test_refusal_through_the_cli_keeps_the_previous_export(saved: Path, tmp_path: Path,
                                                           wrong_graph, capsys) -> None:  # noqa: ANN001
    out = tmp_path / "onnx"
    wrong_graph(0.0)
    onnx_export.export_onnx(saved, out)  # a good export first
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    wrong_graph(0.05)
    with pytest.raises(SystemExit) as exit_:
        main(["export", str(saved), "--onnx", str(out), "--overwrite"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the ONNX graph does not compute what PyTorch does")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert _left_beside(out) == []
