from __future__ import annotations

import json
from pathlib import Path

import pytest

from seqrep.data.jsonl import read_jsonl
from seqrep.errors import DataError


def spans(sentence) -> list[tuple[str, str]]:  # noqa: ANN001
    return [(" ".join(sentence.words[s.start:s.end]), s.label) for s in sentence.spans]


def write(tmp_path: Path, *records: object) -> Path:
    path = tmp_path / "x.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n",
                    encoding="utf-8")
    return path


def test_fixture_both_record_shapes(fixtures: Path) -> None:
    corpus = read_jsonl(fixtures / "tiny.jsonl")
    assert len(corpus) == 5
    assert spans(corpus[0]) == [("Obama", "PER"), ("New York", "LOC")]
    assert corpus[0].meta == {"line": 1, "id": "t1"}
    assert corpus[1].doc_id == "d2"
    assert spans(corpus[1]) == [("Angela Merkel", "PER"), ("Macron", "PER")]
    third = corpus[2]
    assert third.words == ("Book", "a", "room", "in", "Paris", "for", "2", "nights", ".")
    assert spans(third) == [("Paris", "city"), ("2 nights", "duration")]
    # the stray I-LOC on line 4 is repaired and counted
    assert corpus[3].tags == ("B-LOC", "O", "O")
    assert corpus.repaired == 1
    # "café" inside "café-bar" is extended to the word and noted; "'s" is a word of its own
    assert corpus[4].words == ("The", "café-bar", "'s", "décor", "🙂", "is", "great")
    assert spans(corpus[4]) == [("café-bar", "place"), ("décor", "aspect")]
    assert corpus.notes == [corpus[4].meta["notes"][0]]
    assert corpus.notes[0].startswith("cut mid-word: tiny.jsonl:5: span 'café' (place, chars 4-8)")
    assert corpus.notes[0].endswith("labeled the words 'café-bar'")


def test_scheme_detected_over_the_file_or_given(tmp_path: Path) -> None:
    path = write(tmp_path, {"tokens": ["a", "b", "c"], "tags": ["S-X", "B-Y", "E-Y"]})
    assert spans(read_jsonl(path)[0]) == [("a", "X"), ("b c", "Y")]
    path = write(tmp_path, {"tokens": ["a", "b"], "tags": ["NN", "VB"]})
    assert read_jsonl(path)[0].tags == ("B-NN", "B-VB")
    path = write(tmp_path, {"tokens": ["a", "b"], "tags": ["I-X", "I-X"]},
                 {"tokens": ["c"], "tags": ["B-X"]})
    assert read_jsonl(path, scheme="IOB1")[0].tags == ("B-X", "I-X")
    with pytest.raises(DataError, match=r"x\.jsonl:1: invalid IOB2 sequence"):
        read_jsonl(path, scheme="IOB2", strict=True)


def test_alignment(tmp_path: Path) -> None:
    path = write(tmp_path, {"text": "dress code", "spans": [{"start": 0, "end": 9, "label": "A"}]})
    assert spans(read_jsonl(path)[0]) == [("dress code", "A")]
    assert spans(read_jsonl(path, alignment="contract")[0]) == [("dress", "A")]
    with pytest.raises(DataError, match=r"x\.jsonl:1: span 'dress cod' \(A, chars 0-9\) does not "
                                        r"fall on word boundaries \(alignment='strict'\), in "
                                        r"x\.jsonl:1$"):
        read_jsonl(path, alignment="strict")


@pytest.mark.parametrize("record, pattern", [
    ({"text": "abc", "spans": [{"start": 1, "end": 4, "label": "X"}]},
     r"x\.jsonl:2: span 0 \(X\) has offsets 1-4 outside the text \(0-3\)"),
    ({"text": "abc", "spans": [{"start": -1, "end": 2, "label": "X"}]},
     r"x\.jsonl:2: span 0 \(X\) has offsets -1-2 outside"),
    ({"text": "abc", "spans": [{"start": 2, "end": 2, "label": "X"}]}, r"x\.jsonl:2: span 0"),
    ({"text": "abc", "spans": [{"begin": 0, "end": 2, "label": "X"}]},
     r"x\.jsonl:2: span 0 is .*; expected \{\"start\": int"),
    ({"text": "abc", "spans": {"start": 0}}, r"x\.jsonl:2: \"spans\" must be a list"),
    ({"tokens": ["a", "b"], "tags": ["O"]}, r"x\.jsonl:2: 2 tokens but 1 tags"),
    ({"tokens": ["a"], "tags": "O"}, r"x\.jsonl:2: \"tokens\" and \"tags\" must both be lists"),
    ({"tokens": ["a", ""], "tags": ["O", "O"]},
     r"x\.jsonl:2: token 1 is \"\"; expected a non-empty string"),
    ({"words": ["a"]}, r"x\.jsonl:2: expected an object with \"tokens\" and \"tags\""),
    ([1, 2], r"x\.jsonl:2: expected an object"),
    ('{"text": "abc",', r"x\.jsonl:2: invalid JSON"),
])
def test_errors_name_the_line(tmp_path: Path, record: object, pattern: str) -> None:
    path = write(tmp_path, {"tokens": ["ok"], "tags": ["O"]}, record)
    with pytest.raises(DataError, match=pattern):
        read_jsonl(path)


def test_empty_and_non_utf8(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text("\n \n")
    with pytest.raises(DataError, match=r"x\.jsonl: the file is empty"):
        read_jsonl(path)
    path.write_bytes(b'{"tokens": ["ok"], "tags": ["O"]}\n{"text": "caf\xe9", "spans": []}\n')
    with pytest.raises(DataError, match=r"x\.jsonl:2: not valid UTF-8"):
        read_jsonl(path)


@pytest.mark.parametrize("record, pattern", [
    # an empty label would become the tag "B-", which no scheme reads
    ({"text": "abc", "spans": [{"start": 0, "end": 3, "label": ""}]},
     r"x\.jsonl:2: span 0 has an empty label; expected a non-empty string"),
    # booleans are JSON's true/false, not offsets (Python counts True as 1)
    ({"text": "abc", "spans": [{"start": True, "end": 3, "label": "X"}]},
     r"x\.jsonl:2: span 0 field \"start\" is true; expected an integer character offset"),
    ({"text": "abc", "spans": [{"start": 0, "end": False, "label": "X"}]},
     r"x\.jsonl:2: span 0 field \"end\" is false; expected an integer"),
    ({"text": "abc", "spans": [{"start": 0.0, "end": 3, "label": "X"}]},
     r"x\.jsonl:2: span 0 field \"start\" is 0\.0; expected an integer"),
    ({"text": "abc", "spans": [{"start": 0, "end": 3, "label": 7}]},
     r"x\.jsonl:2: span 0 field \"label\" is 7; expected a non-empty string"),
    ({"text": "abc", "spans": ["X"]}, r"x\.jsonl:2: span 0 is \"X\"; expected \{"),
    ({"tokens": ["a", 5], "tags": ["O", "O"]},
     r"x\.jsonl:2: token 1 is 5; expected a non-empty string"),
    ({"tokens": ["a", " "], "tags": ["O", "O"]},
     r"x\.jsonl:2: token 1 is \" \"; expected a non-empty string"),
    ({"tokens": ["a"], "tags": [None]}, r"x\.jsonl:2: tag 0 is null; expected a non-empty"),
    ({"tokens": ["a"], "tags": ["B-"]}, r"x\.jsonl:2: tag 'B-' has an empty label"),
    ({"tokens": ["a", "b"], "tags": ["O", "I-"]}, r"x\.jsonl:2: tag 'I-' has an empty label"),
    ({"tokens": "ab", "tags": ["O", "O"]}, r"x\.jsonl:2: \"tokens\" and \"tags\" must both be"),
    ({"tokens": ["a"], "tags": ["O"], "text": 5}, r"x\.jsonl:2: \"text\" is 5; expected a string"),
    ({"tokens": ["a"], "tags": ["O"], "doc_id": [1]},
     r"x\.jsonl:2: \"doc_id\" is \[1\]; expected a string"),
    ({"tokens": ["a"], "tags": ["O"], "id": {"a": 1}},
     r"x\.jsonl:2: \"id\" is \{\"a\": 1\}; expected a string or an integer"),
    ('[' * 100_000, r"x\.jsonl:2: invalid JSON \(nested too deeply"),
    ('{"text": "a", "spans": ' + "[" * 100_000 + "]" * 100_000 + "}",
     r"x\.jsonl:2: invalid JSON \(nested too deeply"),
])
def test_wrong_types_name_the_line_and_field(tmp_path: Path, record: object, pattern: str) -> None:
    path = write(tmp_path, {"tokens": ["ok"], "tags": ["O"]}, record)
    with pytest.raises(DataError, match=pattern):
        read_jsonl(path)


def test_ids_and_null_fields_are_kept(tmp_path: Path) -> None:
    path = write(tmp_path, {"tokens": ["a"], "tags": ["O"], "id": 7, "doc_id": None},
                 {"text": "b", "spans": [], "id": "x", "doc_id": "d"})
    first, second = read_jsonl(path)
    assert (first.meta["id"], first.doc_id, second.meta["id"], second.doc_id) == (7, None, "x", "d")


def test_a_file_without_words_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, {"tokens": [], "tags": []}, {"text": " ", "spans": []})
    with pytest.raises(DataError, match=r"x\.jsonl: no sentence has words \(2 records, all "
                                        r"empty\); expected at least one word"):
        read_jsonl(path)
    # one empty record among others is kept (callers drop empty sentences)
    path = write(tmp_path, {"tokens": [], "tags": []}, {"tokens": ["a"], "tags": ["O"]})
    assert [len(s) for s in read_jsonl(path)] == [0, 1]


def test_lone_surrogates_and_long_values_stay_one_short_line(tmp_path: Path) -> None:
    # JSON may escape half of a UTF-16 pair; the string is then no valid Unicode at all
    path = write(tmp_path, '{"tokens": ["a\\ud800"], "tags": ["O"]}')
    with pytest.raises(DataError, match=r"x\.jsonl:1: the string \"a\\ud800\" holds a lone "
                                        r"surrogate \\ud800; expected valid Unicode"):
        read_jsonl(path)
    path = write(tmp_path, '{"text": "\\ud83d\\ude00 ok", "spans": []}')  # a whole pair is fine
    assert read_jsonl(path)[0].words == ("😀", "ok")
    path = write(tmp_path, {"tokens": ["a"], "tags": ["O"], "doc_id": ["x" * 1000, "\u2028"]})
    with pytest.raises(DataError) as err:
        read_jsonl(path)
    assert len(str(err.value).splitlines()) == 1 and len(str(err.value)) < 200


def test_null_spans_are_no_spans(tmp_path: Path) -> None:
    path = write(tmp_path, {"text": "a b", "spans": None}, {"text": "c"})
    assert [s.tags for s in read_jsonl(path)] == [("O", "O"), ("O",)]


@pytest.mark.parametrize("options, pattern", [
    ({"scheme": 5}, r"scheme: expected a scheme name"),
    ({"strict": "yes"}, r"strict: expected true or false, got 'yes'"),
    ({"alignment": ["expand"]}, r"unknown alignment \['expand'\]"),
])
def test_option_types(tmp_path: Path, options: dict, pattern: str) -> None:
    from seqrep.errors import ConfigError
    with pytest.raises(ConfigError, match=pattern):
        read_jsonl(write(tmp_path, {"tokens": ["a"], "tags": ["O"]}), **options)
