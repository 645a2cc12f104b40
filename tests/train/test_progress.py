"""What ``train`` shows while it runs (issue 37 item 18): validation and the final test show
sentences/s and an ETA as ``seqrep evaluate`` does, and every score on screen and in
``log.jsonl`` carries the one name of the task's metric (F1 for spans, accuracy for token
tagging), each decoding named once."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from support import train_configs, write_corpus

from seqrep.train import train

POS = [("Obama", "PROPN"), ("Paris", "PROPN"), ("visited", "VERB"), ("left", "VERB"),
       ("the", "DET"), ("city", "NOUN"), ("of", "ADP"), (".", "PUNCT")]


def write_pos(path: Path, n: int, seed: int = 0) -> Path:
    """A CoNLL file where every word has a plain tag (token tagging, as UD's UPOS)."""
    rng = random.Random(seed)
    blocks = []
    for _ in range(n):
        words = [POS[rng.randrange(2)], POS[2 + rng.randrange(2)], *POS[4:7],
                 POS[rng.randrange(2)], POS[7]]
        blocks.append("\n".join(f"{w} {t}" for w, t in words))
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    return path


def bar_frames(err: str, what: str, total: int) -> list[str]:
    """The frames of a progress bar over ``total`` sentences described as ``what``."""
    return re.findall(rf"{what}\S*\s[^\r\n]*?\d+/{total} \[[^\]]*sent/s\]", err)


def test_validation_and_test_show_progress(tiny, tmp_path: Path,
                                           capsys: pytest.CaptureFixture) -> None:
    # 60 sentences: 6 carved for validation (10 %), 54 train; 12 test sentences
    corpus = (str(write_corpus(tmp_path / "train.txt", 60)),
              str(write_corpus(tmp_path / "test.txt", 12, seed=1)))
    train(*train_configs(tiny("llama"), corpus, epochs=1, eval_batch_size=2), tmp_path / "run")
    out, err = capsys.readouterr()
    assert bar_frames(err, "validation", 6), err[-3000:]
    assert bar_frames(err, "test", 12), err[-3000:]
    # spans: F1, and the decoding not chosen is the one shown beside the chosen one
    lines = [x for x in out.splitlines() if x.startswith("eval step")]
    assert lines and all(re.search(r"val F1 [\d.]+% \((constrained; greedy|greedy; "
                                   r"constrained) [\d.]+%\)", x) for x in lines), out
    assert re.search(r"^test F1 [\d.]+%", out, re.M), out
    log = [json.loads(x) for x in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert {"f1_greedy", "f1_constrained"} <= set(log[0])


def test_quiet_training_shows_no_progress(tiny, tmp_path: Path,
                                          capsys: pytest.CaptureFixture) -> None:
    corpus = (str(write_corpus(tmp_path / "train.txt", 20)),
              str(write_corpus(tmp_path / "test.txt", 4, seed=1)))
    train(*train_configs(tiny("llama"), corpus, epochs=1), tmp_path / "run", quiet=True)
    out, err = capsys.readouterr()
    assert "sent/s" not in err and "eval step" not in out


def test_token_tagging_names_its_metric_once(tiny, tmp_path: Path,
                                             capsys: pytest.CaptureFixture) -> None:
    corpus = (str(write_pos(tmp_path / "train.txt", 40)),
              str(write_pos(tmp_path / "test.txt", 6, seed=1)))
    metrics = train(*train_configs(tiny("llama"), corpus, epochs=1), tmp_path / "run")
    assert metrics["task"] == "tokens"
    out, err = capsys.readouterr()
    assert "F1" not in out and "f1" not in err, out + err
    lines = [x for x in out.splitlines() if x.startswith("eval step")]
    assert lines and all(re.search(r"val accuracy [\d.]+% \(greedy\), best [\d.]+%$", x)
                         for x in lines), out
    assert re.search(r"^test accuracy [\d.]+% \(greedy decoding", out, re.M), out
    assert "best_val_accuracy=" in err, err[-2000:]
    log = [json.loads(x) for x in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert "f1_constrained" not in log[0] and log[0]["f1_greedy"] == log[0]["f1"]
