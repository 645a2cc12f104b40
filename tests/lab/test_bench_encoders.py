"""``seqrep bench --encoder A,B``: every encoder of the list is measured in the same run as
the decoder's cuts (issue 25 compares MiniLM-L6 and all-mpnet-base-v2 students with their
teacher on one machine in one run)."""

from __future__ import annotations

from pathlib import Path

from support import write_corpus


class _Done:
    def __init__(self, value: object) -> None:
        self.value = value

    def result(self) -> object:
        return self.value


class _Inline:
    """A ProcessPoolExecutor stand-in that records each job and answers a made-up row."""

    jobs: list[tuple] = []

    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def __enter__(self) -> _Inline:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def submit(self, fn, *args):  # noqa: ANN001, ANN002, ANN202
        if fn.__name__ == "matmul_ceiling":
            return _Done({"gflops": 100.0, "shapes": "made up"})
        model, r, layer, mode, precision = args[0], args[1], args[2], args[7], args[10]
        _Inline.jobs.append((model, mode))
        return _Done({"model": model, "mode": mode, "precision": precision, "repetitions": r,
                      "exit_layer": layer, "layers_computed": layer or 6, "seconds": 1.0,
                      "sentences_per_second": 6.0, "latency_ms": 1.0, "padding_waste": 0.0,
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
