"""The teacher key (issue 37, item 14): a teacher is its files' content, not their times, so a
copy made without times (``cp -r``, scp, rsync without ``-t``) is the same teacher in reports
and in a shared label cache, and a changed weight is another; a cache chunk is also keyed by
the precision and device the teacher labeled at, resolved (``auto`` is what it resolves to)."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
from support import hand_made_teacher, write_corpus

from seqrep.config import LabelerConfig, TrainConfig
from seqrep.model.labeler import SequenceLabeler
from seqrep.train.distill import distill
from seqrep.train.teacher_cache import teacher_key

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


@pytest.fixture(scope="module")
def world(tiny, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("teacher-key")
    teacher = root / "teacher"
    hand_made_teacher(tiny("llama"), teacher)
    return {"root": root, "teacher": teacher, "student": Path(tiny("qwen2")),
            "train": write_corpus(root / "train.txt", 6, seed=2),
            "dev": write_corpus(root / "dev.txt", 2, seed=3)}


def test_a_copy_without_times_is_the_same_teacher_and_a_changed_weight_another(
        world, tmp_path: Path) -> None:
    teacher = world["teacher"]
    copy = tmp_path / "copied"
    shutil.copytree(teacher, copy, copy_function=shutil.copyfile)  # cp -r: new times
    for p in (copy / "best").rglob("*"):
        os.utime(p, ns=(10**18, 10**18 + 12345))  # and unlike the original's, surely
    assert teacher_key(copy) == teacher_key(teacher)
    # the key names the content: a SHA-256 (64 hex digits) that a second, independent route
    # over the same files (names and bytes) tells apart from the key of a changed file
    key = teacher_key(teacher)
    assert len(key) == 64 and int(key, 16) >= 0
    head = next(p for p in (copy / "best").rglob("*.safetensors"))
    raw = bytearray(head.read_bytes())
    raw[8 + int.from_bytes(raw[:8], "little")] ^= 1  # the lowest bit of the first weight
    head.write_bytes(bytes(raw))
    assert hashlib.sha256(bytes(raw)).hexdigest() != hashlib.sha256(
        (teacher / "best" / head.relative_to(copy / "best")).read_bytes()).hexdigest()
    assert teacher_key(copy) != teacher_key(teacher)
    # a file added to the model folder is part of the model too
    copy2 = tmp_path / "copied2"
    shutil.copytree(teacher, copy2)
    (copy2 / "best" / "extra.txt").write_text("x")
    assert teacher_key(copy2) != teacher_key(teacher)


@pytest.mark.filterwarnings("ignore:.*no native bf16")  # bf16 emulated on this CPU: slower
def test_students_share_a_cache_only_at_one_resolved_precision(world, tmp_path: Path,
                                                               monkeypatch) -> None:
    """fp32 labels, then ``auto`` (fp32 on this CPU: the suite sets SEQREP_CPU_BF16=0) reads
    them, then bf16 labels again (bf16 labels differ from fp32 ones); a copied teacher
    without its times reads the cache too."""
    calls: list[int] = []
    original = SequenceLabeler.word_logits

    def counted(self, sentences, *a, **kw):  # noqa: ANN001, ANN202, ANN002, ANN003
        if len(self.config.labels) == len(LABELS) and self.config.repetitions == 1:
            calls.append(len(sentences))
        return original(self, sentences, *a, **kw)

    monkeypatch.setattr(SequenceLabeler, "word_logits", counted)
    shared = tmp_path / "labels"
    copy = tmp_path / "copied"
    shutil.copytree(world["teacher"], copy, copy_function=shutil.copyfile)

    def run(name: str, precision: str, teacher: Path) -> list[int]:
        calls.clear()
        distill(teacher, LabelerConfig(model=str(world["student"]), repetitions=0,
                                       exit_layer=2),
                TrainConfig(dataset=str(world["train"]), eval_split=str(world["dev"]),
                            test_split=None, epochs=1, batch_size=8, max_steps=1,
                            precision=precision, device="cpu"),
                tmp_path / name, quiet=True, teacher_labels=shared)
        return list(calls)

    assert run("a", "fp32", world["teacher"]) == [6]
    assert run("b", "auto", world["teacher"]) == []
    assert run("c", "auto", copy) == []
    assert run("d", "bf16", world["teacher"]) == [6]
