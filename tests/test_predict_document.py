"""Prediction with a labeler saved with document context (issue 24): a raw text of several
sentences is one document, JSONL lines name theirs with "doc_id", and streaming (chunks,
resuming, two torchrun processes) labels every document whole, as two-process evaluation
does. Expected tags come from the labeler's own document encode on the same words
(``word_logits(..., docs=...)``), an independent route."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import cli, sharp_document_labeler

from seqrep.core.contexts import SENTENCE
from seqrep.data.tags import spans_to_tags, strict_spans
from seqrep.model.labeler import SequenceLabeler
from seqrep.predict.stream import predict_file
from seqrep.predict.tagger import predict_tags, predict_text, split_text
from seqrep.serve.local import free_port

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
TEXT = ("Obama visited Paris. The European Union said on Thursday it disagreed with German "
        "advice. Peter Blackburn met Angela in Berlin.")
OTHER = "Maria left Tokyo for Moscow. Boris praised Madrid."


@pytest.fixture(scope="module")
def folder(tiny, tmp_path_factory: pytest.TempPathFactory) -> Path:
    # the steeper head's seed shows a change of context in each test's check that it does
    return sharp_document_labeler(tiny("llama"), LABELS).save_pretrained(
        tmp_path_factory.mktemp("docpredict") / "lab")


@pytest.fixture(scope="module")
def lab(folder: Path) -> SequenceLabeler:
    return SequenceLabeler.from_pretrained(folder).eval()


def words_of(text: str) -> list[list[str]]:
    return [[text[s:e] for s, e in w] for _, w in split_text(text)]


def tags_of(lab: SequenceLabeler, sentences: list[list[str]], docs: list | None) -> list:
    """Greedy tags from the labeler's own logits (document rows when ``docs``)."""
    return [_as_written([LABELS[i] for i in x.argmax(-1).tolist()])
            for x in lab.word_logits(sentences, docs=docs)]


def record_tags(records: list[dict]) -> list[list[str]]:
    return [s["tags"] for r in records for s in r["sentences"]]


def test_a_text_of_several_sentences_is_one_document(lab: SequenceLabeler) -> None:
    sents = words_of(TEXT)
    assert len(sents) == 3
    whole = tags_of(lab, sents, ["d"] * 3)
    assert whole != tags_of(lab, sents, None)  # the context shows in the tags
    assert record_tags(predict_text(lab, [TEXT])) == whole
    # two texts: two documents, never one
    got = predict_text(lab, [TEXT, OTHER])
    other = words_of(OTHER)
    assert record_tags(got) == whole + tags_of(lab, other, ["o"] * len(other))


def test_consecutive_texts_with_one_doc_id_are_one_document(lab: SequenceLabeler) -> None:
    a, b = words_of(TEXT), words_of(OTHER)
    together = tags_of(lab, a + b, ["x"] * (len(a) + len(b)))
    assert together != tags_of(lab, a, ["x"] * len(a)) + tags_of(lab, b, ["y"] * len(b))
    got = predict_text(lab, [TEXT, OTHER, TEXT], docs=["x", "x", None])
    assert record_tags(got) == together + tags_of(lab, a, ["z"] * len(a))


def test_a_sentence_level_labeler_labels_each_sentence_alone(folder: Path) -> None:
    lab = SequenceLabeler.from_pretrained(folder)
    lab.config = lab.config.replace(context="sentence")
    lab.encoder.context = SENTENCE
    sents = words_of(TEXT)
    assert record_tags(predict_text(lab, [TEXT], docs=["a"])) == tags_of(lab, sents, None)


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


ROWS = [{"text": TEXT, "doc_id": "a"}, {"text": OTHER, "doc_id": "a"},
        {"words": ["Peter", "Blackburn", "left", "."], "doc_id": "a"},
        {"text": OTHER}, {"text": TEXT, "doc_id": "b"}, {"text": OTHER, "doc_id": "b"},
        {"text": OTHER, "doc_id": None}]


def _expected(lab: SequenceLabeler) -> list[list[str]]:
    a, b = words_of(TEXT), words_of(OTHER)
    c = [["Peter", "Blackburn", "left", "."]]
    return (tags_of(lab, a + b + c, ["a"] * 6) + tags_of(lab, b, ["n"] * 2)
            + tags_of(lab, a + b, ["b"] * 5) + tags_of(lab, b, ["m"] * 2))


def test_jsonl_lines_of_one_document_are_labeled_together(folder, lab, tmp_path,
                                                          capsys) -> None:
    src = _jsonl(tmp_path / "in.jsonl", ROWS)
    code, out, err = cli(capsys, "predict", str(folder), "--input", str(src))
    assert code == 0, err
    records = [json.loads(x) for x in out.splitlines()]
    assert len(records) == len(ROWS)
    assert record_tags(records) == _expected(lab)


@pytest.mark.parametrize("doc", [3, ["a"], {"id": "a"}, True])
def test_a_doc_id_of_the_wrong_type_names_the_file_and_line(folder, tmp_path, capsys,
                                                            doc) -> None:
    src = _jsonl(tmp_path / "bad.jsonl", [{"text": TEXT, "doc_id": "a"},
                                          {"text": OTHER, "doc_id": doc}])
    code, out, err = cli(capsys, "predict", str(folder), "--input", str(src))
    assert code == 2 and out == ""
    line = err.strip().splitlines()[-1]
    assert "bad.jsonl" in line and ":2" in line and '"doc_id"' in line, line
    code, _, err = cli(capsys, "predict", str(folder), "--input", str(src), "--output",
                       str(tmp_path / "out.jsonl"))
    assert code == 2 and not (tmp_path / "out.jsonl").exists()


def _records(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_bytes().decode().split("\n")[:-1]]


def _interrupt(lab: SequenceLabeler, src: Path, out: Path, stop_at: int, keep: int
               ) -> list[bytes]:
    """Stream ``src`` to ``out`` in chunks of 2 lines, interrupted (Ctrl-C) once ``stop_at``
    sentences are done; then cut the partial output after ``keep`` whole records and 7 bytes
    of the next. Returns the partial output's lines before the cut."""

    def stop(done: int, total: int) -> None:
        if done >= stop_at:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        predict_file(lab, src, out, chunk=2, progress=stop)
    partial = out.with_name(out.name + ".partial")
    lines = partial.read_bytes().split(b"\n")
    partial.write_bytes(b"\n".join(lines[:keep]) + b"\n" + lines[keep][:7])
    return lines


def test_streaming_never_splits_a_document(lab, tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "in.jsonl", ROWS)
    expected = _expected(lab)
    out = tmp_path / "out.jsonl"
    # chunks of 2 lines would cut document "a" (3 lines) and "b" (lines 5-6)
    assert predict_file(lab, src, out, chunk=2) == len(ROWS)
    assert record_tags(_records(out)) == expected
    # a partial output cut inside document "a" (after 2 of its 3 lines) resumes at its start
    _interrupt(lab, src, tmp_path / "again.jsonl", stop_at=5, keep=2)
    # a resume from line 3 would label it alone: that changes its record (tags or scores)
    line3 = [["Peter", "Blackburn", "left", "."]]
    in_doc = predict_tags(lab, words_of(TEXT) + words_of(OTHER) + line3, docs=["a"] * 6)[5]
    assert predict_tags(lab, line3, docs=None)[0] != in_doc
    whole = _records(out)
    assert predict_file(lab, src, tmp_path / "again.jsonl", chunk=2) == 7
    assert _records(tmp_path / "again.jsonl") == whole


SHARDED = '''
import sys
from accelerate import PartialState
from seqrep.model.labeler import SequenceLabeler
from seqrep.model.device import end_processes
from seqrep.predict.stream import predict_file
lab = SequenceLabeler.from_pretrained(sys.argv[1]).eval()
predict_file(lab, sys.argv[2], sys.argv[3], chunk=2, accelerator=PartialState(cpu=True))
end_processes()  # as the CLI does: no gloo thread outlives the interpreter
'''


@pytest.mark.integration  # a torchrun launch of two processes
def test_two_processes_never_split_a_document(folder, lab, tmp_path: Path) -> None:
    """Chunks of 2 lines dealt to 2 processes: each document stays in one process's chunk."""
    import os
    import subprocess
    import sys

    torchrun = Path(sys.executable).with_name("torchrun")
    if not torchrun.exists():
        pytest.skip("torchrun is not installed")
    src = _jsonl(tmp_path / "in.jsonl", ROWS * 2)
    script = tmp_path / "shard.py"
    script.write_text(SHARDED, encoding="utf-8")
    out = tmp_path / "out.jsonl"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    port = str(free_port())
    proc = subprocess.run([str(torchrun), "--nproc_per_node", "2", "--master_port", port,
                           str(script), str(folder), str(src), str(out)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert record_tags(_records(out)) == _expected(lab) * 2


def _documents_file(path: Path, docs: int) -> Path:
    """A CoNLL file of ``docs`` documents (``-DOCSTART-``) of 2-4 sentences each."""
    lines = []
    for d in range(docs):
        lines += ["-DOCSTART- O", ""]
        for s in range(2 + d % 3):
            text = OTHER if (d + s) % 2 else TEXT
            for words in words_of(text):
                lines += [f"{w} O" for w in words] + [""]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.integration  # a torchrun launch of two processes
def test_two_process_evaluation_predicts_as_one_process(folder, tmp_path: Path) -> None:
    """5 documents over 2 processes: every predicted tag as in one process (a document cut
    between processes would change its tags)."""
    import os
    import subprocess
    import sys

    torchrun = Path(sys.executable).with_name("torchrun")
    if not torchrun.exists():
        pytest.skip("torchrun is not installed")
    data = _documents_file(tmp_path / "gold.txt", 5)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    args = ["-m", "seqrep", "evaluate", str(folder), "--dataset", str(data), "--json",
            "--device", "cpu"]
    one = subprocess.run([sys.executable, *args, "--predictions", str(tmp_path / "one.txt")],
                         capture_output=True, text=True, env=env, timeout=300)
    two = subprocess.run([str(torchrun), "--nproc_per_node", "2", "--master_port", str(free_port()),
                          *args, "--predictions", str(tmp_path / "two.txt")],
                         capture_output=True, text=True, env=env, timeout=300)
    assert one.returncode == 0 and two.returncode == 0, two.stderr[-2000:]
    one_tags = (tmp_path / "one.txt").read_text(encoding="utf-8")
    assert one_tags == (tmp_path / "two.txt").read_text(encoding="utf-8")
    # and they are the labeler's own document encode of each document
    sents, docs = [], []
    for d in range(5):
        for s in range(2 + d % 3):
            got = words_of(OTHER if (d + s) % 2 else TEXT)
            sents, docs = sents + got, docs + [d] * len(got)
    lab = SequenceLabeler.from_pretrained(folder)
    predicted = [[line.split()[-1] for line in block.split("\n")]
                 for block in one_tags.strip().split("\n\n")]
    # the file holds the spans scored, as clean IOB2 (an I- that continues no span is O)
    assert predicted == [spans_to_tags(strict_spans(t), len(t), "IOB2")
                         for t, _ in predict_tags(lab, sents, docs=docs)]


def test_a_resume_point_moves_back_to_its_document_s_first_line(tmp_path: Path) -> None:
    from seqrep.predict.inputs import document_start

    src = _jsonl(tmp_path / "in.jsonl", [{"text": "x", "doc_id": d}
                                         for d in ["a", "a", None, "b", "b"]])
    # lines done -> lines kept: inside "a" back to 0, inside "b" back to 3, else unchanged
    assert [document_start(src, done) for done in range(6)] == [0, 0, 2, 3, 3, 5]


def test_word_lists_and_raw_texts_mix_in_one_document(lab: SequenceLabeler) -> None:
    """A word list is one sentence of its words even beside raw texts (as raw text,
    "Blackburn. Left" would be split into two sentences and "." cut off)."""
    a, words = words_of(TEXT), ["Peter", "Blackburn.", "Left"]
    for texts, pre, sents in (([TEXT, " ".join(words)], [False, True], a + [words]),
                              ([" ".join(words), TEXT], [True, False], [words] + a)):
        got = predict_text(lab, texts, pretokenized=pre, docs=["x", "x"])
        assert [s["words"] for r in got for s in r["sentences"]] == sents
        assert record_tags(got) == tags_of(lab, sents, ["x"] * 4)


def test_a_resume_inside_a_later_document_keeps_the_lines_before_it(lab, tmp_path: Path
                                                                     ) -> None:
    """A partial output cut inside document "b" (lines 5-6, after line 5) keeps lines 1-4
    as they were and relabels "b" from line 5: the output equals an uninterrupted run."""
    src = _jsonl(tmp_path / "in.jsonl", ROWS)
    assert predict_file(lab, src, tmp_path / "whole.jsonl", chunk=2) == len(ROWS)
    lines = _interrupt(lab, src, tmp_path / "again.jsonl", stop_at=6, keep=5)
    assert len(lines) == 7 and lines[-1] == b""  # 6 records written
    assert predict_file(lab, src, tmp_path / "again.jsonl", chunk=2) == len(ROWS)
    assert _records(tmp_path / "again.jsonl") == _records(tmp_path / "whole.jsonl")


def test_chunks_wait_for_a_document_only_when_asked() -> None:
    from seqrep.predict.inputs import chunks

    lines = [(n, "x", False, d) for n, d in enumerate(["a", "a", "a", None, "b", "b", "c"], 1)]
    sizes = [len(c) for c in chunks(iter(lines), 2)]
    assert sizes == [2, 2, 2, 1]  # sentence context: exactly the chunk size
    assert [[x[0] for x in c] for c in chunks(iter(lines), 2, documents=True)] == \
        [[1, 2, 3], [4, 5, 6], [7]]


def test_a_sentence_level_labeler_resumes_where_its_output_stops(folder: Path,
                                                                  tmp_path: Path) -> None:
    """Document ids in the input change nothing for it: a partial output of 2 records (line
    3 continues document "a") resumes after 2, not from the document's first line."""
    lab = SequenceLabeler.from_pretrained(folder)
    lab.config = lab.config.replace(context="sentence")
    lab.encoder.context = SENTENCE
    src = _jsonl(tmp_path / "in.jsonl", ROWS)
    out = tmp_path / "out.jsonl"
    _interrupt(lab, src, out, stop_at=4, keep=2)
    said: list[str] = []
    assert predict_file(lab, src, out, chunk=2, log=said.append) == len(ROWS)
    assert said and "resuming after 2 records" in said[0]


def _as_written(tags):  # noqa: ANN001, ANN202
    from seqrep.data.tags import spans_to_tags, strict_spans
    return spans_to_tags(strict_spans(tags), len(tags), "IOB2")


def _written_probs(x, labels):  # noqa: ANN001, ANN202
    import torch
    soft = torch.softmax(x, -1)
    tags = _as_written([labels[i] for i in x.argmax(-1).tolist()])
    return [float(soft[i, labels.index(t)]) for i, t in enumerate(tags)]
