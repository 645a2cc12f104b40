"""A context separator that cannot fit a window is refused in one line (issue 37 item 12).

The separator is glued before the first word of every sentence but a document's first, and
that word with its separator must fit one copy of a window; a 300-word separator once made
the glued word outgrow the copy and the k copies outgrow BERT's 512 positions:
``RuntimeError: index 512 is out of bounds``, a traceback, in ``train`` and in ``predict``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inprocess import seqrep
from support import with_documents, write_corpus

from seqrep.config import LabelerConfig
from seqrep.errors import ConfigError
from seqrep.model.labeler import SequenceLabeler

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
LONG = " ".join(["word"] * 300)  # the attack: 1,499 characters
# within the character limit (149 characters) but 30 words: in the tiny WordPiece
# tokenizer (tests/support.py) "word" is not one piece, so at least 30 subtokens
THIRTY = " ".join(["word"] * 30)


def test_the_config_bounds_the_separator_s_characters() -> None:
    with pytest.raises(ConfigError, match=r"context_separator: 1499 characters; expected "
                                          r"at most 200"):
        LabelerConfig(context="document", context_separator=LONG)
    assert LabelerConfig(context_separator="\n\n").context_separator == "\n\n"


@pytest.mark.parametrize("family", ["bert", "llama"])
def test_a_separator_longer_than_the_window_is_refused_naming_the_limit(tiny,
                                                                       family: str) -> None:
    # a window of 16 subtokens must hold the separator and one subtoken of a word: 15 at most
    with pytest.raises(ConfigError, match=r"context_separator: \d+ subtokens .* at most 15"):
        SequenceLabeler.from_model(tiny(family, 1), labels=LABELS, context="document",
                                   context_tokens=16, context_separator=THIRTY)
    # the window is what the model's positions leave: BERT's 512 for k = 4 copies leave
    # (512 - 2) // 4 = 127 per copy, so 200 full stops (200 subtokens in both tokenizers)
    # cannot fit BERT even when windows of 1000 were asked for, and fit the tiny Llama's 4096
    with pytest.raises(ConfigError, match=r"context_separator: 200 subtokens .* at most 126"):
        SequenceLabeler.from_model(tiny("bert", 1), labels=LABELS, context="document",
                                   repetitions=3, context_tokens=1000, max_subtokens=1000,
                                   context_separator="." * 200)
    SequenceLabeler.from_model(tiny("llama", 1), labels=LABELS, context="document",
                               repetitions=3, context_tokens=1000, max_subtokens=1000,
                               context_separator="." * 200)
    # sentence level never uses it: no check, no error
    SequenceLabeler.from_model(tiny(family, 1), labels=LABELS, context_tokens=16,
                               context_separator=THIRTY)


def test_a_separator_that_fits_still_labels_every_word(tiny) -> None:
    lab = SequenceLabeler.from_model(tiny("bert", 1), labels=LABELS, context="document",
                                     context_tokens=64, context_separator=THIRTY).eval()
    doc = [["Obama", "visited", "Paris", "."], ["Peter", "left", "."]] * 6
    logits = lab.word_logits(doc, docs=["d"] * len(doc))
    assert [len(x) for x in logits] == [len(s) for s in doc]


def _one_line_exit_2(ran, name: str = "context_separator") -> None:  # noqa: ANN001
    assert ran.returncode == 2, ran.stderr
    assert len(ran.stderr.strip().splitlines()) == 1 and name in ran.stderr, ran.stderr
    assert "Traceback" not in ran.stderr


@pytest.mark.parametrize("separator", [LONG, THIRTY])
def test_train_refuses_the_separator_in_one_line_before_writing(tiny, tmp_path: Path,
                                                                separator: str) -> None:
    data = with_documents(write_corpus(tmp_path / "train.txt", 12), 4)
    out = tmp_path / "run"
    ran = seqrep("train", "--model", tiny("bert", 1), "--dataset", str(data),
                 "--test-split", str(data), "--epochs", "1", "--batch-size", "4",
                 "--context", "document", "--context-tokens", "16",
                 "--context-separator", separator, "--output", str(out), "--quiet")
    _one_line_exit_2(ran)
    assert not out.exists()


@pytest.mark.parametrize("separator", [LONG, THIRTY])
def test_predict_refuses_a_saved_separator_that_cannot_fit(tiny, tmp_path: Path,
                                                           separator: str) -> None:
    # a labeler folder whose config was written elsewhere (by hand, or by an older seqrep)
    lab = SequenceLabeler.from_model(tiny("bert", 1), labels=LABELS, context="document",
                                     context_tokens=16)
    folder = lab.save_pretrained(tmp_path / "lab")
    config = json.loads((folder / "config.json").read_text())
    config["labeler"]["context_separator"] = separator
    (folder / "config.json").write_text(json.dumps(config))
    ran = seqrep("predict", str(folder), "Obama visited Paris. Peter left Berlin. He did.")
    _one_line_exit_2(ran)
