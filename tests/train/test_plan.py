"""A run is resolved once into a plan (issue 38): the configurations, placement, mode, task,
data and resume state; the trainer fits and tests it and frees its own model; any objective
(gold labels, a teacher's soft targets, one written outside the package) brings its data,
its loss and its record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from support import train_configs, write_corpus

from seqrep.data.types import Sentence
from seqrep.model.device import Placement
from seqrep.train import train


def test_placement_is_resolved_once_for_a_run(tiny, corpus, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The training placement (device, precision with ``training=True``) is resolved by the
    plan and handed to the trainer, not resolved again where it is used."""
    calls: list[bool] = []
    original = Placement.resolve.__func__

    def counted(cls, device="auto", precision="auto", training=False):  # noqa: ANN001, ANN202
        calls.append(training)
        return original(cls, device, precision, training)

    monkeypatch.setattr(Placement, "resolve", classmethod(counted))
    train(*train_configs(tiny("llama"), corpus, epochs=1), tmp_path / "run", quiet=True)
    assert calls.count(True) == 1, calls


def test_the_plan_holds_the_resolved_run_and_the_trainer_frees_its_model(
        tiny, corpus, tmp_path: Path) -> None:
    from seqrep.config import TrainConfig
    from seqrep.train.loop import Trainer
    from seqrep.train.plan import plan_run

    lab, cfg = train_configs(tiny("llama"), corpus, epochs=1)
    out = (tmp_path / "run").resolve()
    plan = plan_run(lab, cfg.replace(lr=None), out, quiet=True)
    # by hand: the toy corpus has PER and LOC spans; the full mode's rates fill the unset one
    assert plan.labeler.labels == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    assert plan.labeler.task == plan.task.name == "spans"
    assert plan.train.lr == TrainConfig().resolved("full").lr and plan.train.head_lr == 1e-2
    assert plan.placement.device.type == "cpu" and plan.placement.precision == "fp32"
    assert plan.mode.name == "full" and not plan.resume and not out.exists()
    assert len(plan.data.train) + len(plan.data.eval) == 60 and len(plan.data.test) == 12
    trainer = Trainer(plan.labeler, plan.train, plan.output, plan.data, plan.quiet,
                      plan.loss, plan.placement)
    trainer.start(plan)
    trainer.run()
    metrics = trainer.test()
    assert metrics["status"] == "finished" and (out / "metrics.json").is_file()
    # the trainer let go of its model and optimizer itself, before the best model reloaded
    assert trainer.labeler is None and trainer.model is None and trainer.optimizer is None


class Echo:
    """An objective written outside the package: gold cross-entropy, two more sentences (a
    copy of the first training sentence, twice) and an entry of its own in run.json."""

    keeps_folder = False

    def __init__(self) -> None:
        self.record = {"echo": {"copies": 2}}
        self.losses = 0

    def bind(self, train: list[Sentence], labels: list[str]) -> tuple[list[Sentence], Echo]:
        return list(train) + [train[0], train[0]], self

    def loss(self, logits: torch.Tensor, labels: torch.Tensor | None, items: list) -> torch.Tensor:
        self.losses += 1
        return torch.nn.functional.cross_entropy(logits, labels, reduction="sum")


def test_an_objective_brings_its_data_loss_and_record(tiny, corpus, tmp_path: Path) -> None:
    echo = Echo()
    out = tmp_path / "run"
    train(*train_configs(tiny("llama"), corpus, epochs=1), out, quiet=True, objective=echo)
    saved = json.loads((out / "run.json").read_text())
    assert saved["echo"] == {"copies": 2}
    # 60 sentences, 6 of them held out for validation (10 %), plus the two copies
    assert saved["train_sentences"] == 54 + 2
    assert echo.losses > 0


# ---------------------------------------------------------------------------- distillation
@pytest.fixture(scope="module")
def teacher(tiny, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("teacher")
    corpus = (str(write_corpus(tmp / "train.txt", 24)), str(write_corpus(tmp / "test.txt", 4)))
    out = tmp / "run"
    train(*train_configs(tiny("llama"), corpus, epochs=1), out, quiet=True)
    return out


def _student(tiny, **kw):  # noqa: ANN001, ANN202
    from seqrep.config import LabelerConfig

    return LabelerConfig(model=tiny("qwen2"), repetitions=1, exit_layer=3, dropout=0.0, **kw)


def _fit(tmp: Path, **kw):  # noqa: ANN001, ANN202
    from seqrep.config import TrainConfig

    data = write_corpus(tmp / "d.txt", 12, seed=4)
    return TrainConfig(**{**dict(dataset=str(data), test_split=None, epochs=1, batch_size=4,
                                 lr=3e-3, head_lr=3e-2, seed=3), **kw})


def test_a_bad_student_exit_layer_is_refused_before_the_teacher_labels(
        tiny, teacher, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from seqrep.errors import SeqrepError
    from seqrep.train import teacher_cache
    from seqrep.train.distill import distill

    def labels(*_: object, **__: object) -> None:
        pytest.fail("the teacher labeled before the student's exit layer was checked")

    monkeypatch.setattr(teacher_cache, "teacher_logp", labels)
    out = tmp_path / "s"
    with pytest.raises(SeqrepError, match=r"exit_layer=99 .*4 layers"):
        distill(teacher, _student(tiny).replace(exit_layer=99), _fit(tmp_path), out,
                quiet=True)
    assert not out.exists()


def test_work_seconds_reads_only_good_log_lines(tmp_path: Path) -> None:
    """A damaged log.jsonl (not JSON, not an object, a text where seconds go, an overlong
    line) costs its bad lines, not the finished distillation; a log that is no regular file
    counts nothing."""
    from seqrep.train.distill import _work_seconds
    from seqrep.train.folder import MAX_LOG_LINE

    out = tmp_path / "run"
    out.mkdir()
    lines = ['{"eval_seconds": 1.5}', "not json", "[1, 2]", '{"eval_seconds": "slow"}',
             '{"eval_seconds": ' + " " * MAX_LOG_LINE + '9}', '{"eval_seconds": 2.25}',
             '{"f1": 0.5}', '{"eval_seconds": -4}', '{"eval_seconds": NaN}']
    (out / "log.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    metrics = {"train_seconds": 10.0, "test": {"seconds": 0.5}}
    record = {"teacher_seconds": 3.0}
    # by hand: 3 + 10 + (1.5 + 2.25) + 0.5
    assert _work_seconds(out, metrics, record) == 17.25
    (out / "log.jsonl").unlink()
    (out / "log.jsonl").symlink_to("/dev/zero")
    assert _work_seconds(out, metrics, record) == 13.5
