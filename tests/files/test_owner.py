"""The one owner of writes and deletes (seqrep.files.owner): --overwrite removes only what
seqrep wrote, and bookkeeping names taken by a user's file are refused, never written
through or deleted. Expected outcomes are the user's own files, byte for byte."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support import cli

from seqrep.errors import SeqrepError
from seqrep.files import owner


def _one_line_refusal(code: int, err: str, *words: str) -> None:
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    for word in words:
        assert word in err, (word, err)


def _train(capsys, tiny, data: Path, out: Path, *more: str) -> tuple[int, str, str]:
    return cli(capsys, "train", "--model", tiny("llama"), "--dataset", str(data),
               "--test-split", "", "--epochs", "1", "--exit-layer", "1", "--max-steps", "2",
               "-o", str(out), "--quiet", *more)


@pytest.fixture(scope="module")
def trained(tiny, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A finished tiny run (copied by each test that changes it) and its data."""
    import shutil

    from support import train_tiny_run

    run, data = train_tiny_run(tiny("llama"), tmp_path_factory.mktemp("owned"))
    shutil.rmtree(run / "checkpoint", ignore_errors=True)
    return run, data


def test_a_finished_run_lists_every_file_it_holds(trained) -> None:
    run, _ = trained
    kind, files = owner.read_manifest(run)
    on_disk = {p.relative_to(run).as_posix() for p in run.rglob("*")
               if not p.is_dir()} - {owner.MANIFEST}
    assert kind == "run" and on_disk and on_disk <= files
    assert {"run.json", "metrics.json", "log.jsonl", "best/config.json"} <= on_disk


def test_train_overwrite_keeps_the_dataset_and_notes_in_the_run_folder(
        trained, tiny, tmp_path: Path, capsys) -> None:
    """Item 3: `train --dataset runs/x/mydata.jsonl --output runs/x --overwrite` deleted the
    dataset it trains on and the user's NOTES.md."""
    import shutil

    run = shutil.copytree(trained[0], tmp_path / "x")
    mydata = run / "mydata.txt"
    shutil.copy(trained[1], mydata)
    (run / "NOTES.md").write_text("my notes")
    code, _, err = _train(capsys, tiny, mydata, run, "--overwrite")
    _one_line_refusal(code, err, "NOTES.md was not written by seqrep", "--overwrite")
    assert (run / "NOTES.md").read_text() == "my notes"
    assert mydata.read_bytes() == trained[1].read_bytes()
    assert (run / "best" / "config.json").is_file()  # the old run is untouched too


def test_a_planted_run_json_does_not_make_a_folder_replaceable(tiny, tmp_path: Path) -> None:
    """Item 3: a planted run.json passed the run check and train_labeler(..., overwrite=True)
    deleted planted/src/thesis.tex."""
    from seqrep import train_labeler

    planted = tmp_path / "planted"
    (planted / "src").mkdir(parents=True)
    (planted / "run.json").write_text(json.dumps({"labeler": {"foo": 1}, "train": {"bar": 2}}))
    (planted / "src" / "thesis.tex").write_text("years of work")
    with pytest.raises(SeqrepError, match="seqrep did not write it"):
        train_labeler([(["Ann", "ran"], ["B-PER", "O"])] * 4, model=tiny("llama"),
                      output=planted, overwrite=True, exit_layer=1, epochs=1, quiet=True)
    assert (planted / "src" / "thesis.tex").read_text() == "years of work"


def test_export_overwrite_removes_only_the_earlier_export(trained, tmp_path: Path,
                                                          capsys) -> None:
    """Item 1: re-exporting over an earlier export deleted the user's NOTES.md and
    mydeploy/Dockerfile; export had no --overwrite."""
    pytest.importorskip("onnxscript")
    run = trained[0]
    out = tmp_path / "onnx"
    code, _, err = cli(capsys, "export", str(run), "--onnx", str(out), "--no-check")
    assert code == 0, err
    first = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    (out / "NOTES.md").write_text("deploy notes")
    (out / "mydeploy").mkdir()
    (out / "mydeploy" / "Dockerfile").write_text("FROM scratch")
    code, _, err = cli(capsys, "export", str(run), "--onnx", str(out), "--no-check")
    _one_line_refusal(code, err, "--overwrite")
    code, _, err = cli(capsys, "export", str(run), "--onnx", str(out), "--no-check",
                       "--overwrite")
    _one_line_refusal(code, err, "NOTES.md was not written by seqrep")
    assert (out / "NOTES.md").read_text() == "deploy notes"
    assert (out / "mydeploy" / "Dockerfile").read_text() == "FROM scratch"
    (out / "NOTES.md").unlink()
    (out / "mydeploy" / "Dockerfile").unlink()
    (out / "mydeploy").rmdir()
    code, _, err = cli(capsys, "export", str(run), "--onnx", str(out), "--no-check",
                       "--overwrite")
    assert code == 0, err
    assert {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} == first


def _predict(capsys, run: Path, src: Path, out: Path, *more: str) -> tuple[int, str, str]:
    return cli(capsys, "predict", str(run), "--input", str(src), "--output", str(out), *more)


def test_predict_never_writes_through_or_deletes_a_users_bookkeeping_name(
        trained, tmp_path: Path, capsys) -> None:
    """Item 2: a link at d.parquet.partial.parquet had predictions written into the file it
    points to; a user's a.jsonl.partial.json or c.parquet.partial.parquet was overwritten,
    then deleted, exit 0."""
    pytest.importorskip("pyarrow")
    run = trained[0]
    src = tmp_path / "in.txt"
    src.write_text("Ann met Bob in Paris .\nCid ran .\n")
    precious = tmp_path / "precious.parquet"
    precious.write_bytes(b"the user's table")
    os.symlink(precious, tmp_path / "d.parquet.partial.parquet")
    code, _, err = _predict(capsys, run, src, tmp_path / "d.parquet")
    assert code == 0, err
    assert precious.read_bytes() == b"the user's table"
    assert (tmp_path / "d.parquet.partial.parquet").is_symlink()
    # a user's files under the bookkeeping names: refused, --overwrite or not, unchanged
    for name, taken in (("a.jsonl", "a.jsonl.partial.json"), ("b.jsonl", "b.jsonl.partial")):
        (tmp_path / taken).write_text("the user's file")
        for more in ((), ("--overwrite",)):
            code, _, err = _predict(capsys, run, src, tmp_path / name, *more)
            _one_line_refusal(code, err, taken, "not written by seqrep")
            assert (tmp_path / taken).read_text() == "the user's file"
        assert not (tmp_path / name).exists()
    (tmp_path / "c.parquet.partial.parquet").write_text("the user's file")
    code, _, err = _predict(capsys, run, src, tmp_path / "c.parquet")
    assert code == 0, err
    assert (tmp_path / "c.parquet.partial.parquet").read_text() == "the user's file"


def test_an_existing_prediction_parquet_is_replaced_only_with_overwrite(
        trained, tmp_path: Path, capsys) -> None:
    """Item 2: an existing parquet with the records' columns was replaced without
    --overwrite."""
    pytest.importorskip("pyarrow")
    run = trained[0]
    src = tmp_path / "in.txt"
    src.write_text("Ann met Bob .\n")
    out = tmp_path / "d.parquet"
    assert _predict(capsys, run, src, out)[0] == 0
    before = out.read_bytes()
    src.write_text("Cid ran .\n")
    code, _, err = _predict(capsys, run, src, out)
    _one_line_refusal(code, err, "--overwrite")
    assert out.read_bytes() == before
    assert _predict(capsys, run, src, out, "--overwrite")[0] == 0
    assert out.read_bytes() != before


def test_remove_deletes_only_listed_files_and_refuses_before_deleting(tmp_path: Path) -> None:
    root = owner.claim(tmp_path / "out", "test")
    from seqrep.files.atomic import write_json

    write_json(root / "a.json", {"a": 1})
    (root / "sub").mkdir()
    write_json(root / "sub" / "b.json", {"b": 1})
    (root / "sub" / "mine.txt").write_text("mine")
    owner.release(root)
    with pytest.raises(owner.NotOwned, match="sub/mine.txt"):
        owner.remove(root)
    assert (root / "a.json").is_file() and (root / "sub" / "b.json").is_file()
    (root / "sub" / "mine.txt").unlink()
    owner.remove(root)
    assert not root.exists()


def test_a_link_in_a_listed_place_is_removed_not_followed(tmp_path: Path) -> None:
    root = owner.claim(tmp_path / "out", "test")
    from seqrep.files.atomic import write_json

    write_json(root / "a.json", {"a": 1})
    owner.release(root)
    precious = tmp_path / "precious.txt"
    precious.write_text("keep")
    (root / "a.json").unlink()
    os.symlink(precious, root / "a.json")
    owner.remove(root)
    assert precious.read_text() == "keep" and not root.exists()


def test_a_manifest_that_is_a_link_or_a_fifo_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "out"
    root.mkdir()
    (root / "x").write_text("x")
    os.symlink("/dev/zero", root / owner.MANIFEST)
    with pytest.raises(owner.NotOwned, match="link"):
        owner.check_folder(root, True)
    (root / owner.MANIFEST).unlink()
    os.mkfifo(root / owner.MANIFEST)
    with pytest.raises(owner.NotOwned, match="FIFO"):
        owner.check_folder(root, True)


def test_create_exclusive_refuses_a_taken_name_and_a_link(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("user")
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    for name in ("taken", "dangling"):
        with pytest.raises(owner.NotOwned, match="seqrep did not write it"):
            owner.create_exclusive(tmp_path / name)
    assert (tmp_path / "taken").read_text() == "user"
    assert not (tmp_path / "nowhere").exists()


def test_a_partial_output_replaced_by_another_file_is_not_resumed_or_deleted(
        trained, tmp_path: Path) -> None:
    """A partial output is seqrep's only while it is the file its record names: a user's file
    put in its place is refused, with --overwrite too, and kept, even where the file system
    gives it the inode number of the removed one (the identity alone cannot tell them)."""
    from seqrep.errors import ConfigError
    from seqrep.model.labeler import SequenceLabeler
    from seqrep.predict.stream import labeler_identity, predict_file, prepare

    lab = SequenceLabeler.from_pretrained(trained[0])
    src = tmp_path / "in.txt"
    src.write_text("Ann ran .\nBob ran .\nCid ran .\n")
    out = tmp_path / "out.jsonl"
    identity = labeler_identity(lab, decoding=None, words=False)

    def stop(done: int, total: int) -> None:
        if done >= 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        predict_file(lab, src, out, chunk=1, progress=stop,
                     plan=prepare(src, out, identity))
    partial = tmp_path / "out.jsonl.partial"
    kept = partial.read_bytes()
    assert kept.count(b"\n") == 1
    prepare(src, out, identity)  # its own partial output: resumed
    partial.unlink()
    for mine in (b"my notes\n", b"my notes", b"my notes\n" + kept):
        partial.write_bytes(mine)  # a new file, which may get the freed inode's number
        for overwrite in (False, True):
            with pytest.raises(ConfigError, match="not written by seqrep"):
                prepare(src, out, identity, overwrite=overwrite)
        assert partial.read_bytes() == mine
        partial.unlink()


@pytest.mark.parametrize("name", ["../outside.txt", "/etc/passwd", "a//b", "./a"])
def test_a_list_naming_a_path_outside_its_folder_is_no_list_of_seqreps(
        tmp_path: Path, name: str) -> None:
    root = tmp_path / "out"
    root.mkdir()
    (root / "a.json").write_text("{}")
    (root / owner.MANIFEST).write_text(json.dumps(
        {"format": "seqrep-files", "kind": "run", "files": ["a.json", name]}))
    with pytest.raises(owner.NotOwned, match="not a path inside its folder"):
        owner.check_folder(root, True)
    assert (root / "a.json").read_text() == "{}"
