"""Commands on a labeler or base model named ``org/name`` (issue 55, items 4 and 9): a FIFO as
``refs/main`` is one line for ``predict`` and ``train --model`` (it blocked them), and a
partial ``predict --output`` is resumed only by the commit that made it (a moved ``refs/main``
resumed it with another model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hubcache import folder_files, lay_out_cache, use_cache
from inprocess import seqrep
from support import write_corpus
from test_hub_cache import FILES, REPO, _replace, _repo, bounded

import seqrep.predict.stream as stream

FIRST, SECOND = "a" * 40, "b" * 40
TEXTS = ["Obama visited Paris .", "Angela Merkel met the people .", "Maria left Tokyo ."]


@pytest.mark.parametrize("command", ["predict", "train"])
def test_a_fifo_ref_is_one_line_for_predict_and_train(command, tmp_path, monkeypatch) -> None:
    """huggingface_hub read ``refs/main`` before seqrep looked at the snapshot: a FIFO there
    blocked ``predict`` and ``train --model`` for ever."""
    lay_out_cache(tmp_path / "hf", REPO, FILES)
    _replace(_repo(tmp_path / "hf") / "refs" / "main", fifo=True)
    use_cache(tmp_path / "hf", monkeypatch)
    out = tmp_path / "run"
    args = (["predict", REPO, "Obama visited Paris ."] if command == "predict" else
            ["train", "--model", REPO, "--finetune", "lora", "--dataset",
             str(write_corpus(tmp_path / "train.txt", 4)), "--test-split", "",
             "--max-steps", "1", "-o", str(out)])
    ran, error = bounded(lambda: seqrep(*args), tmp_path, cap=False)
    assert error is None, repr(error)
    lines = ran.stderr.strip().splitlines()
    assert ran.returncode == 2 and len(lines) == 1 and "refs/main" in lines[0], ran.stderr
    assert "FIFO" in lines[0] and not out.exists()


@pytest.fixture(scope="module")
def labeler_files(tiny, tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """What a repository of a tiny frozen labeler holds (seqrep's own list of what it wrote
    is no labeler file)."""
    from seqrep.files.owner import MANIFEST
    from seqrep.model.labeler import SequenceLabeler

    lab = SequenceLabeler.from_model(tiny("llama"), labels=["O", "B-PER", "I-PER"],
                                     finetune="frozen")
    folder = lab.save_pretrained(tmp_path_factory.mktemp("hub-commands") / "lab")
    return {rel: data for rel, data in folder_files(folder).items()
            if Path(rel).name != MANIFEST}


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def test_a_partial_output_is_resumed_only_by_the_commit_that_made_it(
        labeler_files, tmp_path, monkeypatch) -> None:
    """Two commits of ``acme/x`` holding the very same files (so nothing but the commit tells
    them apart): output begun with the first is refused once ``refs/main`` names the second,
    and resumed when it names the first again."""
    cache = tmp_path / "hf"
    for commit in (SECOND, FIRST):  # refs/main names the last laid out: FIRST
        lay_out_cache(cache, REPO, labeler_files, commit=commit)
    ref = _repo(cache) / "refs" / "main"
    assert ref.read_text() == FIRST
    use_cache(cache, monkeypatch)
    texts, out = tmp_path / "in.txt", tmp_path / "out.jsonl"
    texts.write_text("".join(t + "\n" for t in TEXTS), encoding="utf-8")
    partial = tmp_path / "out.jsonl.partial"
    args = ("predict", REPO, "--input", str(texts), "--output", str(out))

    real, calls = stream.label_items, []

    def interrupted(*a: object, **k: object) -> list:
        calls.append(1)
        if len(calls) > 1:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(stream, "CHUNK", 1)
    with monkeypatch.context() as m:
        m.setattr(stream, "label_items", interrupted)
        ran = seqrep(*args)
    assert ran.returncode == 130, ran.stderr
    assert len(_lines(partial)) == 1 and not out.exists()

    ref.write_text(SECOND)
    ran = seqrep(*args)
    lines = ran.stderr.strip().splitlines()
    assert ran.returncode == 2 and len(lines) == 1, ran.stderr
    assert "another labeler" in lines[0] and "--overwrite" in lines[0], lines[0]
    assert len(_lines(partial)) == 1 and not out.exists()

    ref.write_text(FIRST)
    ran = seqrep(*args)
    assert ran.returncode == 0, ran.stderr
    assert "resuming after 1 records of 3" in ran.stderr, ran.stderr
    assert [r["text"] for r in _lines(out)] == TEXTS and not partial.exists()
