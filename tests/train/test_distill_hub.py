"""``seqrep distill org/name[@rev]`` (issue 40 item 3, distill's teacher): a teacher on the
Hugging Face Hub is resolved as predict, evaluate and serve resolve it (a checked snapshot in
huggingface_hub's cache), labels as its run folder does, is recorded by id and commit, and
nothing of the distillation is ever written into (or moved out of) that cache. Offline: the
teacher's files are laid out as snapshot_download leaves them, with ``HF_HUB_OFFLINE=1``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hubcache import COMMIT, folder_files, lay_out_cache, tree, use_cache
from safetensors.torch import load_file
from support import cli, hand_made_teacher, write_corpus

TEACHER = "acme/tiny-teacher"
CARD = b"---\nlibrary_name: seqrep\n---\n# a teacher\n"


@pytest.fixture(scope="module")
def world(tiny, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("distill-hub")
    return {"teacher": hand_made_teacher(tiny("llama"), root / "teacher"),
            "student": Path(tiny("qwen2")),
            "train": write_corpus(root / "train.txt", 6, seed=2),
            "dev": write_corpus(root / "dev.txt", 2, seed=3)}


@pytest.fixture
def hub(world, tmp_path, monkeypatch) -> Path:
    """The cache holding the teacher's labeler (what ``best/`` holds, and a card)."""
    root = use_cache(tmp_path / "hf-cache", monkeypatch)
    lay_out_cache(root, TEACHER, {**folder_files(world["teacher"] / "best"), "README.md": CARD})
    return root


def args(world: dict[str, Path], teacher: str | Path, out: Path, *extra: str) -> list[str]:
    return ["distill", str(teacher), "--student", str(world["student"]), "--dataset",
            str(world["train"]), "--eval-split", str(world["dev"]), "--test-split", "",
            "--max-steps", "1", "-r", "0", "--exit-layer", "2", "--quiet", "-o", str(out),
            *extra]


def labels(out: Path) -> list[dict]:
    """The teacher's labels a distillation cached, chunk by chunk."""
    return [load_file(str(p)) for p in sorted((out / "teacher-labels").glob("*.safetensors"))]


def one_line(code: int, err: str, *needles: str) -> None:
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (code, err)
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def test_a_hub_teacher_labels_as_its_run_folder(world, hub, tmp_path, capsys) -> None:
    from seqrep.config import LabelerConfig, TrainConfig
    from seqrep.train.distill import distill

    before = tree(hub)
    code, _, err = cli(capsys, *args(world, world["teacher"], tmp_path / "local"))
    assert code == 0, err
    code, _, err = cli(capsys, *args(world, TEACHER, tmp_path / "hub"))
    assert code == 0, err
    # the Python equivalent, pinned to the commit
    metrics = distill(f"{TEACHER}@{COMMIT}",
                      LabelerConfig(model=str(world["student"]), repetitions=0, exit_layer=2),
                      TrainConfig(dataset=str(world["train"]), eval_split=str(world["dev"]),
                                  test_split=None, epochs=1, max_steps=1),
                      tmp_path / "pinned", quiet=True)
    assert metrics["status"] == "finished"
    local = labels(tmp_path / "local")
    assert local
    for name in ("hub", "pinned"):
        got = labels(tmp_path / name)
        assert len(got) == len(local)
        for a, b in zip(local, got):
            assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a), name
        record = json.loads((tmp_path / name / "run.json").read_text())["distill"]
        assert record["teacher"] == f"{TEACHER}@{COMMIT}", record
        assert str(hub) not in json.dumps(record)
    assert tree(hub) == before


def test_a_student_never_goes_into_the_hub_cache(world, hub, tmp_path, capsys) -> None:
    repo = hub / ("models--" + TEACHER.replace("/", "--"))
    snapshot = repo / "snapshots" / COMMIT
    before = tree(hub)
    cases = [(snapshot, ()), (snapshot / "student", ()), (repo / "blobs" / "student", ()),
             (hub, ("--overwrite",)), (tmp_path, ("--overwrite",)),
             (tmp_path / "s1", ("--teacher-labels", str(hub / "labels"))),
             (tmp_path / "s2", ("--teacher-labels", str(snapshot)))]
    for out, extra in cases:
        code, _, err = cli(capsys, *args(world, TEACHER, out, *extra))
        one_line(code, err, "huggingface_hub cache")
        assert tree(hub) == before, (out, extra)
    assert not (tmp_path / "s1").exists() and not (tmp_path / "s2").exists()


def test_a_missing_or_tampered_hub_teacher_is_one_line(world, hub, tmp_path, capsys) -> None:
    out = tmp_path / "student"
    code, _, err = cli(capsys, *args(world, "acme/no-such-teacher", out))
    one_line(code, err, "acme/no-such-teacher", "HF_HUB_OFFLINE")
    code, _, err = cli(capsys, *args(world, f"{TEACHER}@v9", out))
    one_line(code, err, TEACHER, "v9")
    snapshot = hub / ("models--" + TEACHER.replace("/", "--")) / "snapshots" / COMMIT
    (snapshot / "evil.py").write_text("raise SystemExit('ran')\n")
    code, _, err = cli(capsys, *args(world, TEACHER, out))
    one_line(code, err, "evil.py")
    assert not out.exists()


def test_a_resumed_distillation_keeps_its_hub_teacher(world, hub, tmp_path, capsys) -> None:
    out = tmp_path / "paused"
    code, _, err = cli(capsys, *args(world, TEACHER, out, "--epochs", "2"))
    assert code == 0 and (out / "distill.json").is_file(), err
    assert json.loads((out / "distill.json").read_text())["teacher"] == f"{TEACHER}@{COMMIT}"
    code, _, err = cli(capsys, *args(world, world["teacher"], out, "--resume"))
    assert code == 2 and "keeps its teacher" in err.strip().splitlines()[-1], err
    code, _, err = cli(capsys, *args(world, TEACHER, out, "--resume"))
    assert code == 0, err


def test_a_hub_teacher_s_key_is_its_files(world, hub) -> None:
    """The key hashed ``best/`` only: a snapshot (no ``best/``) gave every Hub teacher the
    key of no files, so their students could share one label cache."""
    import hashlib

    from seqrep.train.teacher_cache import teacher_key

    files = {**folder_files(world["teacher"] / "best"), "README.md": CARD}
    h = hashlib.sha256(b"seqrep teacher files\n")
    for rel in sorted(files, key=lambda r: tuple(Path(r).parts)):
        h.update(f"{rel}\0{hashlib.sha256(files[rel]).hexdigest()}\n".encode())
    snapshot = hub / ("models--" + TEACHER.replace("/", "--")) / "snapshots" / COMMIT
    assert teacher_key(snapshot) == h.hexdigest()
