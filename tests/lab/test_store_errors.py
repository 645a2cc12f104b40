"""A results store that no seqrep writer made (a huge number, deep nesting, a field of the wrong
type) is one line naming the file and line, exit 2, never a traceback in ``seqrep report``."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from seqrep.errors import DataError
from seqrep.lab.report import group, markdown, paired
from seqrep.lab.results import read_sources, record_problem

RECORD = {"run_id": "a", "name": "x",
          "config": {"labeler": {"model": "m", "repetitions": 1, "unmask": "none",
                                 "exit_layer": None, "finetune": "full"},
                     "train": {"dataset": "d", "seed": 1, "epochs": 1, "lr": 1e-3}},
          "metrics": {"status": "finished", "validation": {"f1": 0.5},
                      "test": {"f1": 0.4, "sentences": 3}, "train_seconds": 1.0}}


def _report(store: Path, out: Path, capsys: pytest.CaptureFixture) -> tuple[int, str]:
    from seqrep.cli.app import main

    with pytest.raises(SystemExit) as ex:
        main(["report", str(store), "--out", str(out)])
    return ex.value.code, capsys.readouterr().err


@pytest.mark.parametrize("line", [
    json.dumps(RECORD).replace('"train_seconds": 1.0', '"train_seconds": ' + "9" * 5000),
    '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}",
    json.dumps({**RECORD, "config": {"labeler": [], "train": 5}}),
    json.dumps({**RECORD, "metrics": [1]}),
    json.dumps({**RECORD, "metrics": {**RECORD["metrics"], "test": {"f1": "x"}}}),
], ids=["5000-digits", "deep", "config-types", "metrics-list", "f1-string"])
def test_report_on_a_bad_store_is_one_line(line: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture) -> None:
    store = tmp_path / "r.jsonl"
    store.write_text(json.dumps(RECORD) + "\n" + line + "\n", encoding="utf-8")
    code, err = _report(store, tmp_path / "out", capsys)
    assert code == 2 and "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {store}:2: "), err
    assert not (tmp_path / "out" / "results.md").exists()


def _leaves(value: object, path: tuple = ()) -> list[tuple]:
    if isinstance(value, dict):
        return [path] + [p for k, v in value.items() for p in _leaves(v, (*path, k))]
    return [path]


def _set(record: dict, path: tuple, value: object) -> dict:
    record = copy.deepcopy(record)
    target = record
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return record


@pytest.mark.parametrize("junk", [[], "x", {}, None, True, 1.5, -3])
def test_every_field_of_the_wrong_type_is_caught_or_harmless(junk: object) -> None:
    """Each field of a finished record replaced by a value of another type: the check names a
    problem, or the report's tables build from the record without an error."""
    for path in _leaves(RECORD)[1:]:
        rec = _set(RECORD, path, junk)
        if record_problem(rec) is not None:
            continue
        records = [rec, _set(RECORD, ("config", "labeler", "repetitions"), 0)]
        markdown(group(records))
        for against in ("causal", "depth"):
            paired(records, against)


def test_a_good_store_reads(tmp_path: Path) -> None:
    store = tmp_path / "r.jsonl"
    store.write_text(json.dumps(RECORD) + "\n", encoding="utf-8")
    assert read_sources([store]) == [RECORD]
    store.write_text(json.dumps({**RECORD, "metrics": {"status": "failed"}}) + "\n",
                     encoding="utf-8")
    assert len(read_sources([store])) == 1
    store.write_text(json.dumps(_set(RECORD, ("config", "train", "seed"), "1")) + "\n",
                     encoding="utf-8")
    with pytest.raises(DataError, match=r"r\.jsonl:1: \"config\.train\.seed\" is '1'"):
        read_sources([store])


@pytest.mark.parametrize(("metrics", "problem"), [
    ({**RECORD["metrics"], "test": {"f1": "x"}}, "\"metrics.test.f1\" is 'x'; expected a number"),
    ([1], "metrics.json is not an object"),
], ids=["f1-string", "metrics-list"])
def test_report_on_a_bad_run_folder_is_one_line(metrics: object, problem: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture) -> None:
    """A run folder's run.json / metrics.json are checked as a store's records are."""
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps(RECORD["config"]), encoding="utf-8")
    (folder / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    code, err = _report(folder, tmp_path / "out", capsys)
    assert code == 2 and "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {folder}: "), err
    assert problem in lines[0], err
    assert not (tmp_path / "out" / "results.md").exists()
