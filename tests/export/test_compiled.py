"""``--runtime compile`` against eager PyTorch on a tiny random model.

Every expected value is the eager pass of the same saved labeler (the independent route:
the compiled pass is the same module traced by dynamo and run by inductor's kernels). One
labeler is compiled for the module: compiling takes seconds even for a tiny model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from support import SENTENCES, cli, write_corpus

from seqrep.errors import ModelError
from seqrep.export.compiled import CompiledLabeler
from seqrep.model.io import load_labeler
from seqrep.model.labeler import SequenceLabeler

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
TOL = 1e-4  # fp32 compiled against fp32 eager (measured: under 1e-5)
# bf16 compiled against bf16 eager, logits (measured: up to 0.0101; the compiled pass keeps
# the states between layers in bf16, the eager one under autocast in fp32)
BF16_TOL = 0.03
LONG = ["Nadim", "Ladki", "reported", "from", "Al-Ain", ",", "for", "Reuters", "."] * 4


@pytest.fixture(scope="module")
def run(tiny, tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("compiled-run")
    torch.manual_seed(0)
    folder = SequenceLabeler.from_model(tiny("llama"), LABELS, repetitions=1, exit_layer=1,
                                        max_subtokens=16, decoding="greedy"
                                        ).save_pretrained(root / "labeler")
    return folder, write_corpus(root / "test.txt", 6)


# the masks the compiled pass's attention was given while dynamo traced it
ATTENTION_MASKS: list = []


@pytest.fixture(scope="module")
def compiled(run) -> CompiledLabeler:
    import seqrep.export.compiled as module

    causal = module._causal_attention

    def spy(layer, query, key, value, mask, **kwargs):  # noqa: ANN001, ANN003, ANN202
        ATTENTION_MASKS.append(mask)
        return causal(layer, query, key, value, mask, **kwargs)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(module, "_causal_attention", spy)
        return load_labeler(CompiledLabeler, run[0], False).place("cpu", "fp32").eval(
        ).compile()


def _eager(folder: Path, precision: str = "fp32") -> SequenceLabeler:
    return load_labeler(SequenceLabeler, folder, False).place("cpu", precision).eval()


def _worst(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    assert [x.shape for x in a] == [x.shape for x in b]
    return max(float((x - y).abs().max()) for x, y in zip(a, b))


def test_the_compiled_pass_labels_as_the_eager_one(run, compiled) -> None:
    """Logits at several batch sizes (new shapes: dynamic, no recompilation per shape), with
    a long sentence cut into windows; the pass is inductor's, not a silent eager fallback."""
    from torch._dynamo.utils import counters

    sentences = [*SENTENCES, LONG, ["x"]]
    ref = _eager(run[0]).word_logits(sentences, 32)
    frames = counters["stats"]["unique_graphs"]
    for batch_size in (1, 3, 32):
        assert _worst(compiled.word_logits(sentences, batch_size), ref) < TOL
    # shapes are symbolic: one graph for every batch, one more for batches of one row
    # (dynamo specializes a size of 1)
    assert counters["stats"]["unique_graphs"] - frames <= 1 + 1
    compiled_by = counters["inductor"]
    assert compiled_by["fxgraph_cache_bypass"] + compiled_by["fxgraph_cache_miss"] + \
        compiled_by["fxgraph_cache_hit"] >= 1  # inductor compiled (or reloaded) a graph
    if torch.backends.mkldnn.is_available():  # the Linear weights frozen: packed once
        assert compiled_by["mkldnn_linear_weight_pack_matcher_count"] >= 1
    # rows padded on the right: the attention is told it is causal, no mask is made
    assert ATTENTION_MASKS and all(mask is None for mask in ATTENTION_MASKS)


def test_the_pass_follows_the_weights(run, compiled) -> None:
    """An in-place edit and an optimizer step are seen at the next pass (the frozen graph
    is built again from the weights as they are then)."""
    folder = run[0]
    before = compiled.word_logits(SENTENCES)
    weight = compiled.backbone.layers[0].mlp.down_proj.weight
    state = {k: v.clone() for k, v in compiled.state_dict().items()}
    try:
        with torch.no_grad():
            weight.mul_(3.0)
        optimizer = torch.optim.SGD([weight], lr=10.0)
        weight.grad = torch.ones_like(weight)
        optimizer.step()
        twin = _eager(folder)
        twin.load_state_dict(compiled.state_dict())
        assert _worst(compiled.word_logits(SENTENCES), twin.word_logits(SENTENCES)) < TOL
        assert _worst(compiled.word_logits(SENTENCES), before) > 1e-3
    finally:
        compiled.load_state_dict(state)
    assert _worst(compiled.word_logits(SENTENCES), before) < TOL


def test_in_bf16_norms_are_read_live_and_a_changed_linear_weight_builds_the_pass_again(
        tiny, tmp_path) -> None:
    """bf16: the Linear layers' cast copies are frozen into the graph, the norms are its
    inputs. A norm edited in place is read at the next pass; a Linear weight edited in
    place is seen (the copies are made again, and the graph with them). Expected: an eager
    bf16 labeler edited the same way. Gemma 3, the recipe's family: its norms scale by
    ``1 + weight``, which a graph holding the weight as a constant would fold."""
    from torch._dynamo.utils import counters

    torch.manual_seed(0)
    gemma = SequenceLabeler.from_model(tiny("gemma3"), LABELS, repetitions=1, exit_layer=1,
                                       max_subtokens=16, decoding="greedy")
    # a window longer than the sentences' rows, so they reach the compiled pass (rows past
    # the tiny model's window of 12 run eagerly: the test below)
    gemma.backbone.config.sliding_window = 64
    folder = gemma.save_pretrained(tmp_path / "gemma")
    lab = load_labeler(CompiledLabeler, folder, False).place("cpu", "bf16").eval()
    twin = _eager(folder, "bf16")
    graphs = counters["stats"]["unique_graphs"]
    before = lab.word_logits(SENTENCES)
    assert counters["stats"]["unique_graphs"] > graphs  # compiled, not run eagerly
    assert _worst(before, twin.word_logits(SENTENCES)) < BF16_TOL
    edits = [lambda m: m.backbone.layers[0].post_attention_layernorm.weight.add_(-1.5),
             lambda m: m.backbone.layers[0].mlp.gate_proj.weight.mul_(4.0)]
    for edit in edits:
        generation = lab.inference_weights.generation
        with torch.no_grad():
            edit(lab)
            edit(twin)
        now = lab.word_logits(SENTENCES)
        assert _worst(now, twin.word_logits(SENTENCES)) < BF16_TOL
        assert _worst(now, before) > 5 * BF16_TOL
        before = now
    assert lab.inference_weights.generation > generation  # the Linear edit: copies made again


def test_rows_longer_than_a_sliding_window_run_eagerly_without_a_second_graph(
        tiny, tmp_path) -> None:
    """The tiny Gemma 3 slides its attention over 12 tokens. A batch of longer rows is
    labeled by the eager pass, so dynamo never guards on a length past the window and
    compiles no second graph in the middle of a labeling (the recipe's one 513-token batch
    did, at a cost of minutes); both kinds of batch label as the eager labeler does."""
    from torch._dynamo.utils import counters

    folder = SequenceLabeler.from_model(tiny("gemma3"), LABELS, repetitions=1, exit_layer=1,
                                        max_subtokens=16, decoding="greedy"
                                        ).save_pretrained(tmp_path / "gemma")
    lab = load_labeler(CompiledLabeler, folder, False).place("cpu", "fp32").eval()
    twin = _eager(folder)
    short, long = [["Paris"]], [["Peter", "Blackburn", "reports", "from", "Brussels"]]
    lengths = [[b.input_ids.shape[1] for b, _ in lab.batches(s, 1)] for s in (short, long)]
    assert max(lengths[0]) <= 12 < min(lengths[1])  # one batch within the window, one past
    graphs = counters["stats"]["unique_graphs"]
    # the long batch first, before any pass is built: eager, nothing compiled
    assert _worst(lab.word_logits(long), twin.word_logits(long)) < TOL
    assert counters["stats"]["unique_graphs"] == graphs
    assert _worst(lab.word_logits(short), twin.word_logits(short)) < TOL
    compiled = counters["stats"]["unique_graphs"]
    assert compiled > graphs  # the short batch: compiled
    assert _worst(lab.word_logits(long), twin.word_logits(long)) < TOL
    assert _worst(lab.word_logits(short), twin.word_logits(short)) < TOL
    assert counters["stats"]["unique_graphs"] == compiled  # no graph for the long batch


def test_rebuilds_never_fall_back_to_eager(run) -> None:
    """Each change of the weights compiles a new pass; past dynamo's recompile limit (8 by
    default) a shared function would silently run eagerly, so each build has its own."""
    from torch._dynamo.utils import counters

    lab = load_labeler(CompiledLabeler, run[0], False).place("cpu", "fp32").eval()
    limit = torch._dynamo.config.recompile_limit
    try:
        torch._dynamo.config.recompile_limit = 2
        for _ in range(2):  # the second build: past the limit of a shared function
            lab.refresh_inference_weights()
            graphs = counters["stats"]["unique_graphs"]
            lab.word_logits(SENTENCES[:1])
            assert counters["stats"]["unique_graphs"] > graphs
    finally:
        torch._dynamo.config.recompile_limit = limit


def test_a_pass_that_differs_from_eager_is_refused(run, monkeypatch) -> None:
    lab = load_labeler(CompiledLabeler, run[0], False).place("cpu", "fp32").eval()
    real = CompiledLabeler._run

    def off(self, fn, batch):  # noqa: ANN001, ANN202
        return real(self, fn, batch) + 0.5

    monkeypatch.setattr(CompiledLabeler, "_run", off)
    with pytest.raises(ModelError, match="differs from the eager pass by 0.5"):
        lab.compile()


def test_predict_and_evaluate_compiled_print_what_torch_prints(run, compiled, capsys) -> None:
    folder, data = run
    text = "Obama visited Paris on Monday.\nPeter Blackburn reports from Brussels."
    outs = {}
    for runtime in ("torch", "compile"):
        code, out, err = cli(capsys, "predict", str(folder), text, "--runtime", runtime,
                             "--precision", "fp32")
        assert code == 0, err
        outs[runtime] = [json.loads(line) for line in out.splitlines()]
    assert "running on cpu, torch.compile, fp32" in err
    for a, b in zip(outs["compile"], outs["torch"]):
        assert [s["tags"] for s in a["sentences"]] == [s["tags"] for s in b["sentences"]]
        assert [(s["start"], s["end"], s["label"]) for s in a["spans"]] == \
            [(s["start"], s["end"], s["label"]) for s in b["spans"]]
    scores = {}
    for runtime in ("torch", "compile"):
        code, out, err = cli(capsys, "evaluate", str(folder), "--dataset", str(data),
                             "--runtime", runtime, "--precision", "fp32", "--json")
        assert code == 0, err
        scores[runtime] = json.loads(out)["f1"]
    assert scores["compile"] == scores["torch"]


def test_an_unmasked_labeler_is_refused_in_one_line(tiny, tmp_path, capsys) -> None:
    folder = SequenceLabeler.from_model(tiny("llama"), LABELS, exit_layer=3,
                                        unmask="middle").save_pretrained(tmp_path / "lab")
    code, out, err = cli(capsys, "predict", str(folder), "Obama", "--runtime", "compile")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "unmasks layers" in err and "--runtime torch" in err


def test_two_labelers_of_one_family_each_label_with_their_own_weights(tiny, run,
                                                                       compiled) -> None:
    """A second labeler of the same architecture may reuse the compiled code (the weights
    are its inputs): its labels are its own eager pass's, not the first labeler's."""
    torch.manual_seed(1)
    other = SequenceLabeler.from_model(tiny("llama"), LABELS, repetitions=1, exit_layer=1,
                                       max_subtokens=16, decoding="greedy")
    for p in other.backbone.parameters():  # other weights, the same shapes
        torch.nn.init.normal_(p, std=0.2)
    folder = other.save_pretrained(run[0].parent / "other")
    second = load_labeler(CompiledLabeler, folder, False).place("cpu", "fp32").eval().compile()
    ref = _eager(folder).word_logits(SENTENCES)
    assert _worst(second.word_logits(SENTENCES), ref) < TOL
    assert _worst(compiled.word_logits(SENTENCES), ref) > 1e-2
