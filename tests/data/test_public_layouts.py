"""Layouts of public corpora read as they are published, with documented options and no
conversion script: WNUT-17 tweets, UD CoNLL-U, CoNLL-2000 chunking and SNIPS. The files are
small excerpts in each corpus' layout, written here (not copies of the corpora)."""

from __future__ import annotations

from pathlib import Path

from layouts import CONLL2000, SNIPS, UD, WNUT17

from seqrep.data import load_corpus, read_corpus
from seqrep.data.readers import detect_format


def spans(sentence) -> list[tuple[str, str]]:  # noqa: ANN001
    return [(" ".join(sentence.words[s.start:s.end]), s.label) for s in sentence.spans]


def test_wnut17_tab_columns_and_whitespace_only_breaks(tmp_path: Path) -> None:
    path = tmp_path / "emerging.dev.conll"
    path.write_text(WNUT17, encoding="utf-8")
    assert detect_format(path) == "conll"
    corpus = read_corpus(path)
    assert [len(s) for s in corpus] == [20, 7, 4]
    assert spans(corpus[0]) == [("Empire State Building", "location"), ("ESB", "location")]
    assert spans(corpus[1]) == [("Star Wars", "creative-work")]
    assert corpus[1].words[-3:] == ("@jo_b", "🙂", "#TGIF")
    assert spans(corpus[2]) == [("Google", "corporation"), ("Pixel", "product")]
    assert corpus.stats()["spans_per_label"] == {"corporation": 1, "creative-work": 1,
                                                 "location": 2, "product": 1}
    assert corpus.repaired == 0
    # the published test file's suffix is .annotated: its content says it is CoNLL
    test = tmp_path / "emerging.test.annotated"
    test.write_text(WNUT17, encoding="utf-8")
    assert detect_format(test) == "conll" and read_corpus(test).stats() == corpus.stats()


def test_ud_conllu_words_are_the_syntactic_words(tmp_path: Path) -> None:
    path = tmp_path / "en_ewt-ud-dev.conllu"
    path.write_text("\n".join(UD) + "\n", encoding="utf-8")
    corpus = read_corpus(path)  # UPOS is the default label
    first, second, third = corpus
    assert first.words == ("I", "do", "n't", "know", ".")
    assert first.tags == ("B-PRON", "B-AUX", "B-PART", "B-VERB", "B-PUNCT")
    assert first.meta["multiword"] == [(1, 3, "don't")]
    assert second.words == ("Sue", "likes", "tea", "and", "Mary", "coffee")  # no 5.1
    assert third.words == ("Vamos", "nos", "_", "a", "el", "mar", ".")
    assert third.meta["multiword"] == [(0, 3, "Vámonos"), (3, 5, "al")]
    # exact counts: 3 sentences, 18 syntactic words, one width-1 span per word
    assert corpus.stats()["sentences"] == 3
    assert corpus.stats()["tokens"] == corpus.stats()["spans"] == 18
    assert corpus.stats()["spans_per_label"]["VERB"] == 3
    assert [s.doc_id for s in corpus] == ["weblog-1"] * 3
    assert read_corpus(path, label_column="xpos")[0].tags[:3] == ("B-PRP", "B-VBP", "B-RB")
    assert [s.tags for s in read_corpus(path, label_column="deprel")][1][4] == "B-conj"


def test_conll2000_chunks_by_default_and_pos_by_column(tmp_path: Path) -> None:
    path = tmp_path / "train.txt"
    path.write_text(CONLL2000, encoding="utf-8")
    chunks = read_corpus(path, strict=True)  # the last column, IOB2: nothing to repair
    assert [len(s) for s in chunks] == [32, 27]
    assert spans(chunks[0])[:4] == [("Confidence", "NP"), ("in", "PP"), ("the pound", "NP"),
                                    ("is widely expected to take", "VP")]
    assert chunks.stats()["spans_per_label"] == {"ADJP": 1, "NP": 15, "PP": 7, "SBAR": 1,
                                                 "VP": 3}
    assert chunks.repaired == 0
    pos = read_corpus(path, tag_column=1)
    assert pos[0].words == chunks[0].words
    assert pos[0].tags[:3] == ("B-NN", "B-IN", "B-DT")
    assert pos[0].tags[13] == "B-``" and pos[1].tags[6] == "B-POS"
    assert pos.stats()["spans"] == pos.stats()["tokens"] == 59


def test_snips_split_folders(tmp_path: Path) -> None:
    root = tmp_path / "snips"
    for split, (words, tags, intents) in SNIPS.items():
        (root / split).mkdir(parents=True)
        for name, lines in (("seq.in", words), ("seq.out", tags), ("label", intents)):
            (root / split / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    train, dev, test = (load_corpus(root, split) for split in ("train", "dev", "test"))
    assert [c.name for c in (train, dev, test)] == ["snips/train", "snips/validation",
                                                    "snips/test"]
    assert [len(c) for c in (train, dev, test)] == [3, 1, 2]
    assert [c.stats()["tokens"] for c in (train, dev, test)] == [8 + 18 + 13, 12, 12]
    assert spans(train[2]) == [("lindsey cardinale", "artist"), ("my", "playlist_owner"),
                               ("hillary clinton s women s history month", "playlist")]
    assert spans(dev[0]) == [("track", "music_item"), ("my", "playlist_owner"),
                             ("classical relaxations", "playlist")]
    assert spans(train[1]) == [("four", "party_size_number"), ("close", "spatial_relation"),
                               ("downtown", "poi"), ("churrascaria", "cuisine")]
    assert [s.meta["intent"] for s in test] == ["AddToPlaylist", "RateBook"]
    assert train.repaired == dev.repaired == test.repaired == 0
