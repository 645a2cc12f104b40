"""``seqrep predict --input IN --output OUT`` never writes, renames or deletes its own input:
besides ``OUT`` it writes ``OUT.partial`` and ``OUT.partial.json`` (and deletes or renames
them), so an input that is any of the three, under any spelling (``./``, a symbolic or hard
link), is refused in one line before anything is touched (issue 37, item 1)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.inprocess import seqrep

TEXTS = "Obama visited Paris.\nMaria left Tokyo today!\n"


@pytest.fixture
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading a model fails the test: the refusal comes before any work."""
    import seqrep.export

    def fail(*a: object, **k: object) -> None:
        raise AssertionError("the model was loaded")

    # the commands load through seqrep.export.load; programs through load_labeler
    monkeypatch.setattr(seqrep.export, "load_labeler", fail)
    monkeypatch.setattr(seqrep.export, "load", fail)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _refused(tmp_path: Path, *args: str, words: tuple[str, ...] = ()) -> None:
    before = _files(tmp_path)
    ran = seqrep("predict", str(tmp_path / "run"), *args)
    assert ran.returncode == 2 and "Traceback" not in ran.stderr, ran.stderr
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), ran.stderr
    for w in words:
        assert w in lines[0], ran.stderr
    assert _files(tmp_path) == before  # nothing written, renamed or deleted


def test_input_named_as_the_partial_record_is_refused(tmp_path: Path, no_model) -> None:
    src = tmp_path / "data.partial.json"
    src.write_text(TEXTS, encoding="utf-8")
    _refused(tmp_path, "--input", str(src), "--output", str(tmp_path / "data"),
             words=("--input", "data.partial.json"))


def test_input_named_as_the_partial_output_is_refused_even_with_overwrite(
        tmp_path: Path, no_model) -> None:
    src = tmp_path / "out.jsonl.partial"
    src.write_text(TEXTS, encoding="utf-8")
    _refused(tmp_path, "--input", str(src), "--output", str(tmp_path / "out.jsonl"),
             "--overwrite", words=("--input", "out.jsonl.partial"))


def test_other_spellings_of_the_bookkeeping_paths_are_refused(
        tmp_path: Path, no_model, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("data.partial.json").write_text(TEXTS, encoding="utf-8")
    # ./ and a parent hop name the same path as the bookkeeping file of OUT
    _refused(tmp_path, "--input", "./data.partial.json", "--output", "data")
    os.mkdir("sub")
    _refused(tmp_path, "--input", "sub/../data.partial.json", "--output", "./data")


def test_a_link_to_the_input_in_the_place_of_the_partial_output_is_refused(
        tmp_path: Path, no_model) -> None:
    src = tmp_path / "texts.txt"
    src.write_text(TEXTS, encoding="utf-8")
    # a symbolic link: a partial output is truncated and appended to through it, so one
    # that leads to the input is refused, as the input named directly is
    (tmp_path / "out.jsonl.partial").symlink_to(src)
    _refused(tmp_path, "--input", str(src), "--output", str(tmp_path / "out.jsonl"),
             "--overwrite", words=("--input",))
    (tmp_path / "out.jsonl.partial").unlink()
    # a hard link: one file under two names
    os.link(src, tmp_path / "out.jsonl.partial.json")
    _refused(tmp_path, "--input", str(src), "--output", str(tmp_path / "out.jsonl"),
             words=("--input",))


def test_an_input_beside_the_output_is_still_accepted(tmp_path: Path, no_model) -> None:
    """The check names the three paths only: ``data.partial.json.txt`` is an ordinary
    input, and the command goes on to load the model (here: the stand-in that fails)."""
    src = tmp_path / "data.partial.json.txt"
    src.write_text(TEXTS, encoding="utf-8")
    with pytest.raises(AssertionError, match="the model was loaded"):
        from seqrep.cli.app import main

        main(["predict", str(tmp_path / "run"), "--input", str(src), "--output",
              str(tmp_path / "data")])


_PREPARE = """
import sys
from seqrep.errors import SeqrepError
from seqrep.predict.stream import prepare
try:
    prepare(sys.argv[1], sys.argv[2], {"labeler": "x"}, overwrite=sys.argv[3] == "1")
except SeqrepError as err:
    print("refused:", err)
else:
    print("accepted")
"""


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_partial_record_that_is_a_fifo_is_read_bounded(tmp_path: Path,
                                                        overwrite: bool) -> None:
    """``OUT.partial.json`` is read through the bounded reader: a FIFO there (or a link to
    /dev/zero) is no record, not a read that never ends. Run in a child with a time limit:
    a reader that blocks fails the test instead of hanging the suite."""
    import subprocess
    import sys

    src = tmp_path / "in.txt"
    src.write_text(TEXTS, encoding="utf-8")
    (tmp_path / "out.jsonl.partial").write_text("")
    os.mkfifo(tmp_path / "out.jsonl.partial.json")
    try:
        done = subprocess.run([sys.executable, "-c", _PREPARE, str(src),
                               str(tmp_path / "out.jsonl"), "1" if overwrite else "0"],
                              capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("prepare blocked reading OUT.partial.json (a FIFO)")
    # no readable record: not seqrep's, so refused, --overwrite or not (never deleted)
    assert done.stdout.startswith("refused: ") and done.returncode == 0, \
        done.stdout + done.stderr
    assert "not written by seqrep" in done.stdout
    assert (tmp_path / "out.jsonl.partial").exists()
    assert src.read_text(encoding="utf-8") == TEXTS


def test_a_partial_output_that_is_no_regular_file_is_refused(tmp_path: Path) -> None:
    """A partial output is truncated and appended to on resume: one that is a FIFO (with a
    record that matches) is refused before it is opened, even with --overwrite: the record
    does not name it (seqrep creates its partial output itself, a regular file)."""
    from seqrep.errors import ConfigError
    from seqrep.files.atomic import write_json
    from seqrep.predict.stream import prepare

    src = tmp_path / "in.txt"
    src.write_text(TEXTS, encoding="utf-8")
    out = tmp_path / "out.jsonl"
    plan = prepare(src, out, {"labeler": "x"})
    write_json(tmp_path / "out.jsonl.partial.json", plan.made_from)
    os.mkfifo(tmp_path / "out.jsonl.partial")
    for overwrite in (False, True):
        with pytest.raises(ConfigError, match="out.jsonl.partial exists and was not written"):
            prepare(src, out, {"labeler": "x"}, overwrite=overwrite)
    assert (tmp_path / "out.jsonl.partial").exists()
