"""``seqrep data stats`` (src/seqrep/cli/data.py), driven through the real app."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inprocess import Ran, seqrep
from typer.testing import CliRunner

from seqrep.cli.app import app

runner = CliRunner()


def stats_json(*args: str) -> dict:
    result = runner.invoke(app, ["data", "stats", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_json_keys_and_figures(fixtures: Path) -> None:
    out = stats_json(str(fixtures / "tiny.conll"))
    assert list(out) == ["sentences", "tokens", "spans", "spans_per_label", "labels", "repaired",
                         "notes"]
    assert out["sentences"] == 5 and out["tokens"] == 23 and out["spans"] == 8
    assert out["spans_per_label"] == {"LOC": 3, "MISC": 1, "ORG": 2, "PER": 2}
    assert out["labels"] == ["LOC", "MISC", "ORG", "PER"] and out["repaired"] == 0


def test_reader_options(fixtures: Path) -> None:
    assert stats_json(str(fixtures / "tiny.conll"), "--tag-column", "1")["spans"] == 23
    assert stats_json(str(fixtures / "tiny.conll"), "--tag-column", "-2")["labels"] == [
        "NP", "PP", "VP"]
    assert stats_json(str(fixtures / "tiny_absa.txt"), "--polarity")["labels"] == [
        "NEG", "NEU", "POS"]
    assert stats_json(str(fixtures / "tiny.conllu"), "--label-column", "xpos")["spans"] == 11
    assert stats_json(str(fixtures / "nlupp"), "--domain", "hotels", "--fold", "0")[
        "sentences"] == 2
    out = stats_json(str(fixtures / "tiny.jsonl"), "--format", "jsonl", "--scheme", "BIO")
    assert out["repaired"] == 1 and len(out["notes"]) == 1


def test_human_output(fixtures: Path) -> None:
    result = runner.invoke(app, ["data", "stats", str(fixtures / "tiny_absa.xml")])
    assert result.exit_code == 0, result.output
    for text in ("sentences", "words", "spans", "repaired tags", "labels (1): ASP",
                 "notes (4): cut mid-word 1", "'dress cod'"):
        assert text in result.stdout


def test_user_errors_raise_seqrep_errors(fixtures: Path) -> None:
    result = runner.invoke(app, ["data", "stats", str(fixtures / "tiny.conll"), "--strict",
                                 "--polarity"])
    assert result.exit_code != 0
    assert "has no option 'polarity'" in str(result.exception)


def test_real_named_datasets(seqrep_data: Path) -> None:
    out = stats_json("conll2003", "--split", "test")
    assert (out["sentences"], out["tokens"], out["spans"]) == (3_453, 46_435, 5_648)
    assert stats_json("nlupp", "--split", "dev")["sentences"] == 309
    assert stats_json("rest14", "--split", "validation")["sentences"] == 304


def run_main(*args: str, env: dict[str, str] | None = None) -> Ran:
    """The console script's entry point, in-process (tests/inprocess.py)."""
    return seqrep(*args, env=env)


@pytest.mark.parametrize("make, expected", [
    (lambda p: p.write_text("a NN B-X\nb NN\n"), "x.conll:2: expected 3 columns like line 1"),
    (lambda p: p.write_text(""), "x.conll: the file is empty"),
    (lambda p: p.write_bytes(b"a O\nCaf\xe9 O\n"), "x.conll:2: not valid UTF-8"),
])
def test_entry_point_prints_one_line_and_exits_2(tmp_path: Path, make, expected: str) -> None:  # noqa: ANN001
    path = tmp_path / "x.conll"
    make(path)
    proc = run_main("data", "stats", str(path))
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and expected in proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_entry_point_bad_column_offset_split_and_name(tmp_path: Path) -> None:
    conll = tmp_path / "x.conll"
    conll.write_text("a NN B-X\n")
    proc = run_main("data", "stats", str(conll), "--tag-column", "7")
    assert proc.returncode == 2 and "x.conll:1: tag column 7 does not exist" in proc.stderr
    jsonl = tmp_path / "x.jsonl"
    jsonl.write_text('{"text": "abc", "spans": [{"start": 0, "end": 9, "label": "X"}]}\n')
    proc = run_main("data", "stats", str(jsonl))
    assert proc.returncode == 2 and "x.jsonl:1: span 0 (X) has offsets 0-9 outside" in proc.stderr
    proc = run_main("data", "stats", "conll2003", "--split", "valid", env={"SEQREP_DATA": ""})
    assert proc.returncode == 2
    assert proc.stderr == ("error: unknown split 'valid'; expected one of train, validation, "
                           "test (or dev for validation)\n")
    proc = run_main("data", "stats", "imdb")
    assert proc.returncode == 2 and "unknown dataset 'imdb'; expected one of" in proc.stderr
