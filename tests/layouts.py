"""Small excerpts in the layouts public corpora are published in (WNUT-17 tweets, UD CoNLL-U,
CoNLL-2000 chunking, SNIPS), written by the tests; not copies of the corpora."""

from __future__ import annotations

from pathlib import Path

# WNUT-17 (emerging entities): word<TAB>tag; the sentence breaks of the published files are
# lines holding only whitespace (a tab, spaces), and some are empty.
WNUT17 = ("@paulwalk\tO\nIt\tO\n's\tO\nthe\tO\nview\tO\nfrom\tO\nwhere\tO\nI\tO\n'm\tO\n"
          "living\tO\nfor\tO\ntwo\tO\nweeks\tO\n.\tO\nEmpire\tB-location\nState\tI-location\n"
          "Building\tI-location\n=\tO\nESB\tB-location\n.\tO\n\t\n"
          "Watching\tO\nStar\tB-creative-work\nWars\tI-creative-work\nwith\tO\n"
          "@jo_b\tO\n🙂\tO\n#TGIF\tO\n \t \n\n"
          "RT\tO\nGoogle\tB-corporation\nPixel\tB-product\nhttp://t.co/x1\tO\n\t\n")


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


def write_layouts(root: Path) -> dict[str, Path]:
    """Each layout on disk under ``root``: name -> the path a user passes to seqrep."""
    root.mkdir(parents=True, exist_ok=True)
    for name in ("wnut17train.conll", "emerging.test.annotated"):  # WNUT-17's published names
        (root / name).write_text(WNUT17, encoding="utf-8")
    (root / "ud.conllu").write_text("\n".join(UD) + "\n", encoding="utf-8")
    (root / "conll2000.txt").write_text(CONLL2000, encoding="utf-8")
    for split, (words, tags, intents) in SNIPS.items():
        (root / "snips" / split).mkdir(parents=True, exist_ok=True)
        for name, lines in (("seq.in", words), ("seq.out", tags), ("label", intents)):
            (root / "snips" / split / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"wnut17": root / "wnut17train.conll", "wnut17-test": root / "emerging.test.annotated",
            "ud": root / "ud.conllu",
            "conll2000": root / "conll2000.txt", "snips": root / "snips"}
