"""Fixtures of the serving tests: one tiny random labeler saved as a folder (the path the
server loads), the labeler itself, and helpers to run an app with its lifespan."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import serving_app

from seqrep.model.labeler import SequenceLabeler

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]

TEXTS = [
    "Obama visited Paris and Berlin last week. Peter Blackburn reports from Brussels.",
    "The European Union said on Thursday it disagreed with German advice.",
    "Emoji 🙂 and naïve café résumé words, 東京 and Москва too!",
    "Nadim Ladki ate a very long sandwich in Al-Ain, United Arab Emirates.",
    "Obama's U.S. visit didn't happen.\nA second line: Tokyo, Madrid; Maria left.",
    "short",
]


@pytest.fixture(scope="session")
def texts() -> list[str]:
    return list(TEXTS)


@pytest.fixture(scope="session")
def labeler_dir(tiny, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saved tiny labeler (random llama backbone, r=1, frozen: the head references it)."""
    lab = SequenceLabeler.from_model(tiny("llama", 2), labels=LABELS, repetitions=1,
                                     finetune="frozen", exit_layer="all")  # both layers
    return lab.save_pretrained(tmp_path_factory.mktemp("serve") / "labeler")


@pytest.fixture(scope="session")
def labeler(labeler_dir: Path) -> SequenceLabeler:
    return SequenceLabeler.from_pretrained(labeler_dir).eval()


class Proxy:
    """A labeler stand-in forwarding everything, with a hook before each ``word_logits``."""

    def __init__(self, labeler: SequenceLabeler, before: Callable[[list], None]) -> None:
        self._labeler, self._before = labeler, before
        self.calls: list[list] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._labeler, name)

    def word_logits(self, sentences, *args, **kw):  # noqa: ANN001, ANN201
        self.calls.append([tuple(s) for s in sentences])
        self._before(sentences)
        return self._labeler.word_logits(sentences, *args, **kw)


@pytest.fixture
def proxy() -> type[Proxy]:
    return Proxy


@pytest.fixture
def encodes(monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[tuple[str, ...]]]:
    """``seen = encodes()``: from then on every sentence the encoder turns into subtoken ids
    (where each row builder starts) is recorded in ``seen``, in the order asked."""

    def start() -> list[tuple[str, ...]]:
        from seqrep.encode.pipeline import Encoder

        seen: list[tuple[str, ...]] = []
        real = Encoder.word_ids

        def counted(self, words):  # noqa: ANN001, ANN202
            seen.append(tuple(words))
            return real(self, words)

        monkeypatch.setattr(Encoder, "word_ids", counted)
        return seen

    return start


@pytest.fixture
def serving():
    """``async with serving(app) as client``: the app with its lifespan, over ASGI."""
    return serving_app


def wait_until(condition: Callable[[], bool], timeout: float = 30) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise TimeoutError("condition not met")
        time.sleep(0.005)


@pytest.fixture
def until():
    return wait_until


@pytest.fixture
def gate():
    """A threading.Event set on teardown, so a test that fails never leaves a worker stuck."""
    event = threading.Event()
    yield event
    event.set()


def assert_same(got: list[dict], want: list[dict]) -> None:
    """Records equal: text, sentences, tags and span offsets exactly; span scores to the 4th
    decimal they are rounded to (one unit of rounding apart at most: batch-mates may move a
    logit in its last float bits, never a tag)."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g["text"] == w["text"] and g["sentences"] == w["sentences"]
        strip = [{k: v for k, v in s.items() if k != "score"} for s in g["spans"]]
        assert strip == [{k: v for k, v in s.items() if k != "score"} for s in w["spans"]]
        for a, b in zip(g["spans"], w["spans"]):
            assert abs(a["score"] - b["score"]) <= 1.5e-4, (a, b)
        for s in g["spans"]:
            assert g["text"][s["start"]:s["end"]] == s["text"]


@pytest.fixture
def same():
    return assert_same
