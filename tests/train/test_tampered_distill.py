"""Tampered ``distill.json`` on ``seqrep distill --resume`` (issue 37, item 9), as
tests/test_tampered_runs.py does for run folders: every case ends in exit 2 with one
``error:`` line naming the file (and the field, where one field was changed), or in exit 0
having resumed; never a traceback, never a write outside the student's folder.

The cases start from ONE distillation interrupted while the teacher labeled (``distill.json``
and a label cache, no ``run.json``), made once for the module from a hand-made teacher: the
named cases, then a seeded random sweep of wrong types and absurd values in each of the
request's fields (``SEQREP_TAMPER_CASES=N`` runs N of them).
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from support import cli, hand_made_teacher, write_corpus

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
CASES = int(os.environ.get("SEQREP_TAMPER_CASES") or 12)


@pytest.fixture(scope="module")
def world(tiny, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from seqrep.config import LabelerConfig, TrainConfig
    from seqrep.train.distill import distill

    root = tmp_path_factory.mktemp("tampered-distill")
    teacher = root / "teacher"
    hand_made_teacher(tiny("llama"), teacher)
    data = write_corpus(root / "train.txt", 6, seed=2), write_corpus(root / "dev.txt", 2, seed=3)
    paused = root / "paused"
    distill(teacher, LabelerConfig(model=tiny("qwen2"), repetitions=0, exit_layer=2),
            TrainConfig(dataset=str(data[0]), eval_split=str(data[1]), test_split=None,
                        epochs=1, batch_size=8, max_steps=1), paused, quiet=True)
    for name in ("run.json", "metrics.json", "log.jsonl", "best", "checkpoint"):
        path = paused / name  # as if killed while the teacher labeled
        shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
    users = root / "thesis"  # a folder a tampered cache path may aim at
    users.mkdir()
    (users / ".thesis.tmp").write_text("my draft")
    (users / "00000.safetensors").write_bytes(b"my weights")
    return {"root": root, "teacher": teacher, "paused": paused, "users": users,
            "student": Path(tiny("qwen2")), "train": data[0], "dev": data[1]}


Change = Callable[[Path], None]  # changes the distill.json at the path


def field(name: str, value: object) -> Change:
    def do(path: Path) -> None:
        req = json.loads(path.read_text())
        req[name] = value
        path.write_text(json.dumps(req))
    return do


def whole(raw: bytes | str) -> Change:
    def do(path: Path) -> None:
        path.unlink()
        if raw == "<dir>":
            path.mkdir()
        elif isinstance(raw, str) and raw.startswith("<link>"):
            path.symlink_to(raw[6:])
        elif isinstance(raw, bytes):
            path.write_bytes(raw)
        else:
            path.write_text(raw)
    return do


def named(world: dict[str, Path]) -> dict[str, tuple[str | None, Change]]:
    """Case name -> (the field the refusal must name, or None for the whole file; change)."""
    a_file, folder = str(world["train"]), str(world["root"])
    cases: dict[str, tuple[str | None, Change]] = {}
    for key, values in {
            "teacher": [5, None, [], {"a": 1}, "", "/no/such/teacher", a_file, folder],
            "unlabeled": [5, [], {"a": 1}, True, "/no/such/file.txt", folder],
            "cache": [5, [], True, "", a_file, str(world["users"]), str(world["teacher"])],
            "temperature": ["1.0", None, -1, 0, True, [], float("nan"), float("inf")],
            "gold_weight": ["0.5", None, 2, -0.1, True, float("nan")],
            "labeler": [[], "x", {"model": 5}],
            "train": [[], "x", {"epochs": "x"}],
            "reader_options": [[], "x", 5]}.items():
        for value in values:
            cases[f"{key} {value!r}"] = (key, field(key, value))
    cases["a list"] = (None, whole("[1, 2]"))
    cases["binary"] = (None, whole(b"\x00\xff\xfe\x80" * 64))
    cases["100000 deep"] = (None, whole("[" * 100_000 + "]" * 100_000))
    cases["-> /dev/zero"] = (None, whole("<link>/dev/zero"))
    cases["a folder"] = (None, whole("<dir>"))
    return cases


def case_folder(world: dict[str, Path], name: str) -> Path:
    slug = "".join(c if c.isalnum() else "-" for c in name)[:60]
    target = world["root"] / "cases" / slug
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(world["paused"], target, symlinks=True)
    return target


def outcome(world: dict[str, Path], capsys: pytest.CaptureFixture, case: str,
            target: Path) -> tuple[int, str]:
    users = sorted(p.name for p in world["users"].iterdir())
    code, _, err = cli(capsys, "distill", str(world["teacher"]), "--student",
                       str(world["student"]), "--dataset", str(world["train"]),
                       "--max-steps", "1", "--quiet", "--resume", "-o", str(target))
    assert code in (0, 2), f"{case}: exit {code}\n{err[-2000:]}"
    assert "Traceback" not in err, f"{case}: {err[-2000:]}"
    assert sorted(p.name for p in world["users"].iterdir()) == users, case
    assert (world["users"] / "00000.safetensors").read_bytes() == b"my weights", case
    assert (world["teacher"] / "best" / "config.json").is_file(), case
    line = err.strip().splitlines()[-1] if err.strip() else ""
    if code == 2:  # one error line (after the model announcement of a resume, if any)
        lines = err.strip().splitlines()
        assert line.startswith("error: ") and len(lines) <= 2, f"{case}: {err!r}"
    return code, line


def test_named_tampered_requests_are_one_line(world, capsys) -> None:
    untouched = case_folder(world, "untouched")  # the cases start from a sound resume
    assert outcome(world, capsys, "untouched", untouched)[0] == 0
    assert json.loads((untouched / "metrics.json").read_text())["status"] == "finished"
    for case, (key, change) in named(world).items():
        target = case_folder(world, case)
        change(target / "distill.json")
        code, line = outcome(world, capsys, case, target)
        assert code == 2, f"{case}: resumed"
        assert "distill.json" in line, f"{case}: {line}"
        if key is not None:
            assert key in line, f"{case}: {line}"


NASTY: list[object] = [None, -1, 0, 1.5, "x", "", 10**30, [], {}, True, [1, "a"],
                       {"a": {"b": []}}, "𝔘\u202e\x00", float("inf")]


def test_random_tampering_is_one_line_or_a_resume(world, capsys) -> None:
    rng = random.Random(37)
    codes = []
    keys = sorted(json.loads((world["paused"] / "distill.json").read_text()))
    for i in range(CASES):
        key, value = rng.choice(keys), rng.choice(NASTY)
        case = f"case {i}: {key}={value!r}"
        target = case_folder(world, f"sweep-{i}")
        field(key, value)(target / "distill.json")
        codes.append(outcome(world, capsys, case, target)[0])
    assert 2 in codes
