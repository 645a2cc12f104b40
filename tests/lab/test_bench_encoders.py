"""``seqrep bench --encoder A,B``: every encoder of the list is measured in the same run as
the decoder's cuts (issue 25 compares MiniLM-L6 and all-mpnet-base-v2 students with their
teacher on one machine in one run)."""

from __future__ import annotations

from pathlib import Path

from support import StandInPool, write_corpus


class _Done:
    def __init__(self, value: object) -> None:
        self.value = value

    def result(self) -> object:
        return self.value


class _Inline(StandInPool):
    """A ProcessPoolExecutor stand-in that records each job and answers a made-up row."""

    jobs: list[tuple] = []

    def submit(self, fn, *args):  # noqa: ANN001, ANN002, ANN202
        if fn.__name__ == "matmul_ceiling":
            return _Done({"gflops": 100.0, "shapes": "made up"})
        model, r, layer, mode, precision = args[0], args[1], args[2], args[7], args[10]
        _Inline.jobs.append((model, mode))
        return _Done({"model": model, "mode": mode, "precision": precision, "repetitions": r,
                      "exit_layer": layer, "layers_computed": layer or 6, "seconds": 1.0,
                      "sentences_per_second": 6.0, "tokens_per_word": 2.0, "latency_ms": 1.0,
                      "padding_waste": 0.0,
                      "gflops_per_second": 50.0, "checksum": 1.0})


def test_a_comma_list_of_encoders_measures_each(tmp_path: Path, monkeypatch) -> None:
    from seqrep.lab import bench

    monkeypatch.setattr(bench, "ProcessPoolExecutor", _Inline)
    _Inline.jobs = []
    data = write_corpus(tmp_path / "test.txt", 6)
    cfg = bench.BenchConfig(model="decoder", repetitions=(1,), exit_layers=(3,),
                            dataset=str(data), split="train", sentences=6,
                            encoder="minilm-l6, mpnet-base", baseline=False)
    out = bench.run_bench(cfg, echo=lambda *_: None)
    assert _Inline.jobs == [("decoder", "cut"), ("minilm-l6", "encoder"),
                            ("mpnet-base", "encoder")]
    assert [r["model"] for r in out["rows"] if r["mode"] == "encoder"] == ["minilm-l6",
                                                                           "mpnet-base"]


def test_encoders_get_the_onnx_rows_each_on_its_own_export(tmp_path: Path,
                                                           monkeypatch) -> None:
    """``--precision fp32,onnx,onnx-int8 --encoder A,B``: each encoder is measured on ONNX
    Runtime too (sentence context, as the decoder's ONNX rows), from its own export, which
    its onnx and onnx-int8 rows share; no encoder runs on the decoder's export."""
    from seqrep.lab import bench

    exports: list[tuple] = []

    class Recording(_Inline):
        def submit(self, fn, *args):  # noqa: ANN001, ANN002, ANN202
            if fn.__name__ == "_export":
                model, r, layer, folder, variant = args[:5]
                exports.append((model, r, layer, Path(folder).name, variant))
                return _Done(None)
            if fn.__name__ == "_measure":
                assert (args[7] == "encoder") == (args[0] in ("enc-a", "enc-b"))
                if bench._onnx(args[10]):  # the row runs the folder its export wrote
                    assert Path(args[11]).name == exports[-1][3]
            return super().submit(fn, *args)

    monkeypatch.setattr(bench, "ProcessPoolExecutor", Recording)
    _Inline.jobs = []
    data = write_corpus(tmp_path / "test.txt", 6)
    cfg = bench.BenchConfig(model="decoder", repetitions=(1,), exit_layers=(3,),
                            dataset=str(data), split="train", sentences=6,
                            encoder="enc-a,enc-b", baseline=False,
                            precisions=("fp32", "onnx", "onnx-int8"),
                            context=("sentence", "document"))
    out = bench.run_bench(cfg, echo=lambda *_: None)
    encoder_rows = [(r["model"], r["precision"]) for r in out["rows"] if r["mode"] == "encoder"]
    # fp32 at both contexts, then the two ONNX runtimes at sentence context, per encoder
    assert encoder_rows == [(m, p) for m in ("enc-a", "enc-b")
                            for p in ("fp32", "fp32", "onnx", "onnx-int8")]
    folders: dict[str, set[str]] = {}
    for model, *_, folder, _variant in exports:
        folders.setdefault(model, set()).add(folder)
    assert [e[0] for e in exports] == ["decoder"] * 2 + ["enc-a"] * 2 + ["enc-b"] * 2
    assert [e[4] for e in exports] == [None, "int8"] * 3
    # one folder per model, shared by its onnx and onnx-int8 rows, each model its own
    assert all(len(f) == 1 for f in folders.values())
    assert len(set.union(*folders.values())) == 3
    assert [(e[1], e[2]) for e in exports if e[0] != "decoder"] == [(0, None)] * 4
