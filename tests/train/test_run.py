"""Training end to end on a tiny random model: what a run reports is what it saved, and a run
folder is never lost or half-written (issues 10 and 11)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from support import cli
from support import train_configs as configs

from seqrep.config import LabelerConfig
from seqrep.data.splits import load_data
from seqrep.errors import SeqrepError
from seqrep.model.labeler import SequenceLabeler
from seqrep.train import train
from seqrep.train.loop import Trainer


def log_of(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines()]


def test_trained_labeler_learns_the_toy_task(tiny, corpus, tmp_path: Path) -> None:
    """The toy corpus is separable (PER then a verb, LOC after 'of'): a trained labeler must
    be far above chance, not merely 'an F1 in [0, 1]'."""
    metrics = train(*configs(tiny("llama"), corpus, epochs=10, head_lr=3e-2), tmp_path / "run",
                    quiet=True)
    assert metrics["validation"]["f1"] > 0.8
    assert metrics["test"]["f1"] > 0.8
    assert metrics["train_sentences_per_second"] > 0


def test_end_of_training_is_always_evaluated(tiny, corpus, tmp_path: Path) -> None:
    """54 training sentences in batches of 8 = 7 steps per epoch, 3 epochs = 21 steps; with
    eval_every=5 the last evaluation is at step 21, not 20."""
    out = tmp_path / "run"
    metrics = train(*configs(tiny("llama"), corpus, eval_every=5), out, quiet=True)
    assert [r["step"] for r in log_of(out)] == [5, 10, 15, 20, 21]
    assert metrics["steps"] == 21


def test_max_steps_equal_to_the_length_finishes(tiny, corpus, tmp_path: Path) -> None:
    metrics = train(*configs(tiny("llama"), corpus, epochs=1, max_steps=7), tmp_path / "r",
                    quiet=True)
    assert metrics["status"] == "finished" and (tmp_path / "r" / "metrics.json").exists()


def test_auto_decoding_reports_the_decoding_it_saves(tiny, corpus, tmp_path: Path,
                                                     monkeypatch) -> None:
    """Whatever decoding wins on validation, the logged F1 is that decoding's, and the saved
    model uses it: evaluating the reloaded model on validation gives the logged F1."""
    from seqrep.evaluate import evaluate

    captured = {}
    original = Trainer.eval_logits

    def keep(self, sentences):  # noqa: ANN001, ANN202
        logits = original(self, sentences)
        captured[self.state.step] = [x.clone() for x in logits]
        return logits

    monkeypatch.setattr(Trainer, "eval_logits", keep)
    out = tmp_path / "run"
    lab, cfg = configs(tiny("qwen3"), corpus, epochs=1, decoding="auto", lr=1e-3)
    metrics = train(lab, cfg, out, quiet=True)
    best = metrics["validation"]
    assert best["decoding"] == metrics["decoding"]
    assert best["f1"] == best[f"f1_{best['decoding']}"]
    # auto keeps constrained unless greedy is more than half a point (0.005) better
    wins = best["f1_greedy"] - best["f1_constrained"] > 0.005 + 1e-12
    assert best["decoding"] == ("greedy" if wins else "constrained")
    # reload: the same logits as during training, and the same validation F1
    reloaded = SequenceLabeler.from_pretrained(out)
    assert reloaded.config.decoding == best["decoding"]
    val = load_data(cfg.resolved("full")).eval
    for a, b in zip(reloaded.word_logits([s.words for s in val], docs=None),
                    captured[best["step"]]):
        assert torch.allclose(a, b, atol=1e-5)
    assert evaluate(reloaded, val)["f1"] == pytest.approx(best["f1"])


@pytest.mark.parametrize("asked,kept", [("constrained", "constrained"), ("auto", "greedy")])
def test_the_run_keeps_the_decoding_asked_for(tiny, corpus, tmp_path: Path, monkeypatch,
                                              asked: str, kept: str) -> None:
    """Validation scores set by hand, greedy's F1 (0.6) strictly above constrained's (0.5): a
    run asked for constrained logs, keeps and saves constrained; auto takes greedy."""
    import seqrep.train.loop as loop

    def fixed(logits, gold, labels, task="spans"):  # noqa: ANN001, ANN202
        row = {"precision": 0.5, "recall": 0.5, "predicted_spans": 1, "gold_spans": 1}
        return {"greedy": {**row, "f1": 0.6}, "constrained": {**row, "f1": 0.5}}

    monkeypatch.setattr(loop, "scores_by_decoding", fixed)
    out = tmp_path / "run"
    metrics = train(*configs(tiny("llama"), corpus, epochs=1, decoding=asked), out, quiet=True)
    f1 = {"greedy": 0.6, "constrained": 0.5}[kept]
    assert {(r["decoding"], r["f1"]) for r in log_of(out)} == {(kept, f1)}
    assert metrics["decoding"] == kept
    assert SequenceLabeler.from_pretrained(out).config.decoding == kept


def test_full_finetuning_reloads_the_trained_weights(tiny, corpus, tmp_path: Path) -> None:
    """A reloaded fully fine-tuned labeler differs from the base backbone with the same head:
    if from_pretrained loaded the base model, its logits would equal that model's."""
    out = tmp_path / "run"
    train(*configs(tiny("llama"), corpus, epochs=1), out, quiet=True)
    reloaded = SequenceLabeler.from_pretrained(out)
    base = SequenceLabeler.from_model(tiny("llama"), labels=reloaded.config.labels,
                                      repetitions=1, exit_layer=3).eval()
    base.head.load_state_dict(reloaded.head.state_dict())
    words = [["Obama", "visited", "the", "city", "of", "Paris", "."]]
    assert not torch.allclose(reloaded.word_logits(words, docs=None)[0],
                              base.word_logits(words, docs=None)[0])


def test_mistyped_split_path_is_an_error(tiny, corpus, tmp_path: Path) -> None:
    out = tmp_path / "run"
    for field in ("eval_split", "test_split"):
        with pytest.raises(SeqrepError, match=f"{field}='nope.txt' is neither"):
            train(*configs(tiny("llama"), corpus, **{field: "nope.txt"}), out, quiet=True)
    assert not out.exists()  # nothing written


def test_carved_validation_is_said(tiny, corpus, tmp_path: Path) -> None:
    out = tmp_path / "run"
    metrics = train(*configs(tiny("llama"), corpus, epochs=1), out, quiet=True)
    assert "carved from the training file" in metrics["validation_source"]
    assert "carved" in json.loads((out / "run.json").read_text())["validation_source"]


def test_learning_rate_follows_the_finetuning_mode(tiny, corpus, tmp_path: Path) -> None:
    lab, cfg = configs(tiny("llama"), corpus, epochs=1, lr=None, head_lr=None)
    for mode, lr in (("lora", 2e-4), ("full", 5e-5)):
        out = tmp_path / mode
        train(lab.replace(finetune=mode), cfg, out, quiet=True)
        saved = json.loads((out / "run.json").read_text())["train"]
        assert (saved["lr"], saved["head_lr"]) == (lr, 1e-3)
    out = tmp_path / "mine"
    train(lab.replace(finetune="lora"), cfg.replace(lr=7e-4), out, quiet=True)
    assert json.loads((out / "run.json").read_text())["train"]["lr"] == 7e-4


def test_overwrite_checks_everything_first(tiny, corpus, tmp_path: Path) -> None:
    out = tmp_path / "run"
    train(*configs(tiny("llama"), corpus, epochs=1), out, quiet=True)
    before = (out / "metrics.json").read_bytes()
    lab, cfg = configs(tiny("llama"), corpus, epochs=1)
    with pytest.raises(SeqrepError):  # a typo in the dataset: the old run stays
        train(lab, cfg.replace(dataset=str(tmp_path / "typo.txt")), out, overwrite=True,
              quiet=True)
    with pytest.raises(SeqrepError):  # an unknown model: the old run stays
        train(lab.replace(model=str(tmp_path / "no-model")), cfg, out, overwrite=True,
              quiet=True)
    assert (out / "metrics.json").read_bytes() == before
    thesis = tmp_path / "thesis"
    thesis.mkdir()
    (thesis / "thesis.txt").write_text("years of work")
    with pytest.raises(SeqrepError, match="seqrep did not write it"):
        train(lab, cfg, thesis, overwrite=True, quiet=True)
    assert (thesis / "thesis.txt").read_text() == "years of work"
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    with pytest.raises(SeqrepError, match="is a file"):
        train(lab, cfg, a_file, quiet=True)
    link = tmp_path / "link"
    link.symlink_to(out)
    assert train(lab, cfg, link, overwrite=True, quiet=True)["status"] == "finished"


def _interrupted(tiny, corpus, out: Path):  # noqa: ANN202
    lab, cfg = configs(tiny("llama"), corpus, epochs=2, eval_every=3)
    assert train(lab, cfg.replace(max_steps=4), out, quiet=True)["status"] == "interrupted"
    return lab, cfg


def test_resume_at_max_steps_takes_no_step(tiny, corpus, tmp_path: Path) -> None:
    """A run paused by --max-steps 4 at step 4 stays at step 4 on every --resume with the
    same limit (issue 37 item 20: each resume took one more step)."""
    out = tmp_path / "run"
    lab, cfg = _interrupted(tiny, corpus, out)
    ckpt = out / "checkpoint"
    before = {p.name: p.read_bytes() for p in [*ckpt.iterdir(), out / "log.jsonl"]}
    for _ in range(2):
        again = train(lab, cfg.replace(max_steps=4), out, resume=True, quiet=True)
        assert again == {"status": "interrupted", "step": 4}
    assert json.loads((ckpt / "state.json").read_text())["state"]["step"] == 4
    assert {p.name: p.read_bytes() for p in [*ckpt.iterdir(), out / "log.jsonl"]} == before


@pytest.mark.parametrize("damage", ["truncate", "pickle", "state", "rng"])
def test_damaged_checkpoint_is_one_line(tiny, corpus, tmp_path: Path, damage: str) -> None:
    out = tmp_path / "run"
    lab, cfg = _interrupted(tiny, corpus, out)
    ckpt = out / "checkpoint"
    if damage == "truncate":
        data = (ckpt / "trainable.safetensors").read_bytes()
        (ckpt / "trainable.safetensors").write_bytes(data[: len(data) // 2])
        name = "trainable.safetensors"
    elif damage == "pickle":
        import pickle

        (ckpt / "optimizer.safetensors").write_bytes(pickle.dumps({"a": 1}))
        name = "optimizer.safetensors"
    elif damage == "state":
        (ckpt / "state.json").write_text("{broken")
        name = "state.json"
    else:
        from safetensors.torch import save_file

        save_file({"torch": torch.zeros(3, dtype=torch.uint8)}, str(ckpt / "rng.safetensors"))
        name = "checkpoint"
    with pytest.raises(SeqrepError, match=f"{name}.*start the run over"):
        train(lab, cfg, out, resume=True, quiet=True)


def test_resume_logs_each_evaluation_once(tiny, corpus, tmp_path: Path) -> None:
    """An evaluation logged after the checkpoint (a kill between the two) is replayed on
    resume, but appears once; a stale temporary folder of a killed writer is removed."""
    lab, cfg = configs(tiny("llama"), corpus, epochs=2, eval_every=3)
    full = tmp_path / "full"
    train(lab, cfg, full, quiet=True)
    out = tmp_path / "run"
    _interrupted(tiny, corpus, out)
    with (out / "log.jsonl").open("a") as f:  # as if killed after logging, before saving
        f.write(json.dumps({"step": 6, "f1": 0.5}) + "\n" + '{"step": 9, "f1"')
    (out / ".best.tmp-killed").mkdir()
    (out / ".best.tmp-killed" / "junk").write_bytes(b"0" * 1000)
    train(lab, cfg, out, resume=True, quiet=True)
    assert [r["step"] for r in log_of(out)] == [r["step"] for r in log_of(full)]
    assert not list(out.glob(".*.tmp-*"))


def test_exit_layer_auto_cuts_at_the_best_probe(tiny, corpus, tmp_path: Path) -> None:
    """A frozen-probe sweep over every layer picks the exit layer; the run is cut there, and
    the sweep is recorded; resume does not sweep again."""
    out = tmp_path / "run"
    lab, cfg = configs(tiny("llama", 6), corpus, epochs=1)
    metrics = train(lab.replace(exit_layer="auto"), cfg, out, quiet=True)
    saved = json.loads((out / "run.json").read_text())
    sweep = saved["exit_search"]
    assert sweep["layers"] == [1, 2, 3, 4, 5, 6] and len(sweep["f1"]) == 6
    best = max(range(6), key=lambda k: (sweep["f1"][k], -k)) + 1
    assert sweep["chosen"] == best == saved["labeler"]["exit_layer"] == metrics["exit_layer"]
    reloaded = SequenceLabeler.from_pretrained(out)
    assert reloaded.backbone_info.num_layers == best


def test_an_exit_layer_past_the_model_is_refused_before_anything_loads(
        tiny, corpus, tmp_path: Path, monkeypatch, capsys) -> None:
    """--exit-layer 99 on a 4-layer model: one line from the model's config.json, before the
    data or the weights load (issue 37 item 19: refused only after loading), also when a
    resumed run.json names it."""
    import transformers

    from seqrep.config import TrainConfig
    from seqrep.files.atomic import write_json
    from seqrep.train import plan

    def loaded(*_: object, **__: object) -> None:
        pytest.fail("the data or the weights loaded before the exit layer was checked")

    monkeypatch.setattr(plan, "load_data", loaded)
    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", loaded)
    out = tmp_path / "run"
    code, _, err = cli(capsys, "train", "--dataset", corpus[0], "--output", str(out),
                       "--model", tiny("llama"), "--exit-layer", "99")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "exit_layer=99" in err and "4 layers" in err, err
    assert not out.exists()
    write_json(out / "run.json", {"labeler": LabelerConfig(model=tiny("llama"),
                                                           exit_layer=99).to_dict(),
                                  "train": TrainConfig(dataset=corpus[0]).to_dict()})
    code, _, err = cli(capsys, "train", "--resume", "--output", str(out))
    assert code == 2 and "exit_layer=99" in err and "4 layers" in err, err
    assert err.strip().splitlines()[-1].startswith("error: ")


def test_exit_layer_accepts_numbers_as_text() -> None:
    assert LabelerConfig(exit_layer="12").exit_layer == 12
    with pytest.raises(SeqrepError, match="exit_layer"):
        LabelerConfig(exit_layer="deep")


def test_frozen_lowest_layers_do_not_train(tiny, corpus, tmp_path: Path) -> None:
    from safetensors.torch import load_file

    from seqrep.model.backbone import layer_stack

    out = tmp_path / "run"
    lab, cfg = configs(tiny("llama"), corpus, epochs=1)
    train(lab.replace(frozen_layers=2), cfg, out, quiet=True)
    base = SequenceLabeler.from_model(tiny("llama"), labels=["O"], exit_layer=3)
    trained = load_file(str(out / "best" / "backbone" / "model.safetensors"))
    blocks = layer_stack(base.backbone)
    for i, block in enumerate(blocks):
        same = all(torch.equal(p, trained[f"layers.{i}.{n}"]) for n, p in
                   block.named_parameters())
        assert same == (i < 2), i


def test_checkpoint_keeps_each_process_gpu_generator(monkeypatch, tmp_path: Path) -> None:
    """On a GPU the CUDA generator (dropout's) is saved per process and restored for the
    restoring rank; a CPU-only checkpoint has none and restores on the CPU alone. CUDA is
    stood in for here: the CPU machine has none."""
    from seqrep.train import checkpoint as ck
    from seqrep.train.state import TrainState

    gpu = {"state": torch.arange(8, dtype=torch.uint8), "set": None}
    monkeypatch.setattr(torch.cuda, "get_rng_state", lambda device: gpu["state"].clone())
    monkeypatch.setattr(torch.cuda, "set_rng_state",
                        lambda state, device: gpu.__setitem__("set", (state.clone(), device)))
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.AdamW(model.parameters())
    states = [ck.rng_states(torch.device("cuda", 0)), ck.rng_states(torch.device("cuda", 1))]
    states[1]["cuda"] = torch.full((8,), 7, dtype=torch.uint8)
    assert set(states[0]) == {"torch", "cuda"}
    assert set(ck.rng_states(torch.device("cpu"))) == {"torch"}
    ck.save_checkpoint(tmp_path / "c", model, opt, TrainState(), states)
    from safetensors.torch import load_file

    assert set(load_file(str(tmp_path / "c" / "rng.safetensors"))) == {
        "torch", "cuda", "torch_1", "cuda_1"}
    ck.load_checkpoint(tmp_path / "c", model, opt, rank=1)
    assert gpu["set"] is None  # the model is on the CPU: its GPU generator is not touched
    fake = torch.device("cuda", 1)
    monkeypatch.setattr(torch.nn.Parameter, "device", property(lambda p: fake), raising=False)
    ck.load_checkpoint(tmp_path / "c", model, opt, rank=1)
    assert torch.equal(gpu["set"][0], states[1]["cuda"]) and gpu["set"][1] == fake
