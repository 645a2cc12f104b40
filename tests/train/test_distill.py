"""``seqrep distill`` on tiny random models (issue 25): a student learns its teacher's labels,
the teacher's labels are cached and resumed, the loss at T=1 is the soft cross-entropy, and bad
input is one line with nothing written."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from support import cli, train_configs, write_corpus

from seqrep.config import LabelerConfig, TrainConfig
from seqrep.model.labeler import SequenceLabeler
from seqrep.train import train
from seqrep.train.distill import distill
from seqrep.train.loop import Trainer


@pytest.fixture(scope="module")
def teacher(tiny, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of a tiny llama on the toy corpus (its labels are what students learn)."""
    tmp = tmp_path_factory.mktemp("teacher")
    corpus = (str(write_corpus(tmp / "train.txt", 60)), str(write_corpus(tmp / "test.txt", 8)))
    out = tmp / "run"
    train(*train_configs(tiny("llama"), corpus, epochs=6, head_lr=3e-2), out, quiet=True)
    return out


@pytest.fixture(scope="module")
def teacher_model(teacher: Path) -> SequenceLabeler:
    return SequenceLabeler.from_pretrained(teacher)


@pytest.fixture(scope="module")
def handful(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Six new sentences twice: with their true tags (validation) and with every tag O
    (training), so a student can only learn the names from the teacher, not from the gold."""
    tmp = tmp_path_factory.mktemp("handful")
    true = write_corpus(tmp / "true.txt", 6, seed=11)
    all_o = tmp / "all_o.txt"
    all_o.write_text("".join(f"{x.split()[0]} O\n" if x.strip() else "\n"
                             for x in true.read_text().splitlines()), encoding="utf-8")
    return all_o, true


def student(tiny, **kw) -> LabelerConfig:
    return LabelerConfig(model=tiny("qwen2"), repetitions=1, exit_layer=3, dropout=0.0, **kw)


def fit(data: tuple[Path, Path], **kw) -> TrainConfig:
    opts = dict(dataset=str(data[0]), eval_split=str(data[1]), test_split=None, epochs=1,
                batch_size=8, lr=3e-3, head_lr=3e-2, seed=3)
    return TrainConfig(**{**opts, **kw})


def teacher_logits(model: SequenceLabeler, sentences: list[list[str]]) -> list[torch.Tensor]:
    return model.word_logits(sentences, docs=None)


def words_of(path: Path) -> list[list[str]]:
    blocks = path.read_text(encoding="utf-8").strip().split("\n\n")
    return [[line.split()[0] for line in b.splitlines()] for b in blocks]


def test_student_reproduces_the_teacher_labels(tiny, teacher, teacher_model, handful,
                                               tmp_path: Path) -> None:
    """The student's tags on its training sentences are the teacher's (both decoded the
    same way: the run keeps the first model that scores best on validation, so the argmax
    of a rarely chosen word may still be one step short of the teacher's)."""
    from seqrep.predict.tagger import predict_tags

    out = tmp_path / "student"
    metrics = distill(teacher, student(tiny), fit(handful, epochs=40), out, quiet=True)
    assert metrics["status"] == "finished"
    sentences = words_of(handful[0])
    expected = [t for t, _ in predict_tags(teacher_model, sentences, "constrained", docs=None)]
    assert any(t != "O" for s in expected for t in s)  # the teacher finds names: not all O
    got = predict_tags(SequenceLabeler.from_pretrained(out), sentences, "constrained", docs=None)
    assert [t for t, _ in got] == expected
    run = json.loads((out / "run.json").read_text())
    assert run["distill"]["teacher"] == str(teacher.resolve())
    assert run["labeler"]["labels"] == teacher_model.config.labels


def test_cache_resumes_without_relabeling(tiny, teacher, teacher_model, handful,
                                          tmp_path: Path, monkeypatch) -> None:
    """Killed after the first cache chunk: the resumed run asks the teacher only for the
    sentences the cache does not hold, and trains on what the teacher says."""
    teacher_name = teacher_model.config.model
    calls: list[int] = []
    original = SequenceLabeler.word_logits

    def counted(self, sentences, *a, **kw):  # noqa: ANN001, ANN202
        if self.config.model == teacher_name:
            calls.append(len(sentences))
            if kill and len(calls) == 2:
                raise KeyboardInterrupt
        return original(self, sentences, *a, **kw)

    monkeypatch.setattr(SequenceLabeler, "word_logits", counted)
    out = tmp_path / "student"
    kill = True
    with pytest.raises(KeyboardInterrupt):
        distill(teacher, student(tiny), fit(handful), out, quiet=True, chunk=2)
    assert calls == [2, 2] and not (out / "run.json").exists()
    kill, calls[:] = False, []
    metrics = distill(teacher, student(tiny), fit(handful, max_steps=1), out, resume=True,
                      quiet=True, chunk=2)
    assert calls == [2, 2]  # 6 sentences, 2 of them cached
    assert metrics["status"] == "finished"
    # the cache holds the teacher's distributions, whichever run labeled them
    from safetensors.torch import load_file

    cached = torch.cat([load_file(p)["logp"] for p in sorted((out / "teacher-labels")
                                                            .glob("*.safetensors"))])
    direct = torch.cat(teacher_logits(teacher_model, words_of(handful[0])))
    assert torch.allclose(cached, torch.log_softmax(direct, -1), atol=1e-5)


def test_interrupted_training_resumes_on_the_cached_labels(tiny, teacher, teacher_model,
                                                           handful, tmp_path: Path,
                                                           monkeypatch) -> None:
    """Stopped after one optimizer step, the student resumes from its checkpoint and the
    teacher is not asked again; the finished run names its teacher."""
    out = tmp_path / "student"
    first = distill(teacher, student(tiny), fit(handful, epochs=2, max_steps=1), out,
                    quiet=True)
    assert first["status"] == "interrupted" and (out / "checkpoint").is_dir()
    teacher_name = teacher_model.config.model
    original = SequenceLabeler.word_logits

    def refuse(self, sentences, *a, **kw):  # noqa: ANN001, ANN202
        assert self.config.model != teacher_name, "the teacher labeled again"
        return original(self, sentences, *a, **kw)

    monkeypatch.setattr(SequenceLabeler, "word_logits", refuse)
    done = distill(teacher, student(tiny), fit(handful), out, resume=True, quiet=True)
    assert done["status"] == "finished" and done["steps"] == 2
    # the first session's labeling counts in the work, though this session labeled nothing
    figures = done["distill"]
    assert figures["resumed"] is True and figures["teacher_seconds"] > 0
    assert figures["work_seconds"] >= figures["teacher_seconds"] + done["train_seconds"]
    assert json.loads((out / "run.json").read_text())["distill"]["teacher"] == str(teacher)


def test_temperature_one_is_the_soft_cross_entropy_by_hand(tiny, teacher, teacher_model,
                                                           handful, tmp_path: Path,
                                                           monkeypatch) -> None:
    """The first step's gradient is that of sum_words -sum_c p_c log q_c / words, with p the
    teacher's softmax and q the student's, computed here in plain torch."""
    seen: dict = {}
    original = Trainer._train_step

    class Stop(Exception):
        pass

    def step(self) -> None:  # noqa: ANN001
        seen["grads"] = {n: p.grad.clone() for n, p in self.labeler.named_parameters()
                         if p.grad is not None}
        raise Stop

    def train_step(self, group) -> None:  # noqa: ANN001
        seen["trainer"], seen["group"] = self, group
        original(self, group)

    monkeypatch.setattr(Trainer, "_train_step", train_step)
    monkeypatch.setattr(Trainer, "_step", step)
    with pytest.raises(Stop):
        distill(teacher, student(tiny), fit(handful, batch_size=4), tmp_path / "s", quiet=True)
    trainer = seen["trainer"]
    trainer.labeler.zero_grad(set_to_none=True)
    members = [trainer.items[i] for b in seen["group"] for i in b]
    batch = trainer.encoder.collate(members)
    logits = trainer.labeler(batch)
    sentences = [trainer.data.train[it.sentence].words for it in members]
    p = [torch.softmax(x, -1) for x in teacher_logits(teacher_model, [list(s) for s in sentences])]
    target = torch.cat([p[k][list(it.segment.words)] for k, it in enumerate(members)])
    loss = -(target * torch.log_softmax(logits, -1)).sum() / batch.num_words
    loss.backward()
    assert seen["grads"]
    for name, grad in seen["grads"].items():
        mine = dict(trainer.labeler.named_parameters())[name].grad
        assert torch.allclose(grad, mine, atol=1e-6, rtol=1e-4), name


def test_bad_input_is_one_line_and_writes_nothing(tiny, teacher, handful, tmp_path: Path,
                                                  capsys) -> None:
    not_a_run = tmp_path / "not-a-run"
    not_a_run.mkdir()
    (not_a_run / "notes.txt").write_text("hello")
    files = {"empty.txt": b"", "binary.txt": b"\x7fELF\x00\x01\x02\n", "latin1.txt":
             b"Obama visited Paris\ncaf\xe9 au lait\n"}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    # students whose tokenizer cannot split the teacher's words: none at all, and one that
    # belongs to another model (byte-level ids past a tiny BERT's 300 embeddings)
    import shutil

    no_tokenizer, foreign = tmp_path / "no-tokenizer", tmp_path / "foreign-tokenizer"
    for folder in (no_tokenizer, foreign):
        folder.mkdir()
        for f in Path(tiny("bert")).iterdir():
            if f.name in ("config.json", "model.safetensors"):
                shutil.copy(f, folder / f.name)
    for f in Path(tiny("qwen2")).glob("tokenizer*"):
        shutil.copy(f, foreign / f.name)
    other_labels = tmp_path / "orgs.txt"  # gold labels the teacher does not have
    other_labels.write_text("Acme B-ORG\nfailed O\n", encoding="utf-8")
    base = ["--student", tiny("qwen2"), "--dataset", str(handful[0]), "--eval-split",
            str(handful[1]), "--test-split", "", "--quiet"]
    cases = [([str(not_a_run)], "not-a-run"),
             ([str(teacher), "--unlabeled", str(tmp_path / "empty.txt")], "empty.txt"),
             ([str(teacher), "--unlabeled", str(tmp_path / "binary.txt")], "binary.txt"),
             ([str(teacher), "--unlabeled", str(tmp_path / "latin1.txt")], "latin1.txt:2"),
             ([str(teacher), "--labels", "O", "--labels", "B-PER", "--labels", "I-PER"],
              "--labels"),
             ([str(teacher), "--task", "tokens"], "--task"),
             ([str(teacher), "--temperature", "0"], "--temperature"),
             ([str(teacher), "--student", str(tmp_path / "no-such-model")], "--student"),
             ([str(teacher), "--student", str(no_tokenizer)], "--student"),
             ([str(teacher), "--student", str(foreign)], "--student"),
             ([str(teacher), "--dataset", str(other_labels)], "B-ORG")]
    for k, (args, named) in enumerate(cases):
        out = tmp_path / f"out{k}"
        code, _, err = cli(capsys, "distill", *base, *args, "-o", str(out))
        assert code == 2, (args, err)
        assert len(err.strip().splitlines()) == 1 and named in err, (args, err)
        assert not out.exists(), args


def test_soft_targets_mix_gold_by_word_and_follow_document_rows() -> None:
    """The loss reads each row's words where they are ((sentence, word), as document rows
    give them), softens both sides by T with a T^2 factor, and mixes gold only into words of
    gold sentences; checked against a word-by-word sum."""
    from types import SimpleNamespace

    from seqrep.train.distill import SoftTargets

    torch.manual_seed(0)
    logp = [torch.log_softmax(torch.randn(3, 4), -1), torch.log_softmax(torch.randn(2, 4), -1)]
    rows = [((0, 1), (1, 0), (1, 1)), ((0, 0), (0, 2))]
    items = [SimpleNamespace(targets=lambda r=r: r) for r in rows]
    logits = torch.randn(5, 4)
    labels = torch.tensor([2, 0, 3, 1, 1])
    T, g, gold = 2.0, 0.3, [True, False]
    got = SoftTargets(logp, gold, T, g).loss(logits, labels, items)
    want = 0.0
    for k, (s, w) in enumerate(p for r in rows for p in r):
        p = [math.exp(x / T) for x in logp[s][w].tolist()]
        q = [math.exp(x / T) for x in logits[k].tolist()]
        soft = -sum(pi / sum(p) * math.log(qi / sum(q)) for pi, qi in zip(p, q)) * T * T
        z = [math.exp(x) for x in logits[k].tolist()]
        hard = -math.log(z[labels[k]] / sum(z))
        mix = g if gold[s] else 0.0
        want += (1 - mix) * soft + mix * hard
    assert float(got) == pytest.approx(want, rel=1e-5)


def test_several_processes_are_refused_before_anything_is_written(tiny, tmp_path: Path,
                                                                  monkeypatch) -> None:
    """Under torchrun every process would label and write the same cache files."""
    from seqrep.errors import ConfigError

    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ConfigError, match="one process"):
        distill(tmp_path / "teacher", student(tiny), TrainConfig(), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_cli_adds_unlabeled_text_split_by_seqrep_rules(tiny, teacher, handful, tmp_path: Path,
                                                       capsys) -> None:
    """Raw text is split into sentences and words, JSONL words are taken as they are; the
    teacher labels both beside the six training sentences and the student trains on all."""
    from safetensors.torch import load_file

    raw = tmp_path / "more.txt"
    raw.write_text("Obama visited Paris. Peter left Berlin.\n\nMaria reached Tokyo\n",
                   encoding="utf-8")
    out = tmp_path / "student"
    code, _, err = cli(capsys, "distill", str(teacher), "--student", tiny("qwen2"), "--dataset",
                    str(handful[0]), "--eval-split", str(handful[1]), "--test-split", "",
                    "--unlabeled", str(raw), "--max-steps", "1", "-r", "0", "--exit-layer",
                    "2", "--quiet", "-o", str(out))
    assert code == 0, err
    lengths = load_file(out / "teacher-labels" / "00000.safetensors")["lengths"].tolist()
    # 6 training sentences, then "Obama visited Paris ." "Peter left Berlin ." "Maria
    # reached Tokyo"
    assert lengths[6:] == [4, 4, 3]
    run = json.loads((out / "run.json").read_text())
    assert run["distill"]["unlabeled_sentences"] == 3
    assert run["labeler"]["repetitions"] == 0 and run["labeler"]["exit_layer"] == 2
    assert run["train_sentences"] == 6 + 3
    jsonl = tmp_path / "more.jsonl"
    jsonl.write_text('{"words": ["Boris", "left", "Madrid"]}\n', encoding="utf-8")
    out2 = tmp_path / "student2"
    code, _, err = cli(capsys, "distill", str(teacher), "--student", tiny("qwen2"), "--dataset",
                    str(handful[0]), "--eval-split", str(handful[1]), "--test-split", "",
                    "--unlabeled", str(jsonl), "--max-steps", "1", "--quiet", "-o", str(out2))
    assert code == 0, err
    assert load_file(out2 / "teacher-labels" / "00000.safetensors")["lengths"].tolist()[6:] \
        == [3]


def test_report_marks_a_student_and_never_pools_it_with_plain_runs(tmp_path: Path) -> None:
    """Two finished run folders of one configuration and seed, one of them distilled: two
    rows, the student's mode naming its teacher's run folder."""
    from seqrep.lab.results import read_sources
    from seqrep.lab.stats import group

    labeler = {"model": "/m/qwen2-4", "repetitions": 1, "unmask": "none", "exit_layer": 3,
               "finetune": "full"}
    trainer = {"dataset": "/d/train.txt", "epochs": 1, "seed": 1, "lr": 1e-3}
    for name, f1, extra in (("plain", 0.5, {}), ("student", 0.7, {"distill": {
            "teacher": "/runs/big-teacher", "temperature": 1.0, "gold_weight": 0.0}})):
        (tmp_path / name).mkdir()
        (tmp_path / name / "run.json").write_text(json.dumps(
            {"labeler": labeler, "train": trainer, **extra}))
        (tmp_path / name / "metrics.json").write_text(json.dumps(
            {"status": "finished", "validation": {"f1": f1}, "train_sentences": 9,
             "test": {"f1": f1, "sentences": 8}}))
    rows = group(read_sources([tmp_path / "plain", tmp_path / "student"]))
    assert sorted((r["finetune"], r["test_f1"]["mean"]) for r in rows) == [
        ("full", pytest.approx(50.0)), ("full, distilled from big-teacher", pytest.approx(70.0))]


def test_a_cache_chunk_of_other_sentences_is_labeled_again(tmp_path: Path) -> None:
    from seqrep.train.distill import label_cache

    class Teacher:  # logits [len(word), 0, 0] per word
        def word_logits(self, sentences, batch_size, docs):  # noqa: ANN001, ANN202
            return [torch.tensor([[float(len(w)), 0.0, 0.0] for w in s]) for s in sentences]

    loads: list[int] = []

    def load() -> Teacher:
        loads.append(1)
        return Teacher()

    label_cache(load, [("a", "bb")], tmp_path, 3, quiet=True, docs=None)
    # same file name, same lengths and labels, other words: the chunk's digest differs
    (got,), speed = label_cache(load, [("ccc", "d")], tmp_path, 3, quiet=True, docs=None)
    assert len(loads) == 2 and speed["teacher_labeled_sentences"] == 1
    # log-softmax of [3, 0, 0] and [1, 0, 0], by hand
    e3, e1 = math.exp(3), math.exp(1)
    want = [[3 - math.log(e3 + 2), -math.log(e3 + 2), -math.log(e3 + 2)],
            [1 - math.log(e1 + 2), -math.log(e1 + 2), -math.log(e1 + 2)]]
    assert torch.allclose(got, torch.tensor(want), atol=1e-6)
    # the same sentences again come from the cache, the teacher not loaded
    (again,), speed = label_cache(load, [("ccc", "d")], tmp_path, 3, quiet=True, docs=None)
    assert len(loads) == 2 and speed["teacher_labeled_sentences"] == 0
    assert torch.allclose(again, torch.tensor(want), atol=1e-6)


def test_the_record_names_the_teacher_model_not_only_its_folder(tiny, teacher, handful,
                                                                 tmp_path: Path) -> None:
    """A teacher retrained into the same folder is another teacher: a student's run.json
    keeps an identity of the teacher's model that a copy keeps (even one made without its
    files' times, as ``cp -r`` and scp make them) and a changed weight changes, so the report
    never pools the students of two teachers as seeds of one (issue 37: the key was made of
    modification times, so a copy was another teacher)."""
    import os
    import shutil

    copy = tmp_path / "teacher"
    shutil.copytree(teacher, copy, copy_function=shutil.copyfile)  # new times: the same model
    for f in copy.rglob("*"):
        os.utime(f, ns=(10**18, 10**18))

    def key_of(t: Path, name: str) -> str:
        out = tmp_path / name
        distill(t, student(tiny), fit(handful, max_steps=1), out, quiet=True)
        return json.loads((out / "run.json").read_text())["distill"]["teacher_key"]

    first, copied = key_of(teacher, "a"), key_of(copy, "b")
    weights = next(p for p in (copy / "best").rglob("*.safetensors"))
    raw = bytearray(weights.read_bytes())
    raw[8 + int.from_bytes(raw[:8], "little")] ^= 1  # the lowest bit of the first weight
    weights.write_bytes(bytes(raw))  # as a retraining writes other weights
    retrained = key_of(copy, "c")
    assert first == copied and isinstance(first, str) and len(first) >= 8
    assert retrained != first


def test_report_keeps_students_of_two_teacher_models_apart(tmp_path: Path) -> None:
    """Two seeds of one student setting, one teacher folder: pooled when the teacher model is
    one (same key, or records made before keys were kept), two rows when it was retrained."""
    from seqrep.lab.results import read_sources
    from seqrep.lab.stats import group

    labeler = {"model": "/m/qwen2-4", "repetitions": 0, "unmask": "full", "exit_layer": 3,
               "finetune": "full"}

    def rows(*keys: str | None) -> list[tuple[str, int]]:
        folders = []
        for seed, key in enumerate(keys, 1):
            folder = tmp_path / f"{'-'.join(map(str, keys))}-s{seed}"
            folder.mkdir()
            d = {"teacher": "/runs/big-teacher", "temperature": 2.0, "gold_weight": 0.5}
            if key is not None:
                d["teacher_key"] = key
            (folder / "run.json").write_text(json.dumps({"labeler": labeler, "distill": d,
                "train": {"dataset": "/d/train.txt", "epochs": 1, "seed": seed}}))
            (folder / "metrics.json").write_text(json.dumps(
                {"status": "finished", "validation": {"f1": 0.5}, "train_sentences": 9,
                 "test": {"f1": 0.5, "sentences": 8}}))
            folders.append(folder)
        return sorted((r["finetune"], r["test_f1"]["n"]) for r in group(read_sources(folders)))

    assert rows(None, None) == [("full, distilled from big-teacher", 2)]
    assert rows("ab12cd34ef", "ab12cd34ef") == [("full, distilled from big-teacher ab12cd34", 2)]
    assert rows("ab12cd34ef", "99ff00aa11") == [("full, distilled from big-teacher 99ff00aa", 1),
                                               ("full, distilled from big-teacher ab12cd34", 1)]
