"""What a new user hit (issue 57, item 5): a wrong choice that used to run silently (exit 0)
is refused in one line or said on stderr, a name that looks like ours is not looked up on the
Hub, and the messages name what the user gave."""

from __future__ import annotations

from pathlib import Path

import pytest
from inprocess import seqrep

from seqrep.errors import DataError

# two PER spans side by side: IOB2 starts the second with B-, IO cannot tell them apart
ADJACENT = "Ann B-PER\nBob B-PER\nsaw O\nCarl B-PER\n\n"


def test_scheme_io_on_data_with_adjacent_b_tags_is_refused(tmp_path: Path) -> None:
    from seqrep.data.conll import read_conll

    path = tmp_path / "chunks.conll"
    path.write_text(ADJACENT)
    assert len(read_conll(path).sentences[0].spans) == 3  # by hand: Ann, Bob, Carl
    with pytest.raises(DataError) as err:
        read_conll(path, scheme="IO")
    message = str(err.value)
    assert "\n" not in message and ":2" in message and "B-PER" in message, message
    assert "IOB2" in message


def test_scheme_io_on_io_data_still_reads(tmp_path: Path) -> None:
    from seqrep.data.conll import read_conll

    path = tmp_path / "io.conll"
    path.write_text("Ann I-PER\nBob I-PER\nsaw O\nCarl I-PER\n\n")
    assert len(read_conll(path, scheme="IO").sentences[0].spans) == 2


@pytest.fixture(scope="module")
def folder(tiny, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from seqrep.model.labeler import SequenceLabeler

    lab = SequenceLabeler.from_model(tiny("llama"), labels=["O", "B-PER", "I-PER"],
                                     finetune="frozen")
    return lab.save_pretrained(tmp_path_factory.mktemp("new_user") / "lab")


CONLL = ("-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n"
         "German JJ B-NP B-MISC\ncall NN I-NP O\n\nPeter NNP B-NP B-PER\n"
         "Blackburn NNP I-NP I-PER\n\n")


@pytest.mark.parametrize("output", [False, True])
def test_predict_refuses_a_conll_column_file(folder: Path, tmp_path: Path,
                                             output: bool) -> None:
    path = tmp_path / "test.txt"
    path.write_text(CONLL)
    out = tmp_path / "out.jsonl"
    ran = seqrep("predict", str(folder), "--input", str(path),
                 *(["--output", str(out)] if output else []))
    assert ran.returncode == 2 and ran.stdout == "", (ran.stdout, ran.stderr)
    assert ran.stderr.count("\n") == 1 and "CoNLL" in ran.stderr, ran.stderr
    assert "--words" in ran.stderr and str(path) in ran.stderr
    assert not out.exists()


def test_predict_reads_text_lines_that_end_in_capital_o(folder: Path, tmp_path: Path) -> None:
    path = tmp_path / "texts.txt"
    path.write_text("Say O\nI said O\nNo\n")
    ran = seqrep("predict", str(folder), "--input", str(path))
    assert ran.returncode == 0 and len(ran.stdout.splitlines()) == 3, ran.stderr


def test_an_empty_input_is_said_on_stderr(folder: Path, tmp_path: Path) -> None:
    path = tmp_path / "empty.txt"
    path.write_text("")
    for args, stdin in (((("--input", str(path))), None), (("-",), "")):
        ran = seqrep("predict", str(folder), *args, input=stdin)
        assert ran.returncode == 0 and ran.stdout == "", ran.stderr
        assert "nothing to label" in ran.stderr, ran.stderr
