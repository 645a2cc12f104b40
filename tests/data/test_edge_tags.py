"""Tags and inputs that used to read wrongly without a word (issue 11, items 8 and 9).

Each is either read correctly or refused with one line naming the file and line:

- lowercase IOB prefixes (``b-org i-org o``) are the IOB scheme, not plain labels: the prefix
  is upper-cased and the label keeps its spelling (``b-org`` -> ``B-org``); a label spelled in
  two cases in one file (``B-ORG`` and ``b-org``) is refused;
- a bare prefix (``B-``, ``i_``) and a file of bare letters (``B I O``) carry no label: refused;
- a span label that is itself a tag (``B-PER``) would become ``B-B-PER``: refused, and so is
  a tag with two prefixes;
- a reversed CoNLL-U multiword range (``3-1``): refused;
- control characters in a label: refused, the character shown escaped;
- a dataset given as a pipe or FIFO (``<(cat file)``) reads every sentence: detection does
  not eat the start of it.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from seqrep.data import load_corpus
from seqrep.data.charspans import CharSpan, place_on_words
from seqrep.data.conll import read_conll
from seqrep.data.conllu import read_conllu
from seqrep.data.datasets import holds_one_split
from seqrep.data.jsonl import read_jsonl
from seqrep.data.readers import detect_format, read_corpus
from seqrep.data.tags import TagError, detect_scheme, split_tag, tags_to_spans
from seqrep.errors import DataError

CONLLU_ROW = "{id}\t{form}\t_\t{tag}\t_\t_\t0\troot\t_\t_"


def refused(read: Callable[[], object], pattern: str) -> str:
    """``read()`` raises one DataError line matching ``pattern``; returns the message."""
    with pytest.raises(DataError, match=pattern) as err:
        read()
    message = str(err.value)
    assert "\n" not in message and len(message) < 400, message
    return message


def conll(tmp_path: Path, text: str, name: str = "x.conll") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def jsonl(tmp_path: Path, *records: object) -> Path:
    path = tmp_path / "x.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# ---------------------------------------------------------------- lowercase prefixes
def test_split_tag_reads_lowercase_prefixes() -> None:
    assert split_tag("b-org") == ("B", "org")
    assert split_tag("i_org") == ("I", "org")
    assert split_tag("l-x") == ("E", "x") and split_tag("u-x") == ("S", "x")
    assert split_tag("o") == ("O", None)
    assert split_tag("nn") == ("", "nn")


@pytest.mark.parametrize("sequences, scheme", [
    ([["b-org", "i-org", "o"]], "IOB2"),
    ([["i-per", "i-per", "o", "i-loc", "b-loc"]], "IOB1"),
    ([["s-per", "o", "b-loc", "e-loc"]], "BIOES"),
    ([["i-per", "o"]], "IO"),
    ([["B-ORG", "I-ORG"], ["b-ORG", "o"]], "IOB2"),
])
def test_detect_scheme_reads_lowercase_prefixes(sequences: list[list[str]], scheme: str) -> None:
    assert detect_scheme(sequences) == scheme


def test_lowercase_tags_are_iob_with_the_prefix_upper_cased(tmp_path: Path) -> None:
    path = conll(tmp_path, "Acme b-org\nInc i-org\nsaid o\nit o\n\nBob b-per\n")
    corpus = read_conll(path)
    assert corpus[0].tags == ("B-org", "I-org", "O", "O")
    assert [(s.start, s.end, s.label) for s in corpus[0].spans] == [(0, 2, "org")]
    assert corpus.span_types() == ["org", "per"]
    assert corpus.repaired == 0


def test_lowercase_bioes_and_iob1_convert(tmp_path: Path) -> None:
    path = conll(tmp_path, "A b-per\nB e-per\nC o\nD s-loc\n")
    assert read_conll(path)[0].tags == ("B-per", "I-per", "O", "B-loc")
    path = conll(tmp_path, "A i-per\nB i-per\nC b-per\nD o\n")
    assert read_conll(path, scheme="IOB1")[0].tags == ("B-per", "I-per", "B-per", "O")


def test_lowercase_tags_in_jsonl_and_conllu(tmp_path: Path) -> None:
    path = jsonl(tmp_path, {"tokens": ["Acme", "Inc", "said"], "tags": ["b-org", "i-org", "o"]})
    assert read_jsonl(path)[0].tags == ("B-org", "I-org", "O")
    path = tmp_path / "x.conllu"
    path.write_text("\n".join(CONLLU_ROW.format(id=k + 1, form=w, tag=t) for k, (w, t) in
                              enumerate([("Acme", "b-org"), ("Inc", "i-org"), ("said", "o")]))
                    + "\n", encoding="utf-8")
    assert read_conllu(path)[0].tags == ("B-org", "I-org", "O")


def test_mixed_prefix_case_with_one_label_spelling_reads_as_one_type(tmp_path: Path) -> None:
    path = conll(tmp_path, "Acme B-ORG\nInc I-ORG\n\nBig b-ORG\nCo i-ORG\nsaid o\n")
    corpus = read_conll(path)
    assert corpus[1].tags == ("B-ORG", "I-ORG", "O")
    assert corpus.span_types() == ["ORG"]


def test_a_label_spelled_in_two_cases_is_refused(tmp_path: Path) -> None:
    path = conll(tmp_path, "Acme B-ORG\nInc I-ORG\n\nBig b-org\nCo i-org\n")
    refused(lambda: read_conll(path),
            r"^.*x\.conll:4: tag 'b-org' has the label 'org', which line 1 spells 'ORG'; "
            r"expected one spelling per label")
    path = jsonl(tmp_path, {"tokens": ["a"], "tags": ["B-Per"]},
                 {"tokens": ["b"], "tags": ["b-per"]})
    refused(lambda: read_jsonl(path), r"x\.jsonl:2: tag 'b-per' has the label 'per', which line 1 "
                                      r"spells 'Per'")


def test_token_scheme_keeps_lowercase_tags_as_labels(tmp_path: Path) -> None:
    path = conll(tmp_path, "the at\ndog nn\nran o\n")
    assert read_conll(path, scheme="TOKEN")[0].tags == ("B-at", "B-nn", "B-o")
    assert read_conll(path)[0].tags == ("B-at", "B-nn", "B-o")  # detected: plain labels


def test_lowercase_and_plain_labels_mixed_is_refused(tmp_path: Path) -> None:
    path = conll(tmp_path, "Acme b-org\nInc nn\n")
    refused(lambda: read_conll(path), r"x\.conll:2: tag 'nn' has no B-/I- prefix but other tags")


# ---------------------------------------------------------------- bare prefixes and letters
@pytest.mark.parametrize("tag", ["B-", "I-", "b-", "i_", "S-", "E_"])
def test_a_bare_prefix_is_refused_naming_file_line_and_tag(tmp_path: Path, tag: str) -> None:
    path = conll(tmp_path, f"Acme O\nInc {tag}\n")
    refused(lambda: read_conll(path), rf"x\.conll:2: tag '{tag}' has an empty label")
    refused(lambda: read_conll(path, scheme="TOKEN"), rf"x\.conll:2: tag '{tag}' has an empty")


def test_tags_to_spans_refuses_a_bare_prefix_in_every_scheme() -> None:
    for scheme in ("IOB2", "TOKEN", "BIOES"):
        with pytest.raises(TagError, match=r"tag 'B-' at word 2 is a prefix with no label") as err:
            tags_to_spans(["O", "B-"], scheme)
        assert err.value.index == 1


@pytest.mark.parametrize("text", ["Acme B\nInc I\nsaid O\n", "Acme b\nInc i\nsaid o\n",
                                  "Acme B\nsaid O\n"])
def test_bare_letters_are_refused_not_read_as_labels(tmp_path: Path, text: str) -> None:
    path = conll(tmp_path, text)
    refused(lambda: read_conll(path),
            r"x\.conll:1: tag '[Bb]' is a prefix with no label \(the tags are only "
            r"B(/I)?/O letters\); expected PREFIX-LABEL such as B-X, or pass scheme TOKEN")
    assert read_conll(path, scheme="TOKEN")[0].tags[0] in ("B-B", "B-b")  # as asked


# ---------------------------------------------------------------- labels that are tags
@pytest.mark.parametrize("label", ["B-PER", "I-LOC", "s_x", "b-org"])
def test_a_span_label_that_is_a_tag_is_refused(tmp_path: Path, label: str) -> None:
    path = jsonl(tmp_path, {"tokens": ["a"], "tags": ["O"]},
                 {"text": "John lives here", "spans": [{"start": 0, "end": 4, "label": "PER"},
                                                      {"start": 11, "end": 15, "label": label}]})
    refused(lambda: read_jsonl(path),
            rf"x\.jsonl:2: span 1 label '{label}' looks like a tag; expected the label alone "
            rf"\('{label[2:]}'\): the B-/I- prefixes are added on reading")


def test_place_on_words_refuses_a_label_that_is_a_tag() -> None:
    spans = [CharSpan(0, 4, "B-date", "June")]
    refused(lambda: place_on_words("June 5", spans, "expand", "banking/fold0.json example [3]",
                                   "slot", "fold0.json"),
            r"^fold0\.json: slot 'June' label 'B-date' looks like a tag; expected the label alone "
            r"\('date'\).*, in banking/fold0\.json example \[3\]$")
    refused(lambda: place_on_words("June 5", spans, "expand", "x", "slot", "f.xml", 7),
            r"^f\.xml:7: slot 'June' label 'B-date' looks like a tag")


def test_nlupp_slot_named_like_a_tag_is_refused(tmp_path: Path) -> None:
    fold = tmp_path / "nlupp" / "banking" / "fold0.json"
    fold.parent.mkdir(parents=True)
    fold.write_text(json.dumps([{"text": "on June 5", "slots": {
        "I-date": {"text": "June 5", "span": [3, 9], "value": "x"}}}]), encoding="utf-8")
    refused(lambda: read_corpus(tmp_path / "nlupp"), r"fold0\.json: slot 'June 5' label 'I-date' "
                                                     r"looks like a tag")


@pytest.mark.parametrize("tag", ["B-B-PER", "I-I-LOC", "B-i-x"])
def test_a_tag_with_two_prefixes_is_refused(tmp_path: Path, tag: str) -> None:
    path = conll(tmp_path, f"Acme O\nInc {tag}\n")
    refused(lambda: read_conll(path), rf"x\.conll:2: tag '{tag}' has two prefixes \(its label "
                                      rf"'{tag[2:]}' is itself a tag\); expected PREFIX-LABEL")


def test_a_label_that_merely_starts_with_a_letter_and_hyphen_elsewhere_reads(
        tmp_path: Path) -> None:
    path = conll(tmp_path, "Acme B-x-y\nInc I-x-y\nsaid O\n")
    assert read_conll(path).span_types() == ["x-y"]


# ---------------------------------------------------------------- CoNLL-U reversed ranges
@pytest.mark.parametrize("wid", ["3-1", "2-2"])
def test_a_reversed_multiword_range_is_refused_naming_the_line(tmp_path: Path, wid: str) -> None:
    path = tmp_path / "x.conllu"
    path.write_text("# text = a b c\n" + CONLLU_ROW.format(id=1, form="a", tag="X") + "\n"
                    + wid + "\tbc\t_\t_\t_\t_\t_\t_\t_\t_\n"
                    + CONLLU_ROW.format(id=2, form="b", tag="X") + "\n", encoding="utf-8")
    refused(lambda: read_conllu(path), rf"x\.conllu:3: bad multiword id '{wid}'; expected N-M "
                                       r"with N < M")


# ---------------------------------------------------------------- control characters
@pytest.mark.parametrize("tag, shown", [("B-PER\x07", r"\\x07"), ("B-P\x00ER", r"\\x00"),
                                        ("I-PER\x1b", r"\\x1b"), ("NN\x07", r"\\x07")])
def test_control_characters_in_conll_tags_are_refused(tmp_path: Path, tag: str,
                                                      shown: str) -> None:
    path = conll(tmp_path, f"Acme O\nInc {tag}\n")
    message = refused(lambda: read_conll(path),
                      rf"x\.conll:2: tag '.*' holds the control character {shown} "
                      r"\(U\+[0-9A-F]{4}\); expected printable characters")
    assert "\x07" not in message and "\x00" not in message and "\u200b" not in message


@pytest.mark.parametrize("tag, shown", [("B-P\tER", r"\\t"), ("B-PER\x00", r"\\x00"),
                                        ("B-PER\n", r"\\n")])
def test_control_characters_in_jsonl_tags_are_refused(tmp_path: Path, tag: str,
                                                      shown: str) -> None:
    path = jsonl(tmp_path, {"tokens": ["a"], "tags": ["O"]}, {"tokens": ["a", "b"],
                                                               "tags": ["O", tag]})
    refused(lambda: read_jsonl(path), rf"x\.jsonl:2: tag '.*' holds the control character "
                                      rf"{shown} \(U\+")


@pytest.mark.parametrize("tag, shown", [("B-PER\u200b", r"\\u200b"), ("B-PER\u2028", r"\\u2028"),
                                        ("B-P\xa0ER", r"\\xa0")])
def test_other_unprintable_characters_in_tags_are_refused(tmp_path: Path, tag: str,
                                                          shown: str) -> None:
    path = jsonl(tmp_path, {"tokens": ["a"], "tags": [tag]})
    message = refused(lambda: read_jsonl(path),
                      rf"x\.jsonl:1: tag '.*' holds the unprintable character {shown} \(U\+")
    assert tag not in message
    path = conll(tmp_path, "Acme O\nInc B-PER\u200b\n")  # the others are spaces to CoNLL
    refused(lambda: read_conll(path), r"x\.conll:2: tag 'B-PER\\u200b' holds the unprintable "
                                      r"character \\u200b \(U\+200B\)")


def test_control_characters_in_span_labels_are_refused(tmp_path: Path) -> None:
    path = jsonl(tmp_path, {"text": "John lives", "spans": [{"start": 0, "end": 4,
                                                           "label": "PER\t"}]})
    refused(lambda: read_jsonl(path), r"x\.jsonl:1: span 0 label 'PER\\t' holds the control "
                                      r"character \\t \(U\+0009\)")
    spans = [CharSpan(0, 4, "da\x07te", "June")]
    refused(lambda: place_on_words("June 5", spans, "expand", "x", "slot", "f.json", 2),
            r"f\.json:2: slot 'June' label 'da\\x07te' holds the control character \\x07")


def test_control_characters_in_conllu_labels_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.conllu"
    path.write_text(CONLLU_ROW.format(id=1, form="a", tag="NO\x00UN") + "\n", encoding="utf-8")
    refused(lambda: read_conllu(path), r"x\.conllu:1: tag 'NO\\x00UN' holds the control character "
                                       r"\\x00")


def test_surrounding_spaces_in_a_jsonl_tag_are_refused(tmp_path: Path) -> None:
    path = jsonl(tmp_path, {"tokens": ["a", "b"], "tags": ["B-PER", " I-PER"]})
    refused(lambda: read_jsonl(path), r"x\.jsonl:1: tag ' I-PER' has spaces around it; expected "
                                      r"the tag alone")


# ---------------------------------------------------------------- pipes and FIFOs
N_SENTENCES = 3250


def _conll_text() -> str:
    return "".join(f"Word{k} B-PER\nsaid O\nsomething{k % 7} O\nto I-MISC\nus O\n\n"
                   for k in range(N_SENTENCES))


def _conllu_text() -> str:
    return "".join(f"# sent_id = s{k}\n# text = Word{k} said\n"
                   + CONLLU_ROW.format(id=1, form=f"Word{k}", tag="PROPN") + "\n"
                   + CONLLU_ROW.format(id=2, form="said", tag="VERB") + "\n\n"
                   for k in range(N_SENTENCES))


def _jsonl_text() -> str:
    return "".join(json.dumps({"tokens": [f"Word{k}", "said"], "tags": ["B-PER", "O"]}) + "\n"
                   if k % 2 else json.dumps({"text": f"Word{k} said", "spans": [
                       {"start": 0, "end": len(f"Word{k}"), "label": "PER"}]}) + "\n"
                   for k in range(N_SENTENCES))


def _absa_text() -> str:
    return "".join(f"Good food {k}.####Good=O food=T-POS {k}.=O\n" for k in range(N_SENTENCES))


TEXTS = {"conll": _conll_text, "conllu": _conllu_text, "jsonl": _jsonl_text,
         "absa-tokenized": _absa_text}


def _writer(path: str, data: bytes) -> threading.Thread:
    """Write ``data`` into a FIFO from another thread, in small pieces, as ``cat`` does."""
    def write() -> None:
        with open(path, "wb") as f:
            for k in range(0, len(data), 4096):
                f.write(data[k:k + 4096])
                f.flush()
    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def _within(read: Callable[[], object], seconds: float = 60) -> object:
    """``read()``, failing the test if it hangs (as a reader did that opened a FIFO again
    after detection had drained it)."""
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["value"] = read()
        except BaseException as err:  # noqa: BLE001 - raised again below
            box["error"] = err
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"reading hung for {seconds} s"
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]


def _read_fifo(tmp_path: Path, name: str, data: bytes,
               read: Callable[[Path], object]) -> object:
    fifo = tmp_path / name
    os.mkfifo(fifo)
    thread = _writer(str(fifo), data)
    try:
        return _within(lambda: read(fifo))
    finally:
        if thread.is_alive():  # the reader failed before opening it: let the writer go
            fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
            thread.join(5)
            os.close(fd)
        thread.join(5)


@pytest.mark.parametrize("fmt", list(TEXTS))
@pytest.mark.parametrize("name", ["63", "data.{fmt}"])
def test_a_fifo_reads_every_sentence(tmp_path: Path, fmt: str, name: str) -> None:
    """A named FIFO (with a suffix, or none, as /dev/fd/63 has) reads exactly like the same
    bytes in a regular file: detection looks at bytes the reader then sees too."""
    data = TEXTS[fmt]().encode()
    assert len(data) > 65536  # more than any read-ahead buffer
    regular = tmp_path / f"regular.{'txt' if fmt == 'absa-tokenized' else fmt}"
    regular.write_bytes(data)
    expected = read_corpus(regular)
    assert len(expected) == N_SENTENCES
    suffix = {"absa-tokenized": "txt"}.get(fmt, fmt)
    corpus = _read_fifo(tmp_path, name.format(fmt=suffix), data, read_corpus)
    assert len(corpus) == len(expected) == N_SENTENCES
    assert [s.words for s in corpus] == [s.words for s in expected]
    assert [s.tags for s in corpus] == [s.tags for s in expected]


@pytest.mark.parametrize("fmt", ["conll", "conllu", "jsonl"])
def test_detect_format_reads_the_content_of_a_pipe(tmp_path: Path, fmt: str) -> None:
    """``<(cat file)`` has no suffix: the format comes from the content, and detecting it
    first does not lose what the reader needs."""
    data = TEXTS[fmt]().encode()
    fifo = tmp_path / "63"
    os.mkfifo(fifo)
    thread = _writer(str(fifo), data)
    assert _within(lambda: detect_format(fifo)) == fmt
    read = {"conll": read_conll, "conllu": read_conllu, "jsonl": read_jsonl}[fmt]
    corpus = _within(lambda: read(fifo))
    thread.join(5)
    assert len(corpus) == N_SENTENCES


def test_dev_fd_of_a_pipe_reads_every_sentence() -> None:
    """What the shell hands over for ``<(cat file)``: /dev/fd/N of a pipe."""
    data = _conll_text().encode()
    r, w = os.pipe()

    def write() -> None:
        with os.fdopen(w, "wb") as f:  # closing it is the end of the input
            f.write(data)
    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    try:
        path = Path(f"/dev/fd/{r}")
        assert holds_one_split(path)
        corpus = _within(lambda: load_corpus(path))
    finally:
        thread.join(5)
        os.close(r)
    assert len(corpus) == N_SENTENCES


def test_a_fifo_holds_one_split_and_loads(tmp_path: Path) -> None:
    data = _jsonl_text().encode()
    corpus = _read_fifo(tmp_path, "train", data,
                        lambda p: (holds_one_split(p), load_corpus(p))[1])
    assert len(corpus) == N_SENTENCES


def test_a_bad_fifo_is_one_line_naming_it_and_the_line(tmp_path: Path) -> None:
    data = (_conll_text().rstrip("\n") + "\nbroken x y\n").encode()
    refused(lambda: _read_fifo(tmp_path, "63", data, read_corpus),
            rf"63:{6 * N_SENTENCES}: expected 2 columns like line {6 * N_SENTENCES - 5}, got 3")


def test_an_empty_fifo_is_one_line(tmp_path: Path) -> None:
    refused(lambda: _read_fifo(tmp_path, "63", b"", read_corpus), r"63: the file is empty")


def test_content_detection_of_regular_files_without_a_suffix(tmp_path: Path) -> None:
    path = tmp_path / "data"
    path.write_text('\n{"tokens": ["a"], "tags": ["O"]}\n', encoding="utf-8")
    assert detect_format(path) == "jsonl"
    path.write_text("# sent_id = 1\n" + CONLLU_ROW.format(id=1, form="a", tag="X") + "\n",
                    encoding="utf-8")
    assert detect_format(path) == "conllu"
    path.write_text("1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n", encoding="utf-8")
    assert detect_format(path) == "conllu"
    path.write_text("{ O\n} O\n", encoding="utf-8")  # words that are braces
    assert detect_format(path) == "conll"
    path.write_text("# O\n1 O\n", encoding="utf-8")
    assert detect_format(path) == "conll"
