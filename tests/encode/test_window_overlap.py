"""How much consecutive document windows share (``context_overlap``): a labeler setting that
training and labeling read, and that labeling may override (``--context-overlap``) to label
a document in fewer tokens. Expected rows are written out by hand from the rule in
seqrep.encode.document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seqrep.config import InferenceConfig, LabelerConfig
from seqrep.encode.document import encode_document
from seqrep.encode.repeat import RepeatSpec
from seqrep.errors import ConfigError


def _doc(sizes: list[int]) -> list[list[list[int]]]:
    out, j = [], 0
    for n in sizes:
        out.append([[10 + j + w] for w in range(n)])
        j += n
    return out


def test_without_overlap_each_window_reads_every_word_it_holds() -> None:
    # 7 words of one subtoken, a budget of 4: at overlap 0 the windows are words 0-3 and
    # 4-6, side by side, and each reads all of its words (at half overlap: 0-3, 2-5, 4-6)
    rows = encode_document(_doc([2, 3, 2]), RepeatSpec(repetitions=1), limit=4, overlap=0.0)
    assert [places for _, places in rows] == [((0, 0), (0, 1), (1, 0), (1, 1)),
                                              ((1, 2), (2, 0), (2, 1))]
    assert [seg.input_ids for seg, _ in rows] == [(10, 11, 12, 13) * 2, (14, 15, 16) * 2]
    half = encode_document(_doc([2, 3, 2]), RepeatSpec(repetitions=1), limit=4)
    assert len(half) == 3 and half == encode_document(_doc([2, 3, 2]), RepeatSpec(
        repetitions=1), limit=4, overlap=0.5)


@pytest.mark.parametrize("bad", [-0.1, 0.8, 1.0])
def test_the_overlap_is_checked_where_declared(bad: float) -> None:
    with pytest.raises(ConfigError, match=f"context_overlap={bad}; expected 0 to 0.75"):
        LabelerConfig(context_overlap=bad)
    with pytest.raises(ConfigError, match=f"--context-overlap {bad}; expected 0 to 0.75"):
        InferenceConfig(context_overlap=bad)
    assert LabelerConfig().context_overlap == 0.5
    assert InferenceConfig().context_overlap is None  # the run's own


@pytest.fixture(scope="module")
def folder(tiny, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from seqrep.model.labeler import SequenceLabeler

    lab = SequenceLabeler.from_model(tiny("llama"), labels=["O", "B-PER", "I-PER"],
                                     finetune="frozen", context="document-focus",
                                     context_tokens=12)
    return lab.save_pretrained(tmp_path_factory.mktemp("overlap") / "lab")


WORDS = [f"w{i} x{i} y{i}".split() for i in range(12)]


def _first_copies(labeler) -> tuple[int, int]:  # noqa: ANN001
    """(subtokens in the windows' first copies, subtokens in the document) for WORDS as one
    document: windows side by side hold each subtoken once; overlapping ones, some twice.
    A focus row at r = 1 is ``prefix window separator read-words suffix`` and the rows read
    each word once, so the windows hold what the rows hold beyond that."""
    items = labeler.encoder.items(WORDS, docs=["d"] * len(WORDS))
    spec = labeler.encoder.spec
    ids, _ = zip(*(labeler.encoder.word_ids(s) for s in WORDS))
    whole = sum(len(w) for s in ids for w in s) + len(labeler.encoder.context_separator) * 11
    fixed = len(spec.prefix) + len(spec.suffix) + len(spec.separator)
    first = sum(len(item.segment.input_ids) - fixed for item in items) - whole
    return first, whole


def test_the_labeler_reads_its_overlap_and_a_loaded_one_takes_an_override(folder) -> None:
    from seqrep.export import load

    saved = load(folder, InferenceConfig(runtime="torch", device="cpu", precision="fp32"))
    assert saved.config.context_overlap == 0.5
    first, whole = _first_copies(saved)
    assert first > whole  # half-overlapping windows repeat words
    side = load(folder, InferenceConfig(runtime="torch", device="cpu", precision="fp32",
                                        context_overlap=0.0))
    assert side.config.context_overlap == 0.0
    first, whole = _first_copies(side)
    assert first == whole  # disjoint windows: every subtoken once
    tags = [r["tags"] for r in side.predict_words(WORDS, docs=["d"] * 12)]
    assert [len(t) for t in tags] == [3] * 12


def test_a_labeler_saved_before_the_setting_keeps_half_overlap(folder, tmp_path) -> None:
    import shutil

    from seqrep.model.labeler import SequenceLabeler

    old = tmp_path / "old"
    shutil.copytree(folder, old)
    config = json.loads((old / "config.json").read_text())
    config["labeler"].pop("context_overlap")
    (old / "config.json").write_text(json.dumps(config))
    assert SequenceLabeler.from_pretrained(old).config.context_overlap == 0.5


def test_a_finished_run_keeps_its_id() -> None:
    from seqrep.lab.identity import config_hash

    run = {"labeler": {"context": "document-focus", "context_tokens": 256}, "train": {}}
    assert config_hash(run) == config_hash(
        {"labeler": {**run["labeler"], "context_overlap": 0.5}, "train": {}})
    assert config_hash(run) != config_hash(
        {"labeler": {**run["labeler"], "context_overlap": 0.25}, "train": {}})
    sentence = {"labeler": {"context": "sentence"}, "train": {}}
    assert config_hash(sentence) == config_hash(
        {"labeler": {"context": "sentence", "context_overlap": 0.25}, "train": {}})


def test_the_spacy_component_takes_the_override(folder) -> None:
    spacy = pytest.importorskip("spacy", reason="the spacy extra is not installed")
    import seqrep.serve.spacy_component  # noqa: F401 - registers the factory

    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("seqrep", config={"model": str(folder), "context_overlap": 0.0})
    assert pipe.labeler.config.context_overlap == 0.0
    assert pipe.labeler.encoder.context_overlap == 0.0
    nlp = spacy.blank("en")
    assert nlp.add_pipe("seqrep", config={"model": str(folder)}).labeler.config \
        .context_overlap == 0.5
