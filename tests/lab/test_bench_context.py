"""seqrep bench with document context (issue 24): the cut model and the encoders run at both
contexts in one run, document rows carry their context (so the frontier matches them to
document settings), and the ratio of their speeds is the inference cost of document context."""

from __future__ import annotations

import pickle
from concurrent.futures import Future
from pathlib import Path

import pytest
from support import WORDS, StandInPool

from seqrep.errors import ConfigError
from seqrep.lab.bench import (
    BenchConfig,
    bench_jobs,
    context_ratios,
    precision_speedups,
    speedups,
    unmask_ratios,
)
from seqrep.lab.bench_rows import _measure
from seqrep.lab.tables import bench_markdown


def _row(mode: str, context: str, seconds: float, tokens: int, layer: int | None = 3,
         precision: str = "fp32") -> dict:
    return {"model": "m", "mode": mode, "precision": precision, "repetitions": 1,
            "exit_layer": layer, "context": context, "layers_computed": layer or 6,
            "sentences": 100, "tokens": tokens, "seconds": seconds,
            "sentences_per_second": 100 / seconds, "checksum": 1.0}


def test_context_ratios_and_the_other_speedups_on_hand_made_rows() -> None:
    rows = [_row("cut", "sentence", 2.0, 1000), _row("cut", "document", 5.0, 1550),
            _row("cut", "sentence", 4.0, 1000, layer=6),
            _row("cut", "sentence", 1.0, 1000, precision="bf16")]
    (ratio,) = context_ratios(rows)
    # 20 against 50 sentences/s: 0.4; 1550 against 1000 tokens: 1.55
    assert ratio["speed_ratio"] == 0.4 and ratio["token_ratio"] == 1.55
    assert (ratio["repetitions"], ratio["exit_layer"], ratio["mode"]) == (1, 3, "cut")
    # the document row is no sentence row: the speed-ups are those of the sentence rows
    without = [r for r in rows if r["context"] == "sentence"]
    assert speedups(rows) == speedups(without)
    assert precision_speedups(rows) == precision_speedups(without)
    (s3, _) = speedups(rows)
    assert s3["time_share"] == 0.5  # 2 s against layer 6's 4 s, not the document row's 5 s
    md = bench_markdown({"rows": [dict(r, tokens_per_second=1, latency_ms=1,
                                       padding_waste=0, flops_per_sentence=1,
                                       peak_memory_mb=1) for r in rows],
                         "context_ratios": context_ratios(rows)})
    assert "| m | cut, document | fp32 | 1 | 3 |" in md
    assert "| m | cut | fp32 | 1 | 3 | 0.40 | 1.55 |" in md


def test_both_document_layouts_get_their_own_ratio_and_a_context_column() -> None:
    rows = [_row("cut", "sentence", 2.0, 1000), _row("cut", "document", 5.0, 2000),
            _row("cut", "document-focus", 4.0, 1600)]
    ratios = context_ratios(rows)
    # 20 against 50 and 25 against 50 sentences/s; 2000 and 1600 against 1000 tokens
    assert [(x["context"], x["speed_ratio"], x["token_ratio"]) for x in ratios] == \
        [("document", 0.4, 2.0), ("document-focus", 0.5, 1.6)]
    md = bench_markdown({"rows": [], "context_ratios": ratios})
    assert "| model | mode | precision | r | exit layer | context | context / sentence " \
           "sent/s | context / sentence tokens |" in md
    assert "| m | cut | fp32 | 1 | 3 | document-focus | 0.50 | 1.60 |" in md
    # a record from before the focus layout names no context: one column fewer, as before
    old = [{k: v for k, v in ratios[0].items() if k != "context"}]
    assert "| m | cut | fp32 | 1 | 3 | 0.40 | 2.00 |" in \
        bench_markdown({"rows": [], "context_ratios": old})


def test_a_document_row_reads_the_documents(tiny) -> None:
    from seqrep.model.labeler import SequenceLabeler

    model = tiny("llama", 4)
    words = WORDS * 3  # 9 sentences in 2 documents: 5 + 4
    docs = ["a"] * 5 + ["b"] * 4
    sent = _measure(model, 0, 3, words, 4, None, 2, "cut", None)
    doc = _measure(model, 0, 3, words, 4, None, 2, "cut", None, docs=docs)
    assert (sent["context"], doc["context"]) == ("sentence", "document")
    # the words labeled, counted by hand: (4 + 3 + 9) * 3; tokens a word is the cost of a layout
    assert sent["words"] == doc["words"] == 48
    assert doc["tokens_per_word"] == round(doc["tokens"] / 48, 3)
    focus = _measure(model, 0, 3, words, 4, None, 2, "cut", None, docs=docs,
                     context="document-focus")
    assert focus["context"] == "document-focus"
    assert focus["tokens"] == doc["tokens"]  # r = 0: the window itself in both layouts
    # an unmasked cut runs bidirectional layers: same tokens, other states
    full = _measure(model, 0, 3, words, 4, None, 2, "cut", None, unmask="full")
    assert (full["unmask"], sent["unmask"]) == ("full", "none")
    assert full["tokens"] == sent["tokens"] and full["checksum"] != sent["checksum"]
    # at r = 0 with no special tokens, a document row is its sentences' subtokens with the
    # separator before each sentence but the document's first: 9 - 2 = 7 separators more
    lab = SequenceLabeler.from_model(model, labels=["O"], context="document")
    sep = len(lab.encoder.context_separator)
    assert sep >= 1 and lab.encoder.spec.prefix == ()
    assert doc["tokens"] == sent["tokens"] + 7 * sep


def test_a_document_row_records_its_window_and_is_cut_by_it(tiny) -> None:
    model = tiny("llama", 4)
    words, docs = WORDS * 3, ["a"] * 5 + ["b"] * 4
    sent = _measure(model, 0, 3, words, 4, None, 2, "cut", None)
    wide = _measure(model, 0, 3, words, 4, None, 2, "cut", None, docs=docs)
    narrow = _measure(model, 0, 3, words, 4, None, 2, "cut", None, docs=docs,
                      context_tokens=8)
    assert "context_tokens" not in sent  # a sentence row has no window
    assert (wide["context_tokens"], narrow["context_tokens"]) == (256, 8)
    # 8-subtoken windows overlap by half and split the longest sentence: more tokens than one
    # 256-subtoken row per document
    assert narrow["tokens"] > wide["tokens"]


@pytest.mark.parametrize("tokens", [0, -4])
def test_a_window_of_no_subtokens_is_refused(tokens: int) -> None:
    with pytest.raises(ConfigError, match=f"--context-tokens {tokens}: expected a positive"):
        BenchConfig(context=("document",), context_tokens=(64, tokens))


def test_an_unknown_context_is_refused() -> None:
    with pytest.raises(ConfigError, match="--context 'page'"):
        BenchConfig(context=("page",))


def test_the_context_help_lists_the_contexts_table(monkeypatch) -> None:
    """``seqrep bench --context``'s help names every context of the table, as the other
    --context options do: a context added there shows up without editing the bench."""
    import importlib.util
    import sys

    import seqrep.lab.bench
    from seqrep.core.contexts import CONTEXTS, Context

    monkeypatch.setitem(CONTEXTS, "page", Context("page", "one page at a time"))
    spec = importlib.util.spec_from_file_location("bench_copy", seqrep.lab.bench.__file__)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_copy", module)
    spec.loader.exec_module(module)  # its fields' help is built when the class is defined
    help_text = module.BenchConfig.__dataclass_fields__["context"].metadata["help"]
    assert "sentence, document, document-focus, page" in help_text


class _InProcess(StandInPool):
    """ProcessPoolExecutor's stand-in: each job runs here, its arguments and result through
    pickle as to a child process, without a new interpreter importing torch per row."""

    def submit(self, fn, *args) -> Future:  # noqa: ANN001, ANN002
        done: Future = Future()
        done.set_result(pickle.loads(pickle.dumps(fn(*pickle.loads(pickle.dumps(args))))))
        return done


def test_run_bench_measures_both_contexts_in_one_run(tiny, tmp_path: Path, monkeypatch) -> None:
    from support import write_corpus

    from seqrep.lab import bench

    monkeypatch.setattr(bench, "ProcessPoolExecutor", _InProcess)

    data = write_corpus(tmp_path / "test.txt", 8)
    blocks = data.read_text(encoding="utf-8").strip().split("\n\n")
    data.write_text("\n\n".join(("-DOCSTART- O\n\n" if i % 4 == 0 else "") + b
                                for i, b in enumerate(blocks)) + "\n", encoding="utf-8")
    cfg = BenchConfig(model=tiny("llama", 4), repetitions=(1,), exit_layers=(3,),
                      dataset=str(data), split="train", sentences=8, batch_size=4, repeats=1,
                      latency_sentences=1, encoder=tiny("bert", 2), baseline=False,
                      threads=1, context=("sentence", "document"))
    out = bench.run_bench(cfg, echo=lambda *_: None)
    assert [(r["mode"], r["context"]) for r in out["rows"]] == [
        ("cut", "sentence"), ("cut", "document"), ("encoder", "sentence"),
        ("encoder", "document")]
    assert [(x["mode"], x["repetitions"]) for x in out["context_ratios"]] == [
        ("cut", 1), ("encoder", 0)]
    assert all(x["token_ratio"] > 0 for x in out["context_ratios"])
    assert all(r["sentences_per_second"] > 0 for r in out["rows"])
    # the CPU it ran on, as /proc/cpuinfo's first flags line says (read here on its own)
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    line = next((x for x in text.splitlines() if x.startswith("flags")), "flags :")
    have = set(line.split(":", 1)[1].split())
    assert out["cpu"]["flags"] == [f for f in ("avx2", "avx512f", "avx512_bf16", "avx512_vnni",
                                               "avx_vnni", "amx_bf16", "amx_int8") if f in have]
    assert out["cpu"]["native_bf16"] == bool(have & {"avx512_bf16", "amx_bf16"})


def test_document_contexts_are_timed_on_pytorch_rows_only() -> None:
    """An ONNX export reads sentences as its PyTorch labeler does, but bench exports sentence
    labelers: its ONNX rows run at sentence level only, every other row at each context."""
    cfg = BenchConfig(model="m", repetitions=(1,), exit_layers=(3,), encoder="e",
                      precisions=("fp32", "onnx"), baseline=True,
                      context=("sentence", "document-focus"))
    assert bench_jobs(cfg) == [
        ("m", 1, 3, "cut", "fp32", "sentence", "none", None),
        ("m", 1, 3, "cut", "fp32", "document-focus", "none", 256),
        ("m", 1, 3, "cut", "onnx", "sentence", "none", None),
        ("m", 1, 3, "full_hidden_states", "fp32", "sentence", "none", None),
        ("e", 0, None, "encoder", "fp32", "sentence", "none", None),
        ("e", 0, None, "encoder", "fp32", "document-focus", "none", 256),
        ("e", 0, None, "encoder", "onnx", "sentence", "none", None)]


def test_unmasked_cuts_are_timed_beside_the_causal_ones_on_pytorch() -> None:
    cfg = BenchConfig(model="m", repetitions=(0,), exit_layers=(3,), encoder="e",
                      precisions=("fp32", "bf16", "onnx"), baseline=False,
                      unmask=("none", "full"))
    assert bench_jobs(cfg) == [
        ("m", 0, 3, "cut", "fp32", "sentence", "none", None),
        ("m", 0, 3, "cut", "fp32", "sentence", "full", None),
        ("m", 0, 3, "cut", "bf16", "sentence", "none", None),
        ("m", 0, 3, "cut", "bf16", "sentence", "full", None),
        ("m", 0, 3, "cut", "onnx", "sentence", "none", None),
        ("e", 0, None, "encoder", "fp32", "sentence", "none", None),
        ("e", 0, None, "encoder", "onnx", "sentence", "none", None)]
    with pytest.raises(ConfigError, match="--unmask 'none,1,2': expected a comma list of "
                                          "none, full, middle"):
        BenchConfig(unmask=("none", "1", "2"))


def test_unmask_ratios_and_the_speedups_of_causal_rows_on_hand_made_rows() -> None:
    rows = [_row("cut", "sentence", 2.0, 1000), dict(_row("cut", "sentence", 2.5, 1000),
                                                     unmask="full"),
            _row("cut", "sentence", 4.0, 1000, layer=6), _row("cut", "document", 5.0, 1550)]
    # 40 against 50 sentences/s
    assert unmask_ratios(rows) == [{"model": "m", "precision": "fp32", "context": "sentence",
                                    "unmask": "full", "repetitions": 1, "exit_layer": 3,
                                    "speed_ratio": 0.8}]
    causal = [r for r in rows if "unmask" not in r]
    assert speedups(rows) == speedups(causal)
    assert context_ratios(rows) == context_ratios(causal)
    md = bench_markdown({"rows": [dict(r, tokens_per_second=1, latency_ms=1,
                                       padding_waste=0, flops_per_sentence=1,
                                       peak_memory_mb=1) for r in rows],
                         "unmask_ratios": unmask_ratios(rows)})
    assert "| m | cut, unmask full | fp32 | 1 | 3 |" in md
    assert "| m | fp32 | sentence | 1 | 3 | full | 0.80 |" in md


def test_each_window_asked_is_timed_on_the_document_rows_only() -> None:
    """``--context-tokens 128,256``: every document row at each window, in one run (the
    student's narrow window beside its teacher's wide one); sentence and ONNX rows once."""
    cfg = BenchConfig(model="m", repetitions=(0,), exit_layers=(6,), encoder="e",
                      precisions=("fp32", "onnx"), baseline=False,
                      context=("sentence", "document"), unmask=("none", "full"),
                      context_tokens=(128, 256))
    assert bench_jobs(cfg) == [
        ("m", 0, 6, "cut", "fp32", "sentence", "none", None),
        ("m", 0, 6, "cut", "fp32", "sentence", "full", None),
        ("m", 0, 6, "cut", "fp32", "document", "none", 128),
        ("m", 0, 6, "cut", "fp32", "document", "none", 256),
        ("m", 0, 6, "cut", "fp32", "document", "full", 128),
        ("m", 0, 6, "cut", "fp32", "document", "full", 256),
        ("m", 0, 6, "cut", "onnx", "sentence", "none", None),
        ("e", 0, None, "encoder", "fp32", "sentence", "none", None),
        ("e", 0, None, "encoder", "fp32", "document", "none", 128),
        ("e", 0, None, "encoder", "fp32", "document", "none", 256),
        ("e", 0, None, "encoder", "onnx", "sentence", "none", None)]


def test_ratios_and_tables_keep_the_windows_apart() -> None:
    def doc(seconds: float, tokens: int, window: int, unmask: str = "none") -> dict:
        return dict(_row("cut", "document", seconds, tokens), context_tokens=window,
                    unmask=unmask)

    rows = [_row("cut", "sentence", 2.0, 1000), doc(4.0, 1300, 128), doc(5.0, 1550, 256),
            doc(3.2, 1300, 128, "full"), doc(6.25, 1550, 256, "full")]
    # 25 and 20 against 50 sentences/s; 1300 and 1550 against 1000 tokens
    assert [(x["context_tokens"], x["speed_ratio"], x["token_ratio"])
            for x in context_ratios(rows)] == [(128, 0.5, 1.3), (256, 0.4, 1.55)]
    # each unmasked row against the causal row of its own window: 31.25 / 25, 16 / 20
    assert [(x["context_tokens"], x["speed_ratio"]) for x in unmask_ratios(rows)] == [
        (128, 1.25), (256, 0.8)]
    md = bench_markdown({"rows": [dict(r, tokens_per_second=1, latency_ms=1,
                                       padding_waste=0, flops_per_sentence=1,
                                       peak_memory_mb=1) for r in rows],
                         "context_ratios": context_ratios(rows),
                         "unmask_ratios": unmask_ratios(rows)})
    assert "| m | cut, document 128 | fp32 | 1 | 3 |" in md
    assert "| m | cut, document 256, unmask full | fp32 | 1 | 3 |" in md
    assert "| m | cut | fp32 | 1 | 3 | document 128 | 0.50 | 1.30 |" in md
    assert "| m | fp32 | document 256 | 1 | 3 | full | 0.80 |" in md


def test_run_bench_times_each_window_it_is_asked(tiny, tmp_path: Path, monkeypatch) -> None:
    """Each document row runs at its own window: the narrow row records 8 and, its windows
    overlapping by half, reads more tokens than the 256-subtoken row of the same run."""
    from support import write_corpus

    from seqrep.lab import bench

    monkeypatch.setattr(bench, "ProcessPoolExecutor", _InProcess)
    data = write_corpus(tmp_path / "test.txt", 8)
    blocks = data.read_text(encoding="utf-8").strip().split("\n\n")
    data.write_text("-DOCSTART- O\n\n" + "\n\n".join(blocks) + "\n", encoding="utf-8")
    cfg = BenchConfig(model=tiny("llama", 4), repetitions=(0,), exit_layers=(3,),
                      dataset=str(data), split="train", sentences=8, batch_size=4, repeats=1,
                      latency_sentences=1, encoder="", baseline=False, threads=1,
                      context=("sentence", "document"), context_tokens=(8, 256))
    rows = bench.run_bench(cfg, echo=lambda *_: None)["rows"]
    assert [(r["context"], r.get("context_tokens")) for r in rows] == [
        ("sentence", None), ("document", 8), ("document", 256)]
    assert rows[1]["tokens"] > rows[2]["tokens"]
