"""``seqrep predict --input/--output`` never loses or mixes data: the input is never the output,
an existing file is replaced only when it is a seqrep output (or with --overwrite), a partial
output is resumed only for the input and labeler it was made from, a bad output path is refused
before any work, and a JSONL or --words input reads alike with and without --output."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import seqrep.predict.stream
from seqrep.cli.app import main
from seqrep.errors import ConfigError
from seqrep.model.labeler import SequenceLabeler
from seqrep.predict.stream import predict_file
from seqrep.predict.tagger import predict_text

TEXTS = ["Obama visited Paris.", "", "Maria left Tokyo today!",
         "Peter Blackburn and Angela Merkel met in Berlin. Then they left."] * 5 + ["last"]


@pytest.fixture(scope="module")
def folder(tiny, tmp_path_factory: pytest.TempPathFactory) -> Path:
    lab = SequenceLabeler.from_model(tiny("llama"), labels=["O", "B-PER", "I-PER"],
                                     finetune="frozen")
    return lab.save_pretrained(tmp_path_factory.mktemp("predict_io") / "lab")


@pytest.fixture(scope="module")
def lab(folder: Path) -> SequenceLabeler:
    return SequenceLabeler.from_pretrained(folder)


def _cli(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as ex:
        code = ex.code
    got = capsys.readouterr()
    return code, got.out, got.err


def _records(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_bytes().decode().split("\n")[:-1]]


def _source(tmp_path: Path, texts: list[str] = TEXTS, name: str = "in.txt") -> Path:
    src = tmp_path / name
    src.write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    return src


def _refused(code: int, err: str, *words: str) -> None:
    assert code == 2 and "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for w in words:
        assert w in lines[0], err


@pytest.fixture
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading a model fails the test: the refusals come before any work."""
    import seqrep.export

    def fail(*a: object, **k: object) -> None:
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(seqrep.export, "load_labeler", fail)


def test_the_input_is_never_the_output(folder: Path, tmp_path: Path, capsys, no_model) -> None:
    src = _source(tmp_path)
    before = src.read_bytes()
    code, _, err = _cli(capsys, "predict", folder, "--input", src, "--output", src)
    _refused(code, err, "is the input")
    link = tmp_path / "link.txt"
    link.symlink_to(src)
    code, _, err = _cli(capsys, "predict", folder, "--input", src, "--output", link,
                        "--overwrite")
    _refused(code, err, "is the input")
    assert src.read_bytes() == before


def test_an_existing_file_is_replaced_only_with_overwrite(
        folder: Path, lab: SequenceLabeler, tmp_path: Path, capsys) -> None:
    src = _source(tmp_path, TEXTS[:3])
    out = tmp_path / "notes.txt"
    out.write_text("my notes\n", encoding="utf-8")
    code, _, err = _cli(capsys, "predict", folder, "--input", src, "--output", out)
    _refused(code, err, "--overwrite", str(out))
    assert out.read_text(encoding="utf-8") == "my notes\n"
    code, _, err = _cli(capsys, "predict", folder, "--input", src, "--output", out,
                        "--overwrite")
    assert code == 0, err
    expected = predict_text(lab, TEXTS[:3])
    assert _records(out) == expected
    # a finished seqrep output too: the next run without --overwrite is refused
    code, _, err = _cli(capsys, "predict", folder, "--input", _source(tmp_path, TEXTS[3:5]),
                        "--output", out)
    _refused(code, err, "--overwrite", str(out))
    assert _records(out) == expected
    code, _, err = _cli(capsys, "predict", folder, "--input", _source(tmp_path, TEXTS[3:5]),
                        "--output", out, "--overwrite")
    assert code == 0, err
    assert _records(out) == predict_text(lab, TEXTS[3:5])


def test_a_bad_output_path_is_refused_before_any_work(folder: Path, tmp_path: Path, capsys,
                                                      no_model) -> None:
    src = _source(tmp_path)
    code, _, err = _cli(capsys, "predict", folder, "--input", src, "--output",
                        tmp_path / "missing" / "out.jsonl")
    _refused(code, err, "does not exist")
    code, _, err = _cli(capsys, "predict", folder, "--input", src, "--output", tmp_path)
    _refused(code, err, "is a folder")
    code, _, err = _cli(capsys, "predict", folder, "--input", tmp_path / "nope.txt",
                        "--output", tmp_path / "o.jsonl")
    _refused(code, err, "nope.txt")


def _interrupt_after(monkeypatch: pytest.MonkeyPatch, calls: int) -> None:
    real, seen = seqrep.predict.stream.label_items, []

    def label(*a: object, **k: object) -> list:
        seen.append(1)
        if len(seen) > calls:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(seqrep.predict.stream, "label_items", label)


def test_a_partial_output_resumes_only_from_its_own_input(lab: SequenceLabeler, tmp_path: Path,
                                                           monkeypatch) -> None:
    a = _source(tmp_path, TEXTS, "a.txt")
    b = _source(tmp_path, [t.upper() for t in TEXTS], "b.txt")
    out = tmp_path / "out.jsonl"
    with monkeypatch.context() as m:
        _interrupt_after(m, 2)
        with pytest.raises(KeyboardInterrupt):
            predict_file(lab, a, out, chunk=4)
    partial = tmp_path / "out.jsonl.partial"
    assert len(_records(partial)) == 8 and not out.exists()
    # another input: refused, the partial kept
    with pytest.raises(ConfigError, match="another input"):
        predict_file(lab, b, out, chunk=4)
    assert len(_records(partial)) == 8
    # the same input, changed since: refused
    a.write_text(a.read_text(encoding="utf-8").replace("Obama", "Obana"), encoding="utf-8")
    with pytest.raises(ConfigError, match="another version of the input"):
        predict_file(lab, a, out, chunk=4)
    # the same input with another decoding: refused
    a.write_text("".join(t + "\n" for t in TEXTS), encoding="utf-8")
    with pytest.raises(ConfigError, match="another labeler"):
        predict_file(lab, a, out, decoding="greedy", chunk=4)
    # --overwrite starts over: only b's predictions
    assert predict_file(lab, b, out, chunk=4, overwrite=True) == len(TEXTS)
    assert _records(out) == predict_text(lab, [t.upper() for t in TEXTS])
    assert not partial.exists() and not (tmp_path / "out.jsonl.partial.json").exists()


def test_resume_says_so_and_the_rate_counts_the_work(folder: Path, lab: SequenceLabeler,
                                                     tmp_path: Path, capsys,
                                                     monkeypatch) -> None:
    import time

    src = _source(tmp_path)
    out = tmp_path / "out.jsonl"
    monkeypatch.setattr(seqrep.predict.stream, "CHUNK", 4)
    with monkeypatch.context() as m:
        _interrupt_after(m, 2)
        code, _, err = _cli(capsys, "predict", folder, "--input", src, "--output", out)
    assert code == 130, err
    assert len(_records(tmp_path / "out.jsonl.partial")) == 8
    # the same input with other settings: refused, before the model loads
    code, _, err = _cli(capsys, "predict", folder, "--input", src, "--output", out,
                        "--decoding", "greedy")
    _refused(code, err, "another labeler", "--overwrite")
    code, _, err = _cli(capsys, "predict", folder, "--input", src, "--output", out,
                        "--context-overlap", "0.25")
    _refused(code, err, "another labeler", "--overwrite")
    real = seqrep.predict.stream.label_items

    def slow(*a: object, **k: object) -> list:
        time.sleep(0.2)  # each chunk takes at least 0.2 s: at most 4 / 0.2 = 20 texts/s
        return real(*a, **k)

    monkeypatch.setattr(seqrep.predict.stream, "label_items", slow)
    code, _, err = _cli(capsys, "predict", folder, "--input", src, "--output", out)
    assert code == 0, err
    assert "resuming after 8 records" in err
    assert _records(out) == predict_text(lab, TEXTS)
    summary = err.strip().splitlines()[-1]
    got = re.search(r"(\d+) labeled in [\d.]+ s, ([\d.]+) texts/s", summary)
    assert got is not None, summary
    assert int(got.group(1)) == len(TEXTS) - 8
    assert 0 < float(got.group(2)) <= 20.0
    # the progress bar's own rates (tqdm) stay within what the work allows
    rates = [float(x) for x in re.findall(r"([\d.]+)text/s", err)]
    assert rates and max(rates) <= 20.0, err


def test_jsonl_input_reads_alike_with_and_without_output(folder: Path, lab: SequenceLabeler,
                                                         tmp_path: Path, capsys) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "Obama visited Paris."}\n{"words": ["Maria", "left", "."]}\n',
                   encoding="utf-8")
    code, stdout, err = _cli(capsys, "predict", folder, "--input", src)
    assert code == 0, err
    records = [json.loads(x) for x in stdout.splitlines()]
    assert [r["text"] for r in records] == ["Obama visited Paris.", "Maria left ."]
    assert records[1]["sentences"][0]["words"] == ["Maria", "left", "."]
    out = tmp_path / "out.jsonl"
    code, _, err = _cli(capsys, "predict", folder, "--input", src, "--output", out)
    assert code == 0, err
    assert _records(out) == records


def test_words_are_kept_with_output(folder: Path, tmp_path: Path, capsys) -> None:
    lines = ["Maria visited Paris.", "U.S.-based  e-mail:x@y.z don't"]
    src = _source(tmp_path, lines)
    out = tmp_path / "out.jsonl"
    code, _, err = _cli(capsys, "predict", folder, "--input", src, "--output", out, "--words")
    assert code == 0, err
    got = [[w for s in r["sentences"] for w in s["words"]] for r in _records(out)]
    assert got == [line.split() for line in lines]
    code, stdout, err = _cli(capsys, "predict", folder, "--input", src, "--words")
    assert [json.loads(x) for x in stdout.splitlines()] == _records(out)


def test_byte_order_marks_are_no_text(lab: SequenceLabeler, tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_bytes(b"\xef\xbb\xbf\xef\xbb\xbfObama left\nParis\n")
    out = tmp_path / "out.jsonl"
    predict_file(lab, src, out)
    assert [r["text"] for r in _records(out)] == ["Obama left", "Paris"]


def test_a_jsonl_dataset_is_no_seqrep_output(folder: Path, tmp_path: Path, capsys) -> None:
    # JSON lines with "text" and "spans" but no "sentences": a dataset, never replaced
    out = tmp_path / "gold.jsonl"
    gold = '{"text": "Obama left", "spans": [{"start": 0, "end": 5, "label": "PER"}]}\n'
    out.write_text(gold, encoding="utf-8")
    code, _, err = _cli(capsys, "predict", folder, "--input", _source(tmp_path, TEXTS[:2]),
                        "--output", out)
    _refused(code, err, "--overwrite", str(out))
    assert out.read_text(encoding="utf-8") == gold


def test_a_training_checkpoint_is_no_part_of_a_runs_identity(tmp_path: Path) -> None:
    from seqrep.predict.stream import run_identity

    run = tmp_path / "run"
    run.mkdir()
    (run / "model.safetensors").write_bytes(b"w")
    before = run_identity(run, decoding=None)
    (run / "checkpoint").mkdir()
    (run / "checkpoint" / "model.safetensors").write_bytes(b"still training")
    assert run_identity(run, decoding=None) == before
    assert [f[0] for f in before["files"]] == ["model.safetensors"]
