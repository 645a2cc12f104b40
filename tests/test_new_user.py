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
