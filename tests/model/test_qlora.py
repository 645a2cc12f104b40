"""QLoRA's whole life cycle on the CPU (bitsandbytes' CPU backend), on tiny random Llama, Qwen3
and Gemma3 models: training, the run folder, reloading on the 4-bit and the full-precision
base, resume, and the commands that read a run; plus ``--lora-targets``.

Skipped only where bitsandbytes does not import; no GPU is needed.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
import warnings
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from support import cli, write_corpus
from typer.testing import CliRunner

from seqrep.cli.app import app
from seqrep.config import LabelerConfig, TrainConfig
from seqrep.errors import ModelError
from seqrep.model import io, tuning
from seqrep.model.labeler import SequenceLabeler
from seqrep.train import train
from seqrep.train.loop import Trainer

needs_bnb = pytest.mark.skipif(importlib.util.find_spec("bitsandbytes") is None,
                               reason="bitsandbytes is not installed")
runner = CliRunner()
FAMILIES = ["llama", "qwen3", "gemma3"]
LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
SENTS = [["Obama", "visited", "the", "city", "of", "Paris", "."], ["Maria", "left"],
         ["Peter", "Boris", "praised", "the", "city", "of", "Tokyo", "."]]
# the 4-bit base reloads the same NF4 codes training used: the same computation, so the
# logits agree to float rounding
TOL_4BIT = 1e-5
# the full-precision base is the unquantized original of those codes: NF4's rounding of every
# base weight moves the logits; bounded relative to their size (the norm of the difference
# over the norm of the logits; measured on these random models, which NF4 fits worse than
# trained ones: llama 0.15, qwen3 0.09, gemma3 0.23)
TOL_FULL = 0.5


def _cross_entropy(logits: list[torch.Tensor], tags: list[list[str]]) -> float:
    """Mean cross-entropy over words, by hand: -log softmax at the gold tag."""
    total, n = 0.0, 0
    for x, t in zip(logits, tags):
        logp = x.double().log_softmax(-1)
        total -= sum(logp[i, LABELS.index(tag)].item() for i, tag in enumerate(t))
        n += len(t)
    return total / n


def _read_conll(path: Path) -> tuple[list[list[str]], list[list[str]]]:
    words, tags = [], []
    for block in path.read_text().strip().split("\n\n"):
        pairs = [line.split() for line in block.splitlines()]
        words.append([p[0] for p in pairs])
        tags.append([p[1] for p in pairs])
    return words, tags


class Run:
    """One QLoRA training run and what the test saw inside it."""

    def __init__(self, out: Path, overfit: Path) -> None:
        self.out, self.overfit = out, overfit
        self.words, self.tags = _read_conll(overfit)
        self.start: list[torch.Tensor] = []  # logits on the overfit set before any step
        self.at_eval: dict[int, dict] = {}  # by step: logits and dtypes at each evaluation
        self.metrics: dict = {}


def _qlora_run(model: str, root: Path, **train_kw) -> Run:
    overfit = write_corpus(root / "overfit.txt", 12, seed=5)
    test = write_corpus(root / "test.txt", 6, seed=1)
    run = Run(root / "run", overfit)
    lab = LabelerConfig(model=model, repetitions=1, finetune="qlora", exit_layer=3)
    kw = dict(dataset=str(overfit), eval_split=str(overfit), test_split=str(test), epochs=3,
              batch_size=4, lr=1e-2, head_lr=3e-2, seed=7)
    kw.update(train_kw)
    run_train, evaluate = Trainer.run, Trainer.evaluate_and_select

    def spy_run(self: Trainer):  # noqa: ANN202
        self.labeler.eval()
        run.start = self.labeler.word_logits(run.words, docs=None)
        self.labeler.train()
        return run_train(self)

    def spy_eval(self: Trainer):  # noqa: ANN202
        lab = self.labeler
        batch = lab.encoder.collate(self.items[:4]).to(lab.device)
        with torch.enable_grad():
            logits = lab(batch)  # a training forward pass, as the loop runs it
            loss = torch.nn.functional.cross_entropy(logits, batch.labels)
        record = evaluate(self)
        run.at_eval[self.state.step] = {
            "logits": lab.word_logits(SENTS, docs=None), "train_logits": logits.dtype,
            "loss": loss.dtype, "head": {p.dtype for p in lab.head.parameters()},
            "trainable": {p.dtype for p in lab.parameters() if p.requires_grad},
            "four_bit": sum(type(m).__name__ == "Linear4bit" for m in lab.backbone.modules())}
        return record

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Trainer, "run", spy_run)
        mp.setattr(Trainer, "evaluate_and_select", spy_eval)
        run.metrics = train(lab, TrainConfig(**kw), run.out, quiet=True)
    return run


@pytest.fixture(scope="module")
def runs(tiny, tmp_path_factory: pytest.TempPathFactory):
    """``runs(family)``: a QLoRA run of that family, trained once per module."""
    done: dict[str, Run] = {}

    def get(family: str) -> Run:
        if family not in done:
            done[family] = _qlora_run(tiny(family), tmp_path_factory.mktemp(f"q-{family}"))
        return done[family]
    return get


def _best(run: Run) -> dict:
    """What the test saw at the evaluation whose model was saved as best."""
    return run.at_eval[run.metrics["validation"]["step"]]


@needs_bnb
@pytest.mark.parametrize("family", FAMILIES)
def test_qlora_training_lowers_the_loss_on_cpu(runs, family: str) -> None:
    run = runs(family)
    assert run.metrics["status"] == "finished"
    best = _best(run)
    assert best["four_bit"] > 0  # the base really is 4-bit (bitsandbytes' Linear4bit)
    saved = SequenceLabeler.from_pretrained(run.out)
    before = _cross_entropy(run.start, run.tags)
    after = _cross_entropy(saved.word_logits(run.words, docs=None), run.tags)
    assert after < 0.7 * before, (before, after)


@needs_bnb
@pytest.mark.parametrize("family", FAMILIES)
def test_head_loss_and_decoders_stay_fp32_under_a_4bit_base(runs, family: str) -> None:
    for seen in runs(family).at_eval.values():
        assert seen["head"] == {torch.float32}
        assert seen["trainable"] == {torch.float32}  # LoRA weights and head
        assert seen["train_logits"] == torch.float32 and seen["loss"] == torch.float32
        assert all(x.dtype == torch.float32 and torch.isfinite(x).all()
                   for x in seen["logits"])  # what the decoders read
    head = load_file(str(runs(family).out / "best" / "head.safetensors"))
    assert {t.dtype for t in head.values()} == {torch.float32}


@needs_bnb
@pytest.mark.parametrize("family", FAMILIES)
def test_run_folder_holds_adapter_and_head_but_no_base(runs, family: str, tiny) -> None:
    best = runs(family).out / "best"
    assert {p.name for p in best.iterdir()} == {"adapter", "config.json", "head.safetensors",
                                                "tokenizer", ".seqrep-files.json"}
    weights = sorted(p.relative_to(best).as_posix() for p in best.rglob("*.safetensors"))
    assert weights == ["adapter/adapter_model.safetensors", "head.safetensors"]
    adapter = load_file(str(best / "adapter" / "adapter_model.safetensors"))
    assert adapter and all("lora_" in k for k in adapter)
    config = json.loads((best / "adapter" / "adapter_config.json").read_text())
    assert sorted(config["target_modules"]) == ["k_proj", "o_proj", "q_proj", "v_proj"]
    assert json.loads((best / "config.json").read_text())["labeler"]["model"] == tiny(family)


@needs_bnb
@pytest.mark.parametrize("family", FAMILIES)
def test_reload_on_the_4bit_base_predicts_as_at_training(runs, family: str) -> None:
    run = runs(family)
    labeler = SequenceLabeler.from_pretrained(run.out)
    assert sum(type(m).__name__ == "Linear4bit" for m in labeler.backbone.modules()) == \
        _best(run)["four_bit"]
    for got, want in zip(labeler.word_logits(SENTS, docs=None), _best(run)["logits"]):
        assert torch.allclose(got, want, atol=TOL_4BIT, rtol=0), (got - want).abs().max()


@needs_bnb
@pytest.mark.parametrize("family", FAMILIES)
def test_reload_without_bitsandbytes_uses_the_full_base_and_says_so_once(
        runs, family: str, monkeypatch) -> None:
    run = runs(family)
    monkeypatch.setattr(io, "qlora_problem", lambda device=None: "no bitsandbytes (test)")
    monkeypatch.setattr(io, "_told", set())
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        labeler = SequenceLabeler.from_pretrained(run.out)
        SequenceLabeler.from_pretrained(run.out)  # the same run again: said once
    notes = [w for w in seen if issubclass(w.category, io.FullPrecisionBase)]
    assert len(notes) == 1, [str(w.message) for w in seen]
    assert "full-precision base" in str(notes[0].message)
    assert "no bitsandbytes (test)" in str(notes[0].message)
    assert not any(type(m).__name__ == "Linear4bit" for m in labeler.backbone.modules())
    assert labeler.config.finetune == "qlora"  # still a QLoRA run, on another base
    got, want = torch.cat(labeler.word_logits(SENTS, docs=None)), torch.cat(_best(run)["logits"])
    assert ((got - want).norm() / want.norm()).item() < TOL_FULL


@pytest.fixture(scope="module")
def wide_llama(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A tiny Llama 64 wide: bitsandbytes can repack its layers (as any real model's)."""
    import transformers as tf
    from support import TINY, _byte_bpe_tokenizer

    path = tmp_path_factory.mktemp("wide") / "llama"
    tok = _byte_bpe_tokenizer()
    torch.manual_seed(0)
    config = tf.LlamaConfig(vocab_size=len(tok), num_hidden_layers=3,
                            **{**TINY, "hidden_size": 64, "intermediate_size": 128})
    tf.AutoModel.from_config(config).save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


@needs_bnb
@pytest.mark.parametrize("width", [32, 64])
def test_an_evaluation_pass_does_not_cut_the_gradients(tiny, wide_llama, width: int) -> None:
    """bitsandbytes repacks a Linear4bit in place at its first eval-mode pass on CPUs with
    AVX512-BF16 (failing on layers narrower than 64, and leaving wider ones without a
    gradient path): training after an evaluation must get the gradients it got before."""
    model = tiny("llama") if width == 32 else wide_llama
    lab = SequenceLabeler.from_model(model, labels=LABELS, repetitions=1,
                                     finetune="qlora", exit_layer=3, dropout=0.0,
                                     lora_dropout=0.0)
    with torch.no_grad():  # LoRA's B starts at zero: give every adapter a gradient path
        for name, p in lab.backbone.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.1)
    words, tags = [["Obama", "visited", "Paris", "."]], [["B-PER", "O", "B-LOC", "O"]]

    def grads() -> dict[str, torch.Tensor]:
        lab.train()
        lab.zero_grad()
        batch = lab.encoder.collate(lab.encoder.items(words, tags)).to(lab.device)
        torch.nn.functional.cross_entropy(lab(batch), batch.labels).backward()
        return {n: p.grad.clone() for n, p in lab.named_parameters() if p.grad is not None}

    before = grads()
    lab.eval()
    lab.word_logits(words, docs=None)  # inference: eval mode, no gradients
    after = grads()
    assert before.keys() == after.keys() and len(before) > 2
    lora_a = [n for n in before if "lora_A" in n and "layers.0." in n]
    assert lora_a and all(before[n].abs().sum() > 0 for n in lora_a)
    for n in before:
        assert torch.allclose(before[n], after[n], atol=1e-6, rtol=1e-4), n


@needs_bnb
def test_resume_after_interruption_ends_where_an_uninterrupted_run_ends(
        tiny, tmp_path: Path) -> None:
    model = tiny("llama")
    overfit = write_corpus(tmp_path / "train.txt", 12, seed=5)
    lab = LabelerConfig(model=model, repetitions=1, finetune="qlora", exit_layer=3)
    cfg = TrainConfig(dataset=str(overfit), eval_split=str(overfit), test_split="", epochs=2,
                      batch_size=4, grad_accum=1, lr=1e-2, head_lr=3e-2, seed=7)
    full = train(lab, cfg, tmp_path / "a", quiet=True)
    first = train(lab, cfg.replace(max_steps=4), tmp_path / "b", quiet=True)
    assert first["status"] == "interrupted"
    resumed = train(lab, cfg, tmp_path / "b", resume=True, quiet=True)
    assert resumed["validation"]["f1"] == full["validation"]["f1"]
    for name in ("head.safetensors", "adapter/adapter_model.safetensors"):
        a = load_file(str(tmp_path / "a" / "best" / name))
        b = load_file(str(tmp_path / "b" / "best" / name))
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), name


@needs_bnb
def test_evaluate_predict_and_serve_accept_a_qlora_run(runs, tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    run = runs("llama")
    test = run.out.parent / "test.txt"
    result = runner.invoke(app, ["evaluate", str(run.out), "--dataset", str(test), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["f1"] == pytest.approx(run.metrics["test"]["f1"])
    inp = tmp_path / "in.txt"
    inp.write_text("Obama visited the city of Paris .\nMaria left\n", encoding="utf-8")
    result = runner.invoke(app, ["predict", str(run.out), "--input", str(inp)])
    assert result.exit_code == 0, result.output
    assert len(result.stdout.strip().splitlines()) == 2

    from fastapi.testclient import TestClient

    from seqrep.serve.app import create_app

    with TestClient(create_app(run.out)) as client:
        for _ in range(600):
            if client.get("/health").status_code == 200:
                break
            import time

            time.sleep(0.1)
        r = client.post("/v1/label", json={"words": [SENTS[0]]})
        assert r.status_code == 200, r.text
        assert [s["words"] for s in r.json()["results"][0]["sentences"]] == [SENTS[0]]


@needs_bnb
@pytest.mark.slow  # the ONNX exporter takes about a minute
def test_export_merges_a_qlora_adapter_into_the_full_base(runs, tmp_path: Path) -> None:
    run = runs("llama")
    pytest.importorskip("onnxruntime")
    out = tmp_path / "onnx"
    result = runner.invoke(app, ["export", str(run.out), "--onnx", str(out)])
    assert result.exit_code == 0, result.output
    from seqrep.export.runtime import OnnxLabeler

    onnx = OnnxLabeler.from_pretrained(out)
    # merged into the full-precision base: as the full-precision reload predicts
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = io.load_labeler(SequenceLabeler, run.out, full_precision=True)
    for got, want in zip(onnx.word_logits(SENTS, docs=None), full.word_logits(SENTS, docs=None)):
        assert torch.allclose(torch.as_tensor(got), want, atol=1e-3)


@needs_bnb
def test_a_run_whose_base_is_missing_names_the_base(runs, tmp_path: Path, capsys) -> None:
    copy = tmp_path / "run"
    shutil.copytree(runs("llama").out / "best", copy)
    config = json.loads((copy / "config.json").read_text())
    config["labeler"]["model"] = str(tmp_path / "gone-base")
    del config["base"]  # a folder from before seqrep recorded its base: loaded by name
    (copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelError, match=r"needs its base model '.*gone-base'"):
        SequenceLabeler.from_pretrained(copy)
    code, out, err = cli(capsys, "evaluate", str(copy), "--dataset",
                          str(runs("llama").out.parent / "test.txt"))
    assert code == 2 and not out
    assert len(err.strip().splitlines()) == 1 and "needs its base model" in err, err
    assert str(tmp_path / "gone-base") in err


def _no_bitsandbytes(monkeypatch) -> None:
    """As on a machine without bitsandbytes: importing it fails."""
    for name in [m for m in sys.modules if m.split(".")[0] == "bitsandbytes"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "bitsandbytes", None)
    tuning.qlora_problem.cache_clear()
    monkeypatch.setattr(tuning, "qlora_problem", tuning.qlora_problem.__wrapped__)


def test_qlora_without_bitsandbytes_is_one_line_and_writes_nothing(
        tiny, tmp_path: Path, monkeypatch, capsys) -> None:
    _no_bitsandbytes(monkeypatch)
    data = write_corpus(tmp_path / "train.txt", 12)
    out = tmp_path / "run"
    for extra in (["--finetune", "qlora"], ["--recipe", "paper"]):
        code, stdout, err = cli(capsys, "train", "--model", tiny("llama"), "--dataset",
                                 str(data), *extra, "--epochs", "1", "-o", str(out), "--quiet")
        assert code == 2 and not stdout, err
        assert len(err.strip().splitlines()) == 1, err
        assert "bitsandbytes cannot be imported" in err
        assert "pip install bitsandbytes==0.50.2" in err
        assert not out.exists()


@needs_bnb
def test_qlora_support_is_what_bitsandbytes_can_do_on_the_device() -> None:
    assert tuning.qlora_problem("cpu") is None  # bitsandbytes 0.50.2 quantizes on the CPU
    problem = tuning.qlora_problem("meta")  # a device no backend serves
    assert problem and "cannot quantize to 4-bit on meta" in problem


def test_lora_targets_option(tiny, tmp_path: Path, capsys) -> None:
    data = write_corpus(tmp_path / "train.txt", 12)
    base = ["train", "--model", tiny("qwen3"), "--dataset", str(data), "--finetune", "lora",
            "--epochs", "1", "--exit-layer", "2", "--test-split", "", "--quiet"]
    result = runner.invoke(app, [*base, "--lora-targets", "q_proj,v_proj", "--lora-targets",
                                 "gate_proj", "-o", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    config = json.loads((tmp_path / "a" / "best" / "adapter" / "adapter_config.json")
                        .read_text())
    assert sorted(config["target_modules"]) == ["gate_proj", "q_proj", "v_proj"]
    adapted = {k.split(".lora_")[0].rsplit(".", 1)[-1] for k in load_file(
        str(tmp_path / "a" / "best" / "adapter" / "adapter_model.safetensors"))}
    assert adapted == {"gate_proj", "q_proj", "v_proj"}

    code, out, err = cli(capsys, *base, "--lora-targets", "q_proj,nope", "-o",
                          str(tmp_path / "b"))
    assert code == 2 and not out
    assert len(err.strip().splitlines()) == 1, err
    assert "--lora-targets q_proj,nope" in err and "no linear layer named nope" in err
    assert not (tmp_path / "b").exists()


def test_missing_projections_point_to_an_option_that_exists() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(4, 4))
    with pytest.raises(ModelError) as err:
        tuning.lora_targets(model)
    flags = set(re.findall(r"--[a-z][a-z-]+", str(err.value)))
    assert flags == {"--lora-targets"}
    result = runner.invoke(app, ["train", "--help"], terminal_width=200)
    assert "--lora-targets" in result.output


def test_command_docs_name_only_commands_that_exist() -> None:
    import seqrep.cli as cli

    commands = {c.name for c in app.registered_commands} | \
        {g.name for g in app.registered_groups}
    for path in Path(cli.__file__).parent.glob("*.py"):
        parts = path.read_text(encoding="utf-8").split('"""')
        named = set(re.findall(r"``seqrep (\w+)", parts[1] if len(parts) > 1 else ""))
        assert named <= commands, (path.name, named - commands)
