"""``seqrep distill`` with a document-context teacher, and the distillation's measured figures
(issue 25): the cached distributions are the teacher's own on each whole document, students of
either context train on them, and the labeling speed and the distillation's time reach
run.json, metrics.json and the CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from support import cli, train_configs, with_documents, write_corpus

from seqrep.config import LabelerConfig, TrainConfig
from seqrep.model.labeler import SequenceLabeler
from seqrep.train import train
from seqrep.train.distill import distill


def blocks_of(path: Path) -> list[list[list[str]]]:
    """The documents of a -DOCSTART- file: per document, the words of each sentence."""
    docs: list[list[list[str]]] = []
    for block in path.read_text(encoding="utf-8").strip().split("\n\n"):
        lines = block.splitlines()
        if lines[0].startswith("-DOCSTART-"):
            docs.append([])
            lines = lines[1:]
        if lines:
            docs[-1].append([line.split()[0] for line in lines])
    return docs


@pytest.fixture(scope="module")
def doc_teacher(tiny, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny llama trained with document context (windows of 24 subtokens, so a document of
    four sentences is read in overlapping windows)."""
    tmp = tmp_path_factory.mktemp("doc-teacher")
    corpus = (str(with_documents(write_corpus(tmp / "train.txt", 24), 4)),
              str(with_documents(write_corpus(tmp / "test.txt", 4, seed=1), 4)))
    lab, cfg = train_configs(tiny("llama"), corpus, epochs=1)
    out = tmp / "run"
    train(lab.replace(context="document", context_tokens=24), cfg, out, quiet=True)
    return out


@pytest.fixture(scope="module")
def doc_data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Ten training sentences in documents of 4, 4 and 2 (the second document repeats the
    first sentence of the first), and a validation file."""
    tmp = tmp_path_factory.mktemp("doc-data")
    train_file = write_corpus(tmp / "train.txt", 10, seed=5)
    blocks = train_file.read_text(encoding="utf-8").strip().split("\n\n")
    blocks[4] = blocks[0]  # the same words in another document
    train_file.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    return (with_documents(train_file, 4),
            with_documents(write_corpus(tmp / "dev.txt", 4, seed=6), 4))


def student(tiny, **kw) -> LabelerConfig:
    return LabelerConfig(model=tiny("qwen2"), repetitions=1, exit_layer=3, dropout=0.0, **kw)


def fit(data: tuple[Path, Path], **kw) -> TrainConfig:
    opts = dict(dataset=str(data[0]), eval_split=str(data[1]), test_split=None, epochs=1,
                batch_size=4, lr=3e-3, head_lr=3e-2, seed=3, max_steps=1)
    return TrainConfig(**{**opts, **kw})


def cached(out: Path) -> torch.Tensor:
    from safetensors.torch import load_file

    return torch.cat([load_file(p)["logp"] for p in
                      sorted((out / "teacher-labels").glob("*.safetensors"))])


def test_a_document_teacher_labels_each_sentence_in_its_whole_document(
        tiny, doc_teacher, doc_data, tmp_path: Path) -> None:
    """The cache holds, sentence by sentence in training order (the repeated sentence twice),
    the teacher's log-softmax when it reads each document alone, and the unlabeled line's two
    sentences as one document; the chunks (3 sentences asked) never cut a document."""
    raw = tmp_path / "more.txt"
    raw.write_text("Obama visited Paris. Peter left Berlin.\n", encoding="utf-8")
    out = tmp_path / "student"
    metrics = distill(doc_teacher, student(tiny), fit(doc_data), out, unlabeled=raw,
                      quiet=True, chunk=3)
    assert metrics["status"] == "interrupted"  # max_steps=1: the labels are what is checked
    teacher = SequenceLabeler.from_pretrained(doc_teacher)
    documents = blocks_of(doc_data[0]) + [[["Obama", "visited", "Paris", "."],
                                           ["Peter", "left", "Berlin", "."]]]
    assert [len(d) for d in documents] == [4, 4, 2, 2]
    # the independent route: each document alone, one document id for its sentences
    want = torch.cat([torch.log_softmax(x, -1) for d in documents
                      for x in teacher.word_logits(d, docs=["d"] * len(d))])
    got = cached(out)
    assert got.shape == want.shape
    assert torch.allclose(got, want, atol=1e-5)
    # context matters here: the same sentences labeled alone give other distributions
    alone = torch.cat([torch.log_softmax(x, -1) for d in documents
                       for x in teacher.word_logits(d, docs=None)])
    assert not torch.allclose(got, alone, atol=1e-3)
    from safetensors.torch import load_file

    chunks = [load_file(p)["lengths"].numel() for p in
              sorted((out / "teacher-labels").glob("*.safetensors"))]
    assert chunks == [4, 4, 4]  # whole documents: 4, 4, then 2 + 2
    run = json.loads((out / "run.json").read_text())
    assert run["distill"]["teacher_context"] == "document"
    assert run["train_sentences"] == 10 + 2


def test_a_document_context_student_trains_on_a_document_teacher(
        tiny, doc_teacher, doc_data, tmp_path: Path) -> None:
    out = tmp_path / "student"
    metrics = distill(doc_teacher, student(tiny, context="document", context_tokens=24),
                      fit(doc_data, max_steps=None, epochs=1), out, quiet=True)
    assert metrics["status"] == "finished"
    assert SequenceLabeler.from_pretrained(out).config.context == "document"
    assert json.loads((out / "run.json").read_text())["distill"]["teacher_context"] == \
        "document"


def test_labeling_seconds_are_summed_over_chunks_across_sessions(tmp_path: Path,
                                                                 monkeypatch) -> None:
    """A fake clock: the first chunk takes 2 s, the second 3 s; a later call that finds both
    cached reports the same 5 s for 3 sentences (0.6 sentences/s), labeling none."""
    from seqrep.train import teacher_cache

    ticks = iter([10.0, 12.0, 20.0, 23.0])
    monkeypatch.setattr(teacher_cache, "time", SimpleNamespace(perf_counter=lambda: next(ticks)))

    class Teacher:
        def word_logits(self, sentences, batch_size, **kw):  # noqa: ANN001, ANN202, ANN003
            return [torch.zeros(len(s), 3) for s in sentences]

    sentences = [("a",), ("b", "c"), ("d",)]
    _, speed = teacher_cache.label_cache(Teacher, sentences, tmp_path, 3, chunk=2, quiet=True,
                                         docs=None)
    assert speed == {"teacher_sentences": 3, "teacher_seconds": 5.0,
                     "teacher_sentences_per_second": 0.6, "teacher_labeled_sentences": 3}
    _, again = teacher_cache.label_cache(Teacher, sentences, tmp_path, 3, chunk=2, quiet=True,
                                         docs=None)
    assert again == {**speed, "teacher_labeled_sentences": 0}


def test_the_figures_reach_run_json_metrics_json_and_the_cli(tiny, doc_teacher, doc_data,
                                                             tmp_path: Path, capsys) -> None:
    out = tmp_path / "student"
    code, stdout, err = cli(capsys, "distill", str(doc_teacher), "--student", tiny("qwen2"),
                            "--dataset", str(doc_data[0]), "--eval-split", str(doc_data[1]),
                            "--test-split", str(doc_data[1]), "--epochs", "1", "--quiet", "-o",
                            str(out))
    assert code == 0, err
    run = json.loads((out / "run.json").read_text())["distill"]
    metrics = json.loads((out / "metrics.json").read_text())["distill"]
    assert run["teacher_sentences"] == metrics["teacher_sentences"] == 10
    assert metrics["teacher_seconds"] == run["teacher_seconds"] > 0
    # the stored seconds are rounded to 1 ms and the rate to 0.01, from the unrounded seconds:
    # a tiny teacher labels 10 sentences in about 20 ms, so the rounding alone can move 10 / s
    # by a few per cent; the rate must lie within what the rounded seconds allow
    seconds, rate = metrics["teacher_seconds"], metrics["teacher_sentences_per_second"]
    assert 10 / (seconds + 5e-4) - 5e-3 <= rate <= 10 / max(seconds - 5e-4, 1e-9) + 5e-3
    assert metrics["seconds"] >= metrics["teacher_seconds"] and metrics["resumed"] is False
    # the work it took, summed from what the run folder recorded: labeling, training steps,
    # each validation and the test
    finished = json.loads((out / "metrics.json").read_text())
    evals = [json.loads(x)["eval_seconds"] for x in
             (out / "log.jsonl").read_text().splitlines()]
    assert evals and metrics["work_seconds"] == pytest.approx(
        metrics["teacher_seconds"] + finished["train_seconds"] + sum(evals)
        + finished["test"]["seconds"], abs=0.02)
    line = stdout.strip().splitlines()[-1]
    assert line.startswith("teacher: 10 sentences labeled in ") and "sentences/s" in line
    assert f"the distillation took {metrics['seconds']} s ({metrics['work_seconds']} s of" \
        in line


def test_the_json_summary_carries_the_figures() -> None:
    """``--json``: the training summary with the teacher's figures and the distillation's
    time added as fields; an unfinished run (no figures) keeps its line as it was."""
    from seqrep.cli.distill import _with_speed

    figures = {"teacher": "/t", "teacher_sentences": 10, "teacher_seconds": 4.0,
               "teacher_sentences_per_second": 2.5, "seconds": 9.5, "resumed": False,
               "work_seconds": 12.25}
    got = json.loads(_with_speed('{"status": "finished", "test_f1": 0.5}', figures, True))
    assert got == {"status": "finished", "test_f1": 0.5, "teacher_sentences": 10,
                   "teacher_seconds": 4.0, "teacher_sentences_per_second": 2.5,
                   "distill_seconds": 9.5, "distill_work_seconds": 12.25}
    assert _with_speed("run: interrupted", None, False) == "run: interrupted"
    line = _with_speed("run: done", {**figures, "resumed": True}, False).splitlines()[1]
    assert line == ("teacher: 10 sentences labeled in 4.0 s (2.5 sentences/s); the "
                    "distillation took 9.5 s in this session (12.25 s of labeling, training "
                    "and evaluation)")


def test_jsonl_lines_sharing_a_doc_id_are_one_unlabeled_document(
        tiny, doc_teacher, doc_data, tmp_path: Path) -> None:
    """As ``seqrep predict`` reads them: consecutive JSONL lines with one ``doc_id`` are one
    document; a line without one is a document of its own (two such lines in a row are two
    documents, not one)."""
    more = tmp_path / "more.jsonl"
    more.write_text('{"words": ["Obama", "left", "Paris"], "doc_id": "a"}\n'
                    '{"text": "Maria reached Tokyo.", "doc_id": "a"}\n'
                    '{"words": ["Peter", "visited", "Berlin"]}\n'
                    '{"text": "Boris left Madrid."}\n', encoding="utf-8")
    out = tmp_path / "student"
    distill(doc_teacher, student(tiny), fit(doc_data), out, unlabeled=more, quiet=True)
    teacher = SequenceLabeler.from_pretrained(doc_teacher)
    extra = [[["Obama", "left", "Paris"], ["Maria", "reached", "Tokyo", "."]],
             [["Peter", "visited", "Berlin"]], [["Boris", "left", "Madrid", "."]]]
    want = torch.cat([torch.log_softmax(x, -1) for d in extra
                      for x in teacher.word_logits(d, docs=["d"] * len(d))])
    got = cached(out)[-want.shape[0]:]
    assert torch.allclose(got, want, atol=1e-5)
    # read apart, the first document's sentences would be labeled otherwise; read as one
    # document, the last two lines would too
    apart = torch.cat([torch.log_softmax(x, -1) for x in teacher.word_logits(extra[0], docs=None)])
    assert not torch.allclose(got[:apart.shape[0]], apart, atol=1e-3)
    together = torch.cat([torch.log_softmax(x, -1) for x in teacher.word_logits(
        extra[1] + extra[2], docs=["d", "d"])])
    assert not torch.allclose(got[-together.shape[0]:], together, atol=1e-3)


def test_each_unlabeled_line_without_a_doc_id_is_a_document_of_its_own(tmp_path: Path) -> None:
    """The document ids read_unlabeled gives, written out by hand: a raw line's sentences
    share its line's id, JSONL lines without a doc_id one id each, lines with one doc_id
    (consecutive) one id."""
    from seqrep.train.distill import read_unlabeled

    raw = tmp_path / "more.txt"
    raw.write_text("Obama left. Peter stayed.\nMaria left\n\nBoris left\n", encoding="utf-8")
    ids = [d for _, d in read_unlabeled(raw)]
    assert len(ids) == 4 and len(set(ids)) == 3 and ids[0] == ids[1]
    jsonl = tmp_path / "more.jsonl"
    jsonl.write_text('{"words": ["a"]}\n{"words": ["b"]}\n{"words": ["c"], "doc_id": "x"}\n'
                     '{"words": ["d"], "doc_id": "x"}\n{"words": ["e"]}\n', encoding="utf-8")
    got = read_unlabeled(jsonl)
    assert [w for w, _ in got] == [("a",), ("b",), ("c",), ("d",), ("e",)]
    ids = [d for _, d in got]
    assert ids[2] == ids[3] and len({ids[0], ids[1], ids[2], ids[4]}) == 4


def test_unlabeled_text_from_held_out_splits_is_noticed(tiny, doc_teacher, doc_data,
                                                        tmp_path: Path, capsys) -> None:
    """Validation sentences in --unlabeled (two of its four lines) are counted in one notice:
    the teacher's labels on them would carry held-out text into training; one that the
    training split holds too is not counted."""
    dev = blocks_of(doc_data[1])[0]
    train = [s for d in blocks_of(doc_data[0]) for s in d]
    assert dev[0] in train and dev[1] not in train and dev[2] not in train
    more = tmp_path / "more.jsonl"
    more.write_text("".join(json.dumps({"words": w}) + "\n"
                            for w in (dev[0], ["Peter", "left", "Rome"], dev[1], dev[2])),
                    encoding="utf-8")
    capsys.readouterr()
    distill(doc_teacher, student(tiny), fit(doc_data), tmp_path / "student", unlabeled=more,
            quiet=True)
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if "notice" in line] == [
        "notice: 2 of the 4 --unlabeled sentences are in the validation or test split (and "
        "not in the training split): the teacher's labels on them carry held-out text into "
        "training"]


def test_students_of_one_teacher_share_its_labels(tiny, doc_teacher, doc_data, tmp_path: Path,
                                                  monkeypatch) -> None:
    """With --teacher-labels DIR the second student reads what the first one's teacher wrote
    (the teacher is not asked again) and trains on the same distributions; a folder holding
    another teacher's labels is labeled again."""
    shared = tmp_path / "labels"
    distill(doc_teacher, student(tiny), fit(doc_data), tmp_path / "a", quiet=True,
            teacher_labels=shared, chunk=4)
    first = torch.cat([cached_file(p) for p in sorted(shared.glob("*.safetensors"))])
    assert not (tmp_path / "a" / "teacher-labels").exists()
    calls: list[int] = []  # sentences the teacher was asked to label
    original = SequenceLabeler.word_logits
    teacher_model = SequenceLabeler.from_pretrained(doc_teacher).config.model

    def counted(self, sentences, *a, **kw):  # noqa: ANN001, ANN202, ANN002, ANN003
        if self.config.model == teacher_model:
            calls.append(len(sentences))
        return original(self, sentences, *a, **kw)

    monkeypatch.setattr(SequenceLabeler, "word_logits", counted)
    metrics = distill(doc_teacher, student(tiny, context="document"),
                      fit(doc_data, max_steps=None), tmp_path / "b", quiet=True,
                      teacher_labels=shared, chunk=4)
    assert metrics["status"] == "finished"
    assert calls == []  # every training sentence was in the shared folder
    assert json.loads((tmp_path / "b" / "run.json").read_text())["distill"]["cache"] == \
        str(shared.resolve())
    # another teacher (here: the same one retrained, one weight changed in a copy) does not
    # read them; a copy made without its files' times (cp -r) is the same teacher and does
    import shutil

    other = tmp_path / "retrained"
    shutil.copytree(doc_teacher, other, copy_function=shutil.copyfile)
    for f in other.rglob("*"):
        os.utime(f, ns=(10**18, 10**18))
    calls.clear()
    distill(other, student(tiny), fit(doc_data), tmp_path / "c", quiet=True,
            teacher_labels=shared, chunk=4)
    assert calls == []
    weights = next(p for p in (other / "best").rglob("*.safetensors"))
    raw = bytearray(weights.read_bytes())
    raw[8 + int.from_bytes(raw[:8], "little")] ^= 1  # the lowest bit of the first weight
    weights.write_bytes(bytes(raw))
    distill(other, student(tiny), fit(doc_data), tmp_path / "d", quiet=True,
            teacher_labels=shared, chunk=4)
    assert calls == [4, 4, 2]  # its three chunks (documents of 4, 4, 2) labeled again
    again = torch.cat([cached_file(p) for p in sorted(shared.glob("*.safetensors"))])
    assert torch.allclose(first, again, atol=1e-5)


def cached_file(path: Path) -> torch.Tensor:
    from safetensors.torch import load_file

    return load_file(path)["logp"]
