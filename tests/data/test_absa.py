from __future__ import annotations

from pathlib import Path

import pytest

from seqrep.data.absa import read_absa_tokenized, read_semeval_xml
from seqrep.errors import ConfigError, DataError

TRAIN_XML = "semeval2014_xml/Restaurants_Train_v2.xml"
TEST_XML = "semeval2014_xml/Restaurants_Test_Data_phaseB.xml"


def spans(sentence) -> list[tuple[str, str]]:  # noqa: ANN001
    return [(" ".join(sentence.words[s.start:s.end]), s.label) for s in sentence.spans]


def test_xml_aspect_terms_on_words(fixtures: Path) -> None:
    corpus = read_semeval_xml(fixtures / "tiny_absa.xml")
    assert len(corpus) == 4
    first = corpus[0]
    assert first.text == "The staff was horrible but the dress code was fine."
    assert all(first.text[s:e] == w for w, (s, e) in zip(first.words, first.offsets, strict=True))
    # "dress cod" is cut mid-word: extended to "dress code"
    assert spans(first) == [("staff", "ASP"), ("dress code", "ASP")]
    assert corpus[1].spans == ()
    assert spans(corpus[2]) == [("sushi", "ASP"), ("sushi rolls", "ASP"), ("service", "ASP")]
    assert corpus[3].text == "Food & drinks: ok."
    assert [s.meta["id"] for s in corpus] == ["1", "2", "3", "4"]


def test_xml_notes_report_every_term_not_placed_exactly(fixtures: Path) -> None:
    corpus = read_semeval_xml(fixtures / "tiny_absa.xml")
    kinds = [n.split(":")[0] for n in corpus.notes]
    assert kinds == ["cut mid-word", "overlapping", "duplicate", "no word"]
    assert "sentence 1: aspect term 'dress cod'" in corpus.notes[0]
    assert "'dress code'" in corpus.notes[0]
    assert "sentence 3: aspect term 'sushi' (ASP, chars 16-21) overlaps" in corpus.notes[1]
    assert corpus[0].meta["notes"] == corpus.notes[:1]
    # 9 terms in the file: 6 labeled, 1 repeated, 1 overlapping, 1 on a space
    assert corpus.stats()["spans"] == 6


def test_xml_polarity_labels(fixtures: Path) -> None:
    corpus = read_semeval_xml(fixtures / "tiny_absa.xml", polarity=True)
    assert spans(corpus[0]) == [("staff", "NEG"), ("dress code", "NEU")]
    assert spans(corpus[2]) == [("sushi", "POS"), ("sushi rolls", "POS"), ("service", "CONFLICT")]


def test_xml_alignment_options(fixtures: Path) -> None:
    contracted = read_semeval_xml(fixtures / "tiny_absa.xml", alignment="contract")
    assert spans(contracted[0]) == [("staff", "ASP"), ("dress", "ASP")]
    with pytest.raises(DataError, match=r"tiny_absa\.xml:7: aspect term 'dress cod' \(ASP, chars "
                                        r"31-40\) does not fall on word boundaries "
                                        r"\(alignment='strict'\), in tiny_absa\.xml sentence 1$"):
        read_semeval_xml(fixtures / "tiny_absa.xml", alignment="strict")
    with pytest.raises(ConfigError, match="expected one of expand, contract, strict"):
        read_semeval_xml(fixtures / "tiny_absa.xml", alignment="nearest")


@pytest.mark.parametrize("body, pattern", [
    ('<sentence id="9"><text>abc</text><aspectTerms><aspectTerm term="x" from="1" to="9"/>'
     "</aspectTerms></sentence>", r"x\.xml:3: aspect term 'x' has offsets 1-9 outside"),
    ('<sentence id="9"><text>abc</text><aspectTerms><aspectTerm term="x" from="a" to="2"/>'
     "</aspectTerms></sentence>", r"x\.xml:3: aspect term 'x' needs integer"),
    ('<sentence id="9"><text>abc</text></sentence', r"x\.xml:\d+: malformed XML"),
    ('<sentence id="9"></sentence>', r"x\.xml:3: sentence 9 has no <text>"),
    ("", r"x\.xml: no <sentence> elements"),
])
def test_xml_errors(tmp_path: Path, body: str, pattern: str) -> None:
    path = tmp_path / "x.xml"
    path.write_text(f'<?xml version="1.0"?>\n<sentences>\n{body}\n</sentences>\n')
    with pytest.raises(DataError, match=pattern):
        read_semeval_xml(path)


def test_xml_without_polarity_under_polarity_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "x.xml"
    path.write_text('<sentences>\n<sentence id="1"><text>Good food</text>\n<aspectTerms>'
                    '<aspectTerm term="food" from="5" to="9"/></aspectTerms></sentence>'
                    "</sentences>")
    assert read_semeval_xml(path).stats()["spans"] == 1
    with pytest.raises(DataError, match=r"x\.xml:3: aspect term 'food' has polarity None"):
        read_semeval_xml(path, polarity=True)


def test_tokenized_format(fixtures: Path) -> None:
    corpus = read_absa_tokenized(fixtures / "tiny_absa.txt")
    assert spans(corpus[0]) == [("staff", "ASP")]
    # IO style: adjacent T-POS merge into one term; T-POS next to T-NEU stay apart
    assert spans(corpus[1]) == [("wine list", "ASP"), ("pasta", "ASP")]
    assert spans(corpus[2]) == [("fish", "ASP"), ("tacos", "ASP")]
    assert "a=b" in corpus[2].words  # split on the last "="
    assert corpus[2].text == "The fish tacos were okay , a=b great!"
    assert corpus[0].offsets[1] == (4, 9)
    polar = read_absa_tokenized(fixtures / "tiny_absa.txt", polarity=True)
    assert spans(polar[2]) == [("fish", "POS"), ("tacos", "NEU")]
    assert polar.span_types() == ["NEG", "NEU", "POS"]


@pytest.mark.parametrize("line, pattern", [
    ("no separator here", r"x\.txt:2: expected 'sentence####word=TAG"),
    ("Good.####Good=O .", r"x\.txt:2: item '\.' is not word=TAG"),
    ("Good.####Good=B-POS .=O", r"x\.txt:2: unknown tag 'B-POS'"),
    ("Good.####", r"x\.txt:2: no words after '####'"),
])
def test_tokenized_errors(tmp_path: Path, line: str, pattern: str) -> None:
    path = tmp_path / "x.txt"
    path.write_text(f"Ok.####Ok=O .=O\n{line}\n")
    with pytest.raises(DataError, match=pattern):
        read_absa_tokenized(path)


def test_real_semeval_xml(rest14_dir: Path) -> None:
    train = read_semeval_xml(rest14_dir / TRAIN_XML)
    assert (len(train), train.stats()["spans"]) == (3_041, 3_693)
    polar = read_semeval_xml(rest14_dir / TRAIN_XML, polarity=True)
    assert polar.stats()["spans_per_label"] == {"POS": 2_164, "NEG": 805, "NEU": 633,
                                                "CONFLICT": 91}
    # 5 terms are not on word boundaries: the 3 cut mid-word in the original ("dress cod",
    # "chicken in curry sauc", "mascarpone with chocolate chip") and 2 that end before "-" inside
    # a hyphenated word ("Food" in "Food-awesome", "... risotto" in "risotto-yum"). Terms before
    # a clitic ("chef" in "chef's") end on a word boundary, since "'s" is a word of its own.
    assert len(train.notes) == 5
    prefix = "cut mid-word: Restaurants_Train_v2.xml sentence "
    assert all(n.startswith(prefix) for n in train.notes)
    for cut in ("'dress cod'", "'chicken in curry sauc'", "'mascarpone with chocolate chip'",
                "'Food' (ASP, chars 0-4)", "labeled the words 'mahi mahi (on saffron risotto-yum'"):
        assert sum(cut in n for n in train.notes) == 1
    chef = next(s for s in train if s.meta["id"] == "856")  # "... - chef's passion (and kitchen's"
    assert {("chef", "ASP"), ("kitchen", "ASP")} <= set(spans(chef))
    test = read_semeval_xml(rest14_dir / TEST_XML)
    assert (len(test), test.stats()["spans"]) == (800, 1_134)
    # only "salads" in "salads-all"; "sangria" in "sangria's" is now on word boundaries
    assert len(test.notes) == 1 and "labeled the words 'salads-all'" in test.notes[0]


def test_real_tokenized(rest14_dir: Path) -> None:
    sizes = {}
    for split in ("train", "dev", "test"):
        corpus = read_absa_tokenized(rest14_dir / "bert_e2e_absa" / f"{split}.txt", polarity=True)
        sizes[split] = (len(corpus), corpus.stats()["spans"])
    # conflict terms are dropped in this version, so there are fewer spans than in the XML
    assert sizes == {"train": (2_736, 3_272), "dev": (304, 331), "test": (800, 1_122)}
