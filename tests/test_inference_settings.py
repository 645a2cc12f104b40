"""One validated InferenceConfig per command (issue 38): predict, evaluate and serve build one
from their options and hand that object to loading (``seqrep.export.load(path, settings)``);
each inference name (runtime, decoding, device, precision, batch size ...) is checked once on
predict's path, not once per layer it passes through."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from support import cli

import seqrep.export
from seqrep.config import InferenceConfig
from seqrep.core.table import Table
from seqrep.model.labeler import SequenceLabeler


@pytest.fixture(scope="module")
def folder(tiny, tmp_path_factory: pytest.TempPathFactory) -> Path:
    lab = SequenceLabeler.from_model(tiny("llama"), labels=["O", "B-PER", "I-PER"],
                                     finetune="frozen")
    return lab.save_pretrained(tmp_path_factory.mktemp("settings") / "lab")


class Loaded(Exception):
    """Raised by the stand-in loader: what it was given is in ``args``."""


def _capture(path: object, settings: object) -> None:
    raise Loaded(path, settings)


@pytest.mark.parametrize("args", [
    ["predict", "{run}", "Obama left."],
    ["predict", "{run}", "--input", "{run}/config.json"],
    ["evaluate", "{run}", "--dataset", "{data}"],
])
def test_each_command_loads_with_one_validated_config(args: list[str], folder: Path,
                                                      tmp_path: Path, capsys,
                                                      monkeypatch) -> None:
    data = tmp_path / "d.conll"
    data.write_text("Obama B-PER\nleft O\n\n", encoding="utf-8")
    monkeypatch.setattr(seqrep.export, "load", _capture, raising=False)
    flags = ["--decoding", "greedy", "--batch-size", "3", "--device", "cpu",
             "--precision", "fp32", "--runtime", "torch", "--context-overlap", "0.25"]
    argv = [a.format(run=folder, data=data) for a in args] + flags
    with pytest.raises(Loaded) as caught:
        from seqrep.cli.app import main

        main(argv)
    path, settings = caught.value.args
    assert Path(path) == folder
    assert settings == InferenceConfig(runtime="torch", device="cpu", precision="fp32",
                                       batch_size=3, decoding="greedy", context_overlap=0.25)


def test_serve_builds_one_config_for_its_model(folder: Path, capsys, monkeypatch) -> None:
    import seqrep.serve.app

    seen = []

    def create_app(run_dir, *, settings, inference):  # noqa: ANN001, ANN202
        seen.append(inference)
        raise Loaded

    monkeypatch.setattr(seqrep.serve.app, "create_app", create_app)
    with pytest.raises(Loaded):
        cli(capsys, "serve", str(folder), "--port", "0", "--device", "cpu", "--precision",
            "fp32", "--runtime", "torch", "--threads", "1", "--context-overlap", "0")
    assert seen == [InferenceConfig(runtime="torch", device="cpu", precision="fp32",
                                    threads=1, context_overlap=0.0)]


def test_predict_checks_each_name_once(folder: Path, capsys, monkeypatch) -> None:
    """The runtime and decoding names (Table.check) and every other field
    (InferenceConfig.check) are checked once between the command line and the records."""
    tables: Counter = Counter()
    fields: Counter = Counter()
    table_check, field_check = Table.check, InferenceConfig.check

    def count_table(self, value, flag=None, auto=False):  # noqa: ANN001, ANN202
        tables[(self.field, value)] += 1
        return table_check(self, value, flag, auto)

    def count_field(name, value, flag=None):  # noqa: ANN001, ANN202
        fields[name] += 1
        return field_check(name, value, flag)

    monkeypatch.setattr(Table, "check", count_table)
    monkeypatch.setattr(InferenceConfig, "check", staticmethod(count_field))
    code, out, err = cli(capsys, "predict", str(folder), "Obama left.", "--decoding",
                         "greedy", "--runtime", "torch")
    assert code == 0, err
    assert out.count("\n") == 1
    assert tables[("runtime", "torch")] == 1, tables
    assert tables[("decoding", "greedy")] == 1, tables
    assert set(fields.values()) == {1}, fields
