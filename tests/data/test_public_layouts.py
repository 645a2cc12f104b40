"""Layouts of public corpora read as they are published, with documented options and no
conversion script: WNUT-17 tweets, UD CoNLL-U, CoNLL-2000 chunking and SNIPS. The files are
small excerpts in each corpus' layout, written here (not copies of the corpora)."""

from __future__ import annotations

from pathlib import Path

from seqrep.data import load_corpus, read_corpus
from seqrep.data.readers import detect_format


def spans(sentence) -> list[tuple[str, str]]:  # noqa: ANN001
    return [(" ".join(sentence.words[s.start:s.end]), s.label) for s in sentence.spans]


# WNUT-17 (emerging entities): word<TAB>tag; the sentence breaks of the published files are
# lines holding only whitespace (a tab, spaces), and some are empty.
WNUT17 = ("@paulwalk\tO\nIt\tO\n's\tO\nthe\tO\nview\tO\nfrom\tO\nwhere\tO\nI\tO\n'm\tO\n"
          "living\tO\nfor\tO\ntwo\tO\nweeks\tO\n.\tO\nEmpire\tB-location\nState\tI-location\n"
          "Building\tI-location\n=\tO\nESB\tB-location\n.\tO\n\t\n"
          "Watching\tO\nStar\tB-creative-work\nWars\tI-creative-work\nwith\tO\n"
          "@jo_b\tO\n🙂\tO\n#TGIF\tO\n \t \n\n"
          "RT\tO\nGoogle\tB-corporation\nPixel\tB-product\nhttp://t.co/x1\tO\n\t\n")


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


# UD CoNLL-U: multiword tokens (2-3 "don't" = "do" "n't") are not words, their syntactic
# words are; empty nodes (5.1, an elided verb) are not words either.
UD = [
    "# newdoc id = weblog-1", "# sent_id = s1", "# text = I don't know.",
    "1\tI\tI\tPRON\tPRP\t_\t4\tnsubj\t_\t_",
    "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_",
    "2\tdo\tdo\tAUX\tVBP\t_\t4\taux\t_\t_",
    "3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_",
    "4\tknow\tknow\tVERB\tVB\t_\t0\troot\t_\tSpaceAfter=No",
    "5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t_\t_",
    "",
    "# sent_id = s2", "# text = Sue likes tea and Mary coffee",
    "1\tSue\tSue\tPROPN\tNNP\t_\t2\tnsubj\t_\t_",
    "2\tlikes\tlike\tVERB\tVBZ\t_\t0\troot\t_\t_",
    "3\ttea\ttea\tNOUN\tNN\t_\t2\tobj\t_\t_",
    "4\tand\tand\tCCONJ\tCC\t_\t5\tcc\t_\t_",
    "5\tMary\tMary\tPROPN\tNNP\t_\t2\tconj\t_\t_",
    "5.1\tlikes\tlike\tVERB\tVBZ\t_\t_\t_\t2:conj\tCopyOf=2",
    "6\tcoffee\tcoffee\tNOUN\tNN\t_\t5\torphan\t_\t_",
    "",
    "# sent_id = s3", "# text = Vámonos al mar.",
    "1-3\tVámonos\t_\t_\t_\t_\t_\t_\t_\t_",
    "1\tVamos\tir\tVERB\t_\t_\t0\troot\t_\t_",
    "2\tnos\tnosotros\tPRON\t_\t_\t1\tobj\t_\t_",
    "3\t_\t_\tX\t_\t_\t1\tdep\t_\t_",
    "4-5\tal\t_\t_\t_\t_\t_\t_\t_\t_",
    "4\ta\ta\tADP\t_\t_\t6\tcase\t_\t_",
    "5\tel\tel\tDET\t_\t_\t6\tdet\t_\t_",
    "6\tmar\tmar\tNOUN\t_\t_\t1\tobl\t_\tSpaceAfter=No",
    "7\t.\t.\tPUNCT\t_\t_\t1\tpunct\t_\t_",
    "",
]


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


# CoNLL-2000 chunking: word POS chunk, the chunk tag last (IOB2).
CONLL2000 = """Confidence NN B-NP
in IN B-PP
the DT B-NP
pound NN I-NP
is VBZ B-VP
widely RB I-VP
expected VBN I-VP
to TO I-VP
take VB I-VP
another DT B-NP
sharp JJ I-NP
dive NN I-NP
if IN B-SBAR
`` `` O
trade NN B-NP
figures NNS I-NP
'' '' O
for IN B-PP
September NNP B-NP
, , O
due JJ B-ADJP
for IN B-PP
release NN B-NP
tomorrow NN B-NP
, , O
fail VB B-VP
to TO I-VP
show VB I-VP
a DT B-NP
substantial JJ I-NP
improvement NN I-NP
. . O

Chancellor NNP O
of IN B-PP
the DT B-NP
Exchequer NNP I-NP
Nigel NNP B-NP
Lawson NNP I-NP
's POS B-NP
restated VBN I-NP
commitment NN I-NP
to TO B-PP
a DT B-NP
firm NN I-NP
monetary JJ I-NP
policy NN I-NP
has VBZ B-VP
helped VBN I-VP
to TO I-VP
prevent VB I-VP
a DT B-NP
freefall NN I-NP
in IN B-PP
sterling NN B-NP
over IN B-PP
the DT B-NP
past JJ I-NP
week NN I-NP
. . O
"""


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


# SNIPS (as in the slot-filling releases): train/ valid/ test/, each seq.in + seq.out (+ label).
SNIPS = {
    "train": (["add sabrina salerno to the grime instrumentals playlist",
               "i want to bring four people to a place that s close to downtown that serves "
               "churrascaria cuisine",
               "put lindsey cardinale into my hillary clinton s women s history month playlist"],
              ["O B-artist I-artist O O B-playlist I-playlist O",
               "O O O O B-party_size_number O O O O O O B-spatial_relation O B-poi O O "
               "B-cuisine O",
               "O B-artist I-artist O B-playlist_owner B-playlist I-playlist I-playlist "
               "I-playlist I-playlist I-playlist I-playlist O"],
              ["AddToPlaylist", "BookRestaurant", "AddToPlaylist"]),
    "valid": (["i d like to have this track onto my classical relaxations playlist"],
              ["O O O O O O B-music_item O B-playlist_owner B-playlist I-playlist O"],
              ["AddToPlaylist"]),
    "test": (["add sabrina salerno to the grime instrumentals playlist", "rate this album 4"],
             ["O B-artist I-artist O O B-playlist I-playlist O",
              "O B-object_select B-object_type B-rating_value"],
             ["AddToPlaylist", "RateBook"]),
}


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
