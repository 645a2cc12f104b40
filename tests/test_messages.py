"""Messages a new user meets (issue 37, item 21): each says what is wrong and what to type."""

from __future__ import annotations

from pathlib import Path

from inprocess import seqrep


def test_a_run_path_that_does_not_exist_says_so(tmp_path: Path) -> None:
    missing = tmp_path / "runs" / "typo"
    for args in (["predict", str(missing), "Obama visited Paris."],
                 ["export", str(missing), "--onnx", str(tmp_path / "onnx")]):
        ran = seqrep(*args)
        assert ran.returncode == 2 and ran.stderr.count("\n") == 1, ran.stderr
        assert f"{missing} does not exist" in ran.stderr and "config.json" not in ran.stderr


def test_a_folder_that_is_no_run_still_says_no_config_json(tmp_path: Path) -> None:
    ran = seqrep("predict", str(tmp_path), "Obama visited Paris.")
    assert ran.returncode == 2 and "is not a saved labeler (no config.json)" in ran.stderr
