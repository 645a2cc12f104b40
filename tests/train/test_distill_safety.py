"""``seqrep distill`` never deletes what it did not make (issue 37, items 2 and 3): an output
that is, holds or lies inside the teacher or the label cache is refused; ``--overwrite`` keeps
the old run until the student has loaded; a label cache is written only into an empty folder
or one seqrep made, and only its own temporary files are ever removed; ``--resume`` takes no
other teacher or cache than the one its ``distill.json`` records; chunks are shared like the
rest of a run (the umask's mode)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
import torch
from support import cli, hand_made_teacher, write_corpus

from seqrep.errors import SeqrepError
from seqrep.train.teacher_cache import label_cache

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


@pytest.fixture(scope="module")
def world(tiny, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A finished teacher run made by hand (a random labeler in ``best/``: its labels are not
    what these tests read), a small corpus and a student model."""

    root = tmp_path_factory.mktemp("distill-safety")
    teacher = root / "teacher"
    hand_made_teacher(tiny("llama"), teacher)
    return {"root": root, "teacher": teacher, "student": Path(tiny("qwen2")),
            "train": write_corpus(root / "train.txt", 6, seed=2),
            "dev": write_corpus(root / "dev.txt", 2, seed=3)}


def args(world: dict[str, Path], teacher: Path, out: Path, *extra: str) -> list[str]:
    return ["distill", str(teacher), "--student", str(world["student"]), "--dataset",
            str(world["train"]), "--eval-split", str(world["dev"]), "--test-split", "",
            "--max-steps", "1", "-r", "0", "--exit-layer", "2", "--quiet", "-o", str(out),
            *extra]


def snapshot(folder: Path) -> dict[str, str]:
    """Every entry under ``folder``: a file's SHA-256, a folder's mark."""
    return {str(p.relative_to(folder)): "<dir>" if p.is_dir() else
            hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*"))}


def refused(code: int, err: str) -> bool:
    """Exit 2 with one ``error:`` line last (a resume announces its model first) and no
    traceback."""
    lines = err.strip().splitlines()
    return code == 2 and bool(lines) and lines[-1].startswith("error: ") \
        and len(lines) <= 2 and "Traceback" not in err


def test_an_output_that_is_holds_or_is_inside_the_teacher_or_cache_is_refused(
        world, tmp_path: Path, capsys) -> None:
    """The attack: ``distill T -o T --overwrite`` deleted the teacher, then a traceback."""
    teacher = tmp_path / "t"
    shutil.copytree(world["teacher"], teacher)
    outer = tmp_path / "outer"  # a run folder that holds the teacher it is asked to replace
    shutil.copytree(world["teacher"], outer)
    shutil.copytree(world["teacher"], outer / "inner")
    cache = tmp_path / "cache"
    # each case names the pair that overlaps: the output and the teacher, the cache and the
    # teacher, or the cache and the output
    student, labels, apart = ("give the student a folder apart from its teacher",
                              "keep the teacher's labels apart from its run",
                              "give a folder apart from the student's")
    cases = [(student, teacher, teacher, "--overwrite"),
             (student, teacher, teacher / "best" / "student", "--overwrite"),
             (student, outer / "inner", outer, "--overwrite"),
             (labels, teacher, tmp_path / "s1", "--teacher-labels", str(teacher)),
             (labels, teacher, tmp_path / "s2", "--teacher-labels", str(teacher / "best")),
             (apart, teacher, tmp_path / "s3", "--teacher-labels", str(tmp_path / "s3")),
             (apart, teacher, cache / "student", "--teacher-labels", str(cache)),
             (apart, teacher, tmp_path / "s4", "--teacher-labels", str(tmp_path / "s4" / "best"))]
    before = {p: snapshot(p) for p in (teacher, outer)}
    for why, t, out, *extra in cases:
        code, _, err = cli(capsys, *args(world, t, out, *extra))
        assert refused(code, err) and len(err.strip().splitlines()) == 1, (t, out, extra, err)
        assert why in err, (t, out, extra, err)
        assert {p: snapshot(p) for p in (teacher, outer)} == before, (t, out, extra)
    for name in ("s1", "s2", "s3", "s4", "cache"):
        assert not (tmp_path / name).exists(), name


def test_overwrite_keeps_the_old_run_until_the_student_has_loaded(world, tmp_path: Path,
                                                                  capsys) -> None:
    """A student whose weights are truncated loads its config and tokenizer, then fails on
    its weights: the run it was to replace is all still there. With a sound student the
    old run is replaced, nothing of it left behind."""
    old = tmp_path / "old-run"
    shutil.copytree(world["teacher"], old)
    (old / "log.jsonl").write_text("{}\n")
    from seqrep.files import owner

    owner.write_manifest(old, "run")  # a run seqrep wrote whole: --overwrite may replace it
    before = snapshot(old)
    broken = tmp_path / "broken-student"
    shutil.copytree(world["student"], broken)
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:2000])
    bad = args(world, world["teacher"], old, "--overwrite")
    bad[bad.index("--student") + 1] = str(broken)
    code, _, err = cli(capsys, *bad)
    assert refused(code, err), err
    assert snapshot(old) == before
    code, _, err = cli(capsys, *args(world, world["teacher"], old, "--overwrite"))
    assert code == 0, err
    names = sorted(p.name for p in old.iterdir())
    assert "log.jsonl" not in names or (old / "log.jsonl").read_text() != "{}\n"
    assert not [n for n in names if n.startswith(".") and n != ".seqrep-files.json"], names
    run = json.loads((old / "run.json").read_text())
    assert run["labeler"]["model"] == str(world["student"]) and "distill" in run


class Teacher:
    """Logits ``[len(word), 0, 0]`` per word; counts its loads."""

    loads = 0

    def __init__(self) -> None:
        Teacher.loads += 1

    def word_logits(self, sentences, batch_size, docs):  # noqa: ANN001, ANN201
        return [torch.tensor([[float(len(w)), 0.0, 0.0] for w in s]) for s in sentences]


def test_a_label_cache_writes_only_into_an_empty_folder_or_its_own(tmp_path: Path) -> None:
    """The attack: ``--teacher-labels`` on a user's folder deleted ``.thesis.tmp`` and
    replaced ``00000.safetensors``."""
    users = tmp_path / "thesis"
    users.mkdir()
    (users / ".thesis.tmp").write_text("my draft")
    (users / "00000.safetensors").write_bytes(b"my weights")
    before, loads = snapshot(users), Teacher.loads
    with pytest.raises(SeqrepError, match="thesis") as err:
        label_cache(Teacher, [("a", "bb")], users, 3, quiet=True, docs=None)
    assert "\n" not in str(err.value)
    assert snapshot(users) == before and Teacher.loads == loads
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    with pytest.raises(SeqrepError, match="a-file"):
        label_cache(Teacher, [("a",)], a_file, 3, quiet=True, docs=None)
    # a missing folder and an empty one become caches; a cache seqrep made is reused
    for folder in (tmp_path / "new", tmp_path / "empty"):
        if folder.name == "empty":
            folder.mkdir()
        label_cache(Teacher, [("a", "bb")], folder, 3, quiet=True, docs=None)
        label_cache(Teacher, [("a", "bb")], folder, 3, quiet=True, docs=None)
    # in a cache seqrep made, only its own temporary files go: a killed write's chunk, not
    # another file whose name ends in .tmp
    cache = tmp_path / "new"
    (cache / ".00003.safetensors.tmp").write_bytes(b"half a chunk")
    (cache / ".notes.tmp").write_text("mine")
    label_cache(Teacher, [("a", "bb")], cache, 3, quiet=True, docs=None)
    assert not (cache / ".00003.safetensors.tmp").exists()
    assert (cache / ".notes.tmp").read_text() == "mine"
    # a cache made before the mark (label chunks and nothing else) is read, not refused
    legacy = tmp_path / "legacy"
    label_cache(Teacher, [("a", "bb")], legacy, 3, quiet=True, docs=None)
    (legacy / "seqrep-labels.json").unlink()
    loads = Teacher.loads
    label_cache(Teacher, [("a", "bb")], legacy, 3, quiet=True, docs=None)
    assert Teacher.loads == loads


def test_chunks_take_the_umask_s_mode(tmp_path: Path) -> None:
    """A shared cache is readable by the other accounts the umask lets read: 0644 under
    umask 022 (safetensors alone writes 0600)."""
    old = os.umask(0o022)
    try:
        label_cache(Teacher, [("a", "bb"), ("c",)], tmp_path / "c", 3, quiet=True, chunk=1,
                    docs=None)
    finally:
        os.umask(old)
    files = [p for p in (tmp_path / "c").iterdir()]
    assert len([p for p in files if p.suffix == ".safetensors"]) == 2
    assert {p.name: p.stat().st_mode & 0o777 for p in files} == {p.name: 0o644 for p in files}


@pytest.fixture()
def paused(world, tmp_path: Path, capsys) -> Path:
    """A distillation stopped after one training step (``distill.json``, ``run.json``, its
    own label cache, a checkpoint)."""
    out = tmp_path / "paused"
    code, _, err = cli(capsys, *args(world, world["teacher"], out, "--epochs", "2"))
    assert code == 0 and (out / "distill.json").is_file(), err
    return out


def test_resume_takes_only_the_recorded_teacher_and_cache(world, paused: Path, tmp_path: Path,
                                                          capsys) -> None:
    """A shared student folder's distill.json cannot aim the cache's writes at a user's
    folder, and a teacher or cache given on the command line that is not the recorded one
    is refused, not ignored."""
    users = tmp_path / "thesis"
    users.mkdir()
    (users / ".thesis.tmp").write_text("my draft")
    (users / "00000.safetensors").write_bytes(b"my weights")
    other = tmp_path / "other-teacher"
    shutil.copytree(world["teacher"], other)
    raw = (paused / "distill.json").read_bytes()
    request = json.loads(raw)
    before = snapshot(users), snapshot(paused)
    for teacher, extra in ((other, ()), (world["teacher"], ("--teacher-labels", str(users))),
                           (world["teacher"], ("--teacher-labels", str(tmp_path / "new")))):
        code, _, err = cli(capsys, *args(world, teacher, paused, "--resume", *extra))
        assert refused(code, err), (teacher, extra, err)
        assert ("teacher" if teacher == other else "cache") in err.splitlines()[-1]
    (paused / "distill.json").write_text(json.dumps({**request, "cache": str(users)}))
    code, _, err = cli(capsys, *args(world, world["teacher"], paused, "--resume"))
    assert refused(code, err) and "thesis" in err, err
    assert snapshot(users) == before[0]
    (paused / "distill.json").write_bytes(raw)
    assert snapshot(paused) == before[1]
    code, _, err = cli(capsys, *args(world, world["teacher"], paused, "--resume"))
    assert code == 0, err
