from __future__ import annotations

import json
from pathlib import Path

import pytest

from seqrep.data.nlupp import read_nlupp
from seqrep.errors import ConfigError, DataError


def slots(sentence) -> list[tuple[str, str]]:  # noqa: ANN001
    return [(" ".join(sentence.words[s.start:s.end]), s.label) for s in sentence.spans]


def test_fixture_domains_folds_and_slots(fixtures: Path) -> None:
    root = fixtures / "nlupp"
    corpus = read_nlupp(root)
    assert len(corpus) == 5
    first = corpus[0]
    assert slots(first) == [("amazon prime", "company_name"), ("May", "date_to")]
    assert first.meta["domain"] == "banking" and first.meta["fold"] == 0
    assert first.meta["intents"] == ["how_much", "transfer_payment_deposit"]
    assert first.meta["slots"]["date_to"]["value"]["month"] == 5
    assert all(s.text[a:b] == w for s in corpus for w, (a, b) in zip(s.words, s.offsets,
                                                                   strict=True))
    assert [s.meta["domain"] for s in corpus] == ["banking"] * 3 + ["hotels"] * 2
    # the same folds from the data/ folder, a domain folder, or one file
    assert len(read_nlupp(root / "data")) == 5
    assert len(read_nlupp(root / "data" / "banking")) == 3
    assert len(read_nlupp(root / "data" / "banking" / "fold1.json")) == 1


def test_selection(fixtures: Path) -> None:
    root = fixtures / "nlupp"
    assert len(read_nlupp(root, domains=["hotels"])) == 2
    assert len(read_nlupp(root, domains="banking", folds=[1])) == 1
    assert len(read_nlupp(root, folds=[0])) == 4
    with pytest.raises(ConfigError, match="unknown NLU\\+\\+ domain 'travel'; expected one of "
                                          "banking, hotels"):
        read_nlupp(root, domains=["travel"])
    with pytest.raises(ConfigError, match="hotels has no fold 1; expected folds 0..0"):
        read_nlupp(root, folds=[1])


def test_lost_and_moved_slots_are_explained(fixtures: Path) -> None:
    corpus = read_nlupp(fixtures / "nlupp")
    # 7 slot spans in the files; "today" inside "only today" cannot be a second span
    assert corpus.stats()["spans"] == 6
    assert [n.split(":")[0] for n in corpus.notes] == ["cut mid-word", "overlapping"]
    # "Godaddy" inside "Godaddy-Inc" is extended to the word; the clitic "'s" is not a part of it
    assert "slot 'Godaddy' (company_name, chars 18-25)" in corpus.notes[0]
    assert "labeled the words 'Godaddy-Inc'" in corpus.notes[0]
    assert corpus[2].words[-3:] == ("Godaddy-Inc", "'s", "shop")
    assert slots(corpus[2]) == [("Godaddy-Inc", "company_name")]
    assert ("overlapping: hotels/fold0.json example [0] 'only today': slot 'today' (date, chars "
            "5-10) overlaps slot 'only today' (date_period, chars 0-10)") in corpus.notes[1]


@pytest.mark.parametrize("content, pattern", [
    ('[{"text": "hi", "slots": {"x": {"span": [0, 5]}}}]', r"fold0\.json: example \[0\] slot "
                                                          r"'x': offsets 0-5 outside the text"),
    ('[{"text": "hi", "slots": {"x": {"text": "hi"}}}]', r"expected \"span\": \[start, end\]"),
    ('[{"txt": "hi"}]', r"fold0\.json: example \[0\]: expected an object with a \"text\""),
    ('{"text": "hi"}', r"fold0\.json: expected a JSON list"),
    ('[{"text": "hi"},\n oops]', r"fold0\.json:2: invalid JSON"),
])
def test_errors(tmp_path: Path, content: str, pattern: str) -> None:
    (tmp_path / "banking").mkdir()
    (tmp_path / "banking" / "fold0.json").write_text(content)
    with pytest.raises(DataError, match=pattern):
        read_nlupp(tmp_path)


@pytest.mark.parametrize("content, pattern", [
    ('[{"text": "hi", "slots": ["x"]}]',
     r"fold0\.json: example \[0\]: \"slots\" is \[\"x\"\]; expected an object"),
    ('[{"text": "hi", "slots": "x"}]', r"example \[0\]: \"slots\" is \"x\"; expected an object"),
    ('[{"text": "hi", "slots": []}]', r"example \[0\]: \"slots\" is \[\]; expected an object"),
    ('[{"text": "hi", "slots": {"x": [0, 2]}}]',
     r"example \[0\] slot 'x': expected an object with \"span\", got \[0, 2\]"),
    ('[{"text": "hi", "slots": {"x": {"span": [true, 2]}}}]',
     r"example \[0\] slot 'x': expected \"span\": \[start, end\] \(two integers\), got "
     r"\[true, 2\]"),
    ('[{"text": "hi", "slots": {"x": {"span": [0, 1, 2]}}}]', r"slot 'x': expected \"span\""),
    ('[{"text": "hi", "slots": {"x": {"span": [0, 2], "text": 5}}}]',
     r"example \[0\] slot 'x': \"text\" is 5; expected a string"),
    ('[{"text": "hi", "slots": {"": {"span": [0, 2]}}}]',
     r"example \[0\]: a slot has an empty name; expected a non-empty string"),
    ('[{"text": 5}]', r"example \[0\]: expected an object with a \"text\" string"),
    ('[{"text": "hi", "intents": "greet"}]',
     r"example \[0\]: \"intents\" is \"greet\"; expected a list of strings"),
    ('[{"text": "hi", "intents": [1]}]', r"\"intents\" is \[1\]; expected a list of strings"),
    ("[" * 100_000, r"fold0\.json: invalid JSON \(nested too deeply"),
    ('[{"text": "a\\udc00"}]', r"fold0\.json: the string \"a\\udc00\" holds a lone surrogate"),
])
def test_wrong_types_name_the_file_and_example(tmp_path: Path, content: str,
                                               pattern: str) -> None:
    (tmp_path / "banking").mkdir()
    (tmp_path / "banking" / "fold0.json").write_text(content)
    with pytest.raises(DataError, match=pattern):
        read_nlupp(tmp_path)


def test_null_slots_and_intents_are_none(tmp_path: Path) -> None:
    (tmp_path / "banking").mkdir()
    (tmp_path / "banking" / "fold0.json").write_text(
        '[{"text": "hi", "slots": null, "intents": null}, {"text": ""}]')
    corpus = read_nlupp(tmp_path)
    assert [s.words for s in corpus] == [("hi",), ()]
    assert corpus[0].meta["slots"] == {} and corpus[0].meta["intents"] == []
    (tmp_path / "banking" / "fold0.json").write_text('[{"text": " "}]')
    with pytest.raises(DataError, match=r"no sentence has words \(1 examples, all empty\)"):
        read_nlupp(tmp_path)


@pytest.mark.parametrize("options, pattern", [
    ({"folds": ["a"]}, r"folds: expected fold numbers \(0\.\.19\), got 'a'"),
    ({"folds": 0}, None),
    ({"folds": ["0"]}, None),
    ({"folds": ["²"]}, r"folds: expected fold numbers \(0\.\.19\), got '²'"),
    ({"domains": 5}, r"domains: expected domain names \(banking, hotels\), got 5"),
])
def test_selection_option_types(fixtures: Path, options: dict, pattern: str | None) -> None:
    if pattern is None:
        assert len(read_nlupp(fixtures / "nlupp", **options)) == 4
    else:
        with pytest.raises(ConfigError, match=pattern):
            read_nlupp(fixtures / "nlupp", **options)


def test_strict_alignment_names_the_slot_and_the_example(tmp_path: Path) -> None:
    (tmp_path / "banking").mkdir()
    (tmp_path / "banking" / "fold0.json").write_text(json.dumps([
        {"text": "hi"},
        {"text": "pay Godaddy-Inc now", "slots": {"company_name": {"text": "Godaddy",
                                                                   "span": [4, 11]}}}]))
    assert slots(read_nlupp(tmp_path)[1]) == [("Godaddy-Inc", "company_name")]
    with pytest.raises(DataError, match=r"fold0\.json: slot 'Godaddy' \(company_name, chars "
                                        r"4-11\) does not fall on word boundaries "
                                        r"\(alignment='strict'\), in banking/fold0\.json "
                                        r"example \[1\] 'pay Godaddy-Inc now'$"):
        read_nlupp(tmp_path, alignment="strict")


def test_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no NLU\\+\\+ folds found"):
        read_nlupp(tmp_path)


def test_real_nlupp_every_span_survives_or_is_explained(nlupp_dir: Path) -> None:
    corpus = read_nlupp(nlupp_dir)
    raw = sum(len(ex.get("slots", {})) for domain in ("banking", "hotels") for k in range(20)
              for ex in json.loads((nlupp_dir / "data" / domain / f"fold{k}.json").read_text()))
    assert (len(corpus), raw) == (3_080, 1_987)
    assert len(read_nlupp(nlupp_dir, domains=["banking"])) == 2_071
    assert len(read_nlupp(nlupp_dir, domains=["hotels"])) == 1_009
    # 2 of the 1,987 slot spans are lost in spans -> tags: each overlaps another slot
    assert corpus.stats()["spans"] == 1_985
    lost = [n for n in corpus.notes if n.startswith(("overlapping", "no word", "duplicate"))]
    assert len(lost) == raw - corpus.stats()["spans"] == 2
    assert "'afternoon' (time_period, chars 48-57) overlaps slot 'this afternoon'" in lost[0]
    assert "'today' (date, chars 5-10) overlaps slot 'only today'" in lost[1]
    # every other slot falls on word boundaries: "Godaddy" in "Godaddy's webshop" and "today" in
    # "today's meeting" end before the clitic "'s", a word of its own, so none is widened
    assert len(corpus.notes) == 2
    assert not [n for n in corpus.notes if n.startswith("cut mid-word")]
    godaddy = next(s for s in corpus if s.text.startswith("how much did my wife spend in Godaddy"))
    assert slots(godaddy) == [("Godaddy", "company_name"), ("last week Monday", "date")]
    meeting = next(s for s in corpus if "to today's meeting" in s.text)
    assert slots(meeting) == [("page guynn", "person_name"), ("today", "date")]


def test_an_unreadable_directory_is_one_line(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    def refuse(self: Path):  # noqa: ANN202 - as a directory without read permission does
        raise PermissionError(13, "Permission denied", str(self))
    (tmp_path / "banking").mkdir()
    monkeypatch.setattr(Path, "iterdir", refuse)
    with pytest.raises(DataError, match=r": cannot list the directory \(Permission denied\)"):
        read_nlupp(tmp_path)
