"""--exit-layer auto with document context: the frozen-probe sweep's training subset is whole
documents (as training reads them), not sentences picked one by one from across the corpus,
which would leave most sentences without the neighbours document context is for."""

from __future__ import annotations

from pathlib import Path

from support import write_corpus

from seqrep.config import LabelerConfig, TrainConfig
from seqrep.data.splits import load_data
from seqrep.train.probes import choose_exit_layer

LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]


def with_documents(path: Path, per_doc: int) -> Path:
    blocks = path.read_text(encoding="utf-8").strip().split("\n\n")
    path.write_text("\n\n".join(("-DOCSTART- O\n\n" if i % per_doc == 0 else "") + b
                                for i, b in enumerate(blocks)) + "\n", encoding="utf-8")
    return path


def test_the_probe_subset_is_whole_documents(tiny, tmp_path: Path) -> None:
    train = with_documents(write_corpus(tmp_path / "train.txt", 40), 6)  # 6 x 6, then 4
    val = with_documents(write_corpus(tmp_path / "val.txt", 8, seed=1), 4)
    data = load_data(TrainConfig(dataset=str(train), eval_split=str(val), test_split=None))
    assert [sum(s.doc_id == f"doc{i}" for s in data.train) for i in range(1, 8)] == \
        [6] * 6 + [4]
    lab = LabelerConfig(model=tiny("llama", 2), labels=LABELS, repetitions=1,
                        context="document", context_tokens=32)
    _, sweep = choose_exit_layer(lab, data, sentences=8, epochs=1, seed=3)
    # whole documents until 8 sentences: two of them, 6 + 6 or 6 + 4 (never 8 sentences
    # picked from across the corpus)
    assert sweep["sentences"] in (10, 12)


def test_the_sweep_takes_whole_documents_with_subset_unit_document(tiny, tmp_path: Path) -> None:
    """Sentence context with ``--subset-unit document``: the run's sweep (train.run's
    auto_exit_layer) takes whole documents too, as the run's own subsets do; with the
    sentence unit it takes exactly the count asked for."""
    from seqrep.train.plan import auto_exit_layer

    train = with_documents(write_corpus(tmp_path / "train.txt", 40), 6)  # 6 x 6, then 4
    val = with_documents(write_corpus(tmp_path / "val.txt", 8, seed=1), 4)
    lab = LabelerConfig(model=tiny("llama", 2), labels=LABELS, repetitions=1,
                        exit_layer="auto")
    for unit, expected in (("document", (10, 12)), ("sentence", (8,))):
        cfg = TrainConfig(dataset=str(train), eval_split=str(val), test_split=None,
                          subset_unit=unit, exit_search_sentences=8, subset_seed=3)
        data = load_data(cfg)
        _, sweep = auto_exit_layer(lab, cfg, data, quiet=True)
        assert sweep["sentences"] in expected, unit
