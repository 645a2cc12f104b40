"""A fuzz of every reader (hypothesis): mutated copies of a valid file of each format (byte
flips, inserted and deleted lines, truncations, fields replaced by pieces that mean something
to some format, lone surrogates written as bytes, huge numbers, deep nesting, entity bombs),
edits of the parsed JSON, well-formed files generated from random words and tags, and fully
random bytes. Each must either read as a corpus whose invariants hold (one IOB2 tag per word,
offsets that slice the text) or raise a SeqrepError of one short line, never another
exception; a generated well-formed file must read back exactly.

Budget: the ``seqrep-ci`` profile (200 examples per test, derandomized, so CI sees the same
cases every run, a few seconds per reader); ``HYPOTHESIS_PROFILE=fuzz`` (or
``SEQREP_FUZZ_EXAMPLES=N``) runs the ``seqrep-fuzz`` profile, 5000 (N) fresh random examples
per test. Each test prints how many examples it ran and how they ended (``pytest -s``).
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seqrep.data.absa import read_absa_tokenized, read_semeval_xml
from seqrep.data.conll import read_conll
from seqrep.data.conllu import read_conllu
from seqrep.data.jsonl import read_jsonl
from seqrep.data.nlupp import read_nlupp
from seqrep.data.parallel import read_parallel
from seqrep.data.readers import READERS, read_corpus
from seqrep.data.tags import spans_to_tags, tags_to_spans
from seqrep.data.types import Corpus
from seqrep.errors import SeqrepError

_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
           HealthCheck.large_base_example]
settings.register_profile("seqrep-ci", max_examples=200, deadline=None, derandomize=True,
                          database=None, suppress_health_check=_HEALTH)
settings.register_profile("seqrep-fuzz", deadline=None, print_blob=True, database=None,
                          max_examples=int(os.environ.get("SEQREP_FUZZ_EXAMPLES") or 5000),
                          suppress_health_check=_HEALTH)
_FUZZ = (os.environ.get("HYPOTHESIS_PROFILE") in ("fuzz", "seqrep-fuzz")
         or bool(os.environ.get("SEQREP_FUZZ_EXAMPLES")))
PROFILE = settings.get_profile("seqrep-fuzz" if _FUZZ else "seqrep-ci")

# Pieces that mean something to some format, spliced in at random places.
PIECES = [b"", b"\t", b"\n", b"\n\n", b" ", b"-", b"B-", b"I-", b"E-", b"S-", b"O", b"_", b"=",
          b"####", b"#", b"# text = ", b"# newdoc id = x", b"-DOCSTART-", b"1-2", b"8.1",
          b"0", b"[", b"]", b"{", b"}", b'"', b",", b":", b"true", b"null", b"NaN",
          b"Infinity", b"-1", b"1e999", b"-0", b"99999999999999999999", b"<", b">",
          b"</text>", b"<text>", b"<sentence>", b"</sentence>",
          b"<aspectTerm from=\"0\" to=\"3\"/>",
          b"&", b"&amp;", b"&#0;", b"&#xD800;", b"<![CDATA[", b"\x00", b"\xff", b"\xe9",
          b"\xc3", b"\xc0\xaf", b"\xef\xbb\xbf", b"\r", b"\r\n", b"\x0b", b"\x0c", b"\x1c",
          b"\xc2\x85", b"\xc2\xa0", "\u2028".encode(), "\u200d".encode(), "\u0301".encode(),
          "\u202e".encode(), "é".encode(), "🙂".encode(), "👩‍👩‍👧".encode(),
          b'"\\ud800"', b'"\\udfff\\ud800"', b"\\u0000", b"[" * 3000, b"{\"a\":" * 2000,
          b"1" * 5000, b"-" + b"9" * 4400]
XML_BOMB = (b'<!DOCTYPE s [<!ENTITY a "aaaaaaaaaa">' + b"".join(
    b'<!ENTITY %c "%s">' % (98 + k, b"&%c;" % (97 + k) * 10) for k in range(8)) + b"]>")
XML_EXTERNAL = b'<!DOCTYPE s [<!ENTITY e SYSTEM "file:///etc/passwd">]>'


def _surrogate(code: int) -> bytes:
    """A lone UTF-16 surrogate written as (invalid) UTF-8 bytes."""
    return chr(code).encode("utf-8", "surrogatepass")


payloads = st.one_of(
    st.sampled_from(PIECES + [XML_BOMB, XML_EXTERNAL]),
    st.binary(min_size=1, max_size=12),
    st.text(min_size=1, max_size=12).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.integers(0xD800, 0xDFFF).map(_surrogate),
    st.integers(-(10**40), 10**40).map(lambda n: str(n).encode()),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda x: repr(x).encode()),
    st.tuples(st.sampled_from([b"[", b"{\"k\":", b"<a>", b"(", b"\""]),
              st.integers(1, 20000)).map(lambda t: t[0] * t[1]),
)

# One edit: (kind, position, another position, payload); positions are taken modulo the size.
edits = st.tuples(st.sampled_from(["truncate", "delete", "insert", "flip", "replace-field",
                                   "drop-line", "repeat-line", "swap-lines", "insert-line"]),
                  st.integers(0, 1 << 20), st.integers(0, 1 << 20), payloads)


def apply_edit(data: bytes, edit: tuple[str, int, int, bytes]) -> bytes:
    kind, a, b, piece = edit
    i = a % (len(data) + 1)
    if kind == "truncate":
        return data[:i]
    if kind == "delete":
        return data[:i] + data[i + 1 + b % 40:]
    if kind == "insert":
        return data[:i] + piece + data[i:]
    if kind == "flip":
        if not data:
            return piece
        i = min(i, len(data) - 1)
        return data[:i] + bytes([data[i] ^ (1 + b % 255)]) + data[i + 1:]
    lines = data.split(b"\n")
    k, m = a % len(lines), b % len(lines)
    if kind == "replace-field":  # one whitespace-separated field of a line
        fields = lines[k].split(b"\t" if b"\t" in lines[k] else b" ")
        fields[b % len(fields)] = piece
        lines[k] = (b"\t" if b"\t" in lines[k] else b" ").join(fields)
    elif kind == "drop-line":
        del lines[k]
    elif kind == "repeat-line":
        lines.insert(m, lines[k])
    elif kind == "swap-lines":
        lines[k], lines[m] = lines[m], lines[k]
    else:
        lines.insert(k, piece)
    return b"\n".join(lines)


def mutants(seed: bytes) -> st.SearchStrategy[bytes]:
    """``seed`` after one to six random edits."""
    def run(steps: list) -> bytes:
        data = seed
        for edit in steps:
            data = apply_edit(data, edit)
        return data
    return st.lists(edits, min_size=1, max_size=6).map(run)


# ---------------------------------------------------------------- JSON values and edits
HUGE = "<a number of 5000 digits>"  # written into the JSON text after json.dumps
json_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**30), 10**30), st.sampled_from([0, 1, -1, 2**63]),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
    st.sampled_from(["", " ", "B-", "O", "x", "\ud800", "🙂", "\u0301", "\u2028", "\x00",
                     HUGE]))
json_values = st.recursive(
    json_leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(["text", "tokens", "tags", "spans", "start",
                                                   "end", "label", "slots", "span", "intents",
                                                   "value", "id", "doc_id", ""]),
                                  st.text(max_size=6)), inner, max_size=4)),
    max_leaves=12)


def _paths(value: Any, path: tuple = ()) -> list[tuple]:
    """Every place in a parsed JSON value, as a tuple of keys/indices."""
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, path + (k,))
    elif isinstance(value, list):
        for k, v in enumerate(value):
            out += _paths(v, path + (k,))
    return out


def _edit_json(value: Any, path: tuple, op: str, new: Any) -> Any:
    if not path:
        return new if op == "replace" else value
    parent = value
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    if op == "delete":
        del parent[key]
    elif op == "duplicate" and isinstance(parent, list):
        parent.insert(key, parent[key])
    else:
        parent[key] = new
    return value


def json_mutants(seed: Any) -> st.SearchStrategy[bytes]:
    """``seed`` (a parsed JSON value) with one to four values replaced, deleted or repeated,
    written back as JSON (sometimes ASCII-escaped, sometimes with NaN)."""
    @st.composite
    def build(draw: st.DrawFn) -> bytes:
        value = json.loads(json.dumps(seed))
        for _ in range(draw(st.integers(1, 4))):
            places = _paths(value)
            path = places[draw(st.integers(0, len(places) - 1))]
            op = draw(st.sampled_from(["replace", "replace", "delete", "duplicate"]))
            value = _edit_json(value, path, op, draw(json_values))
        text = json.dumps(value, ensure_ascii=draw(st.booleans()))
        text = text.replace(json.dumps(HUGE), "9" * 5000)  # more digits than int() converts
        return text.encode("utf-8", "surrogatepass")
    return build()


def jsonl_mutants(seed: bytes) -> st.SearchStrategy[bytes]:
    """A JSON Lines file with one record edited as a JSON value."""
    lines = seed.decode("utf-8").splitlines()

    @st.composite
    def build(draw: st.DrawFn) -> bytes:
        k = draw(st.integers(0, len(lines) - 1))
        record = draw(json_mutants(json.loads(lines[k])))
        return "\n".join(lines[:k]).encode() + b"\n" + record + b"\n" + \
            "\n".join(lines[k + 1:]).encode()
    return build()


# ---------------------------------------------------------------- the invariants
def check_corpus(corpus: Any) -> None:
    """What reads is a usable corpus: every sentence has one IOB2 tag per word (a valid
    sequence, labels not blank), words that are not blank, and offsets that slice its text."""
    assert isinstance(corpus, Corpus)
    assert len(corpus) > 0
    for sentence in corpus:
        words, tags = sentence.words, sentence.tags
        assert len(words) == len(tags)
        for word in words:
            assert isinstance(word, str) and word.strip(), f"blank word {word!r} in {words}"
        for tag in tags:
            assert tag == "O" or (tag[:2] in ("B-", "I-") and tag[2:].strip()), \
                f"tag {tag!r} is not IOB2 in {tags}"
        spans, repaired = tags_to_spans(tags, "IOB2")
        assert repaired == 0, f"invalid IOB2 sequence {tags}"
        assert spans_to_tags(spans, len(tags)) == list(tags)
        if sentence.offsets is not None:
            text = sentence.text
            assert isinstance(text, str) and len(sentence.offsets) == len(words)
            end = 0
            for (s, e), word in zip(sentence.offsets, words):
                assert end <= s < e <= len(text), (s, e, len(text))
                assert text[s:e] == word, (text[s:e], word)
                end = e
        assert sentence.text is None or isinstance(sentence.text, str), sentence.text
        assert sentence.doc_id is None or isinstance(sentence.doc_id, str), sentence.doc_id
    stats = corpus.stats()
    assert stats["sentences"] == len(corpus)
    assert stats["tokens"] == sum(len(s) for s in corpus)
    corpus.tag_set()
    for note in corpus.notes:
        assert isinstance(note, str)


def check_error(err: SeqrepError, path: Path) -> None:
    message = str(err)
    assert len(message.splitlines()) == 1, repr(message)
    assert "\n" not in message, repr(message)
    assert len(message) < 400 + len(str(path)), message


def read_or_raise(read: Callable[[Path], Any], path: Path, counts: Counter) -> Any:
    """Read; a SeqrepError must be one line. Returns the corpus, or None after an error."""
    counts["examples"] += 1
    try:
        corpus = read(path)
    except SeqrepError as err:
        check_error(err, path)
        counts[type(err).__name__] += 1
        return None
    check_corpus(corpus)
    counts["read"] += 1
    return corpus


def report(name: str, counts: Counter) -> None:
    errors = [f"{n} {k}" for k, n in sorted(counts.items()) if k not in ("examples", "read")]
    print(f"fuzz {name}: " + ", ".join([f"{counts['examples']} examples",
                                        f"{counts['read']} read"] + errors))


# ---------------------------------------------------------------- the readers
def write_parallel(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "seq.in").write_text("book a table in paris\nplay some jazz\n", encoding="utf-8")
    (folder / "seq.out").write_text("O O O O B-city\nO O B-genre\n", encoding="utf-8")
    return folder


def _targets(fixtures: Path, tmp: Path) -> dict[str, tuple[Path, Path, Callable]]:
    """name -> (original file, the file to overwrite with a mutant, what reads the mutant)."""
    nlupp = tmp / "nlupp" / "banking"
    nlupp.mkdir(parents=True)
    parallel = write_parallel(tmp / "snips")
    saved = {"seq.in": tmp / "seq.in.orig", "seq.out": tmp / "seq.out.orig"}
    for name, copy in saved.items():
        shutil.copy(parallel / name, copy)
    return {
        "conll": (fixtures / "tiny.conll", tmp / "x.conll", read_conll),
        "conllu": (fixtures / "tiny.conllu", tmp / "x.conllu", read_conllu),
        "jsonl": (fixtures / "tiny.jsonl", tmp / "x.jsonl", read_jsonl),
        "semeval-xml": (fixtures / "tiny_absa.xml", tmp / "x.xml", read_semeval_xml),
        "absa-tokenized": (fixtures / "tiny_absa.txt", tmp / "x.txt", read_absa_tokenized),
        "nlupp": (fixtures / "nlupp" / "data" / "banking" / "fold0.json", nlupp / "fold0.json",
                  lambda p: read_nlupp(p.parent.parent)),
        "parallel-in": (saved["seq.in"], parallel / "seq.in", lambda p: read_parallel(p.parent)),
        "parallel-out": (saved["seq.out"], parallel / "seq.out",
                         lambda p: read_parallel(p.parent)),
        "detected": (fixtures / "tiny.conll", tmp / "y.txt", read_corpus),
        **_columnar_targets(tmp),
    }


def _columnar_targets(tmp: Path) -> dict[str, tuple[Path, Path, Callable]]:
    """Seeds for the Hugging Face data readers (the datasets extra): a parquet file, an arrow
    file and a save_to_disk folder of the tiny CoNLL sentences, each read by its format."""
    try:
        import datasets
    except ImportError:  # the datasets extra is not installed: these readers are not there
        return {}
    rows = {"tokens": [["Obama", "visited", "Paris", "."], ["Peter", "Blackburn"]],
            "ner_tags": [["B-PER", "O", "B-LOC", "O"], ["B-PER", "I-PER"]]}
    table = datasets.Dataset.from_dict(rows)
    seeds = tmp / "columnar"
    seeds.mkdir()
    table.to_parquet(str(seeds / "seed.parquet"))
    table.save_to_disk(str(seeds / "saved"))
    (arrow,) = (seeds / "saved").glob("*.arrow")
    shutil.copy(arrow, seeds / "seed.arrow")
    saved = tmp / "saved"
    shutil.copytree(seeds / "saved", saved)
    return {
        "parquet": (seeds / "seed.parquet", tmp / "x.parquet",
                    lambda q: read_corpus(q, format="parquet")),
        "arrow": (seeds / "seed.arrow", tmp / "x.arrow", lambda q: read_corpus(q, format="arrow")),
        "hf-saved": (arrow, saved / arrow.name,
                     lambda q: read_corpus(q.parent, format="hf-saved")),
    }


NAMES = ["conll", "conllu", "jsonl", "semeval-xml", "absa-tokenized", "nlupp", "parallel-in",
         "parallel-out", "detected", "parquet", "arrow", "hf-saved"]


def test_every_reader_is_fuzzed() -> None:
    assert set(READERS) <= {n.split("-")[0] if n.startswith("parallel") else n for n in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_mutants_read_or_raise_one_line(fixtures: Path, tmp_path: Path, name: str) -> None:
    targets = _targets(fixtures, tmp_path)
    if name not in targets:
        pytest.skip(f"the {name} reader needs the datasets extra")
    original, target, read = targets[name]
    seed = original.read_bytes()
    check_corpus(read(original) if not name.startswith("parallel") else read(target))
    counts: Counter = Counter()
    strategy = mutants(seed)
    if name in ("jsonl", "nlupp"):  # also edits of the parsed records
        structured = (jsonl_mutants(seed) if name == "jsonl"
                      else json_mutants(json.loads(seed)))
        strategy = st.one_of(strategy, structured)
    strategy = st.one_of(strategy, st.binary(max_size=600))  # and plain noise

    @PROFILE
    @given(data=strategy)
    def fuzz(data: bytes) -> None:
        target.write_bytes(data)
        read_or_raise(read, target, counts)

    fuzz()
    report(name, counts)
    assert counts["examples"] >= min(PROFILE.max_examples, 100)
    assert counts["read"] > 0 and counts["examples"] > counts["read"], counts  # both paths ran


# ---------------------------------------------------------------- well-formed files read back
words = st.text(st.characters(blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc")),
                min_size=1, max_size=8).filter(lambda w: w.strip() == w and w != "-DOCSTART-"
                                               and not w.startswith("#") and "=" not in w
                                               and len(w.split()) == 1)
labels = st.sampled_from(["PER", "LOC", "ORG", "MISC", "x-y", "É"])


@st.composite
def tagged_sentence(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    """Words with valid IOB2 tags."""
    ws = draw(st.lists(words, min_size=1, max_size=8))
    spans, i = [], 0
    while i < len(ws):
        n = draw(st.integers(0, 3))
        if n and i + n <= len(ws):
            spans.append((i, i + n, draw(labels)))
            i += n
        else:
            i += 1
    return ws, spans_to_tags(spans, len(ws))


def test_wellformed_files_read_back_exactly(tmp_path: Path) -> None:
    """Files written from random words and IOB2 tags read back to those words and tags, in
    every format that takes words and tags (conll with spaces and tabs, conllu, jsonl,
    parallel files)."""
    counts: Counter = Counter()
    folder = tmp_path / "par"
    folder.mkdir()

    @PROFILE
    @given(sentences=st.lists(tagged_sentence(), min_size=1, max_size=5),
           sep=st.sampled_from([" ", "\t"]), fmt=st.sampled_from(["conll", "conllu", "jsonl",
                                                                   "parallel"]))
    def fuzz(sentences: list, sep: str, fmt: str) -> None:
        counts["examples"] += 1
        if fmt == "conll":
            path = tmp_path / "x.conll"
            path.write_text("\n\n".join("\n".join(f"{w}{sep}{t}" for w, t in zip(ws, ts))
                                        for ws, ts in sentences) + "\n", encoding="utf-8")
            corpus = read_conll(path)
        elif fmt == "conllu":
            path = tmp_path / "x.conllu"
            path.write_text("\n\n".join("\n".join(
                "\t".join([str(k + 1), w, "_", t] + ["_"] * 6) for k, (w, t) in
                enumerate(zip(ws, ts))) for ws, ts in sentences) + "\n", encoding="utf-8")
            corpus = read_conllu(path, scheme="IOB2")
        elif fmt == "jsonl":
            path = tmp_path / "x.jsonl"
            path.write_text("".join(json.dumps({"tokens": ws, "tags": ts}) + "\n"
                                    for ws, ts in sentences), encoding="utf-8")
            corpus = read_jsonl(path)
        else:
            (folder / "seq.in").write_text("".join(" ".join(ws) + "\n" for ws, _ in sentences),
                                           encoding="utf-8")
            (folder / "seq.out").write_text("".join(" ".join(ts) + "\n" for _, ts in sentences),
                                            encoding="utf-8")
            corpus = read_parallel(folder)
        check_corpus(corpus)
        assert [(list(s.words), list(s.tags)) for s in corpus] == \
            [(list(ws), list(ts)) for ws, ts in sentences]
        counts["read"] += 1

    fuzz()
    report("well-formed", counts)


@st.composite
def char_spans(draw: st.DrawFn) -> tuple[str, list[dict]]:
    text = draw(st.text(max_size=40))
    spans = []
    for _ in range(draw(st.integers(0, 4))):
        s = draw(st.integers(-2, len(text) + 1))
        e = draw(st.integers(-2, len(text) + 2))
        spans.append({"start": s, "end": e, "label": draw(labels)})
    return text, spans


def test_character_spans_read_or_raise(tmp_path: Path) -> None:
    """Random texts (any Unicode: emoji, joiners, marks, line separators, lone surrogates
    escaped in JSON) with random character spans, in JSONL, NLU++ and SemEval XML: each reads
    with every placed span's words inside the span's characters (expand: overlapping them), or
    is a one-line error (offsets outside the text, a lone surrogate)."""
    counts: Counter = Counter()
    nlupp = tmp_path / "nlupp" / "banking"
    nlupp.mkdir(parents=True)

    @PROFILE
    @given(records=st.lists(char_spans(), min_size=1, max_size=4),
           fmt=st.sampled_from(["jsonl", "nlupp", "xml"]))
    def fuzz(records: list, fmt: str) -> None:
        if fmt == "jsonl":
            path = tmp_path / "x.jsonl"
            path.write_text("".join(json.dumps({"text": t, "spans": sp}) + "\n"
                                    for t, sp in records), encoding="utf-8")
            read = read_jsonl
        elif fmt == "nlupp":
            path = nlupp / "fold0.json"
            path.write_text(json.dumps([{"text": t, "slots": {
                f"{s['label']}{k}": {"span": [s["start"], s["end"]]} for k, s in enumerate(sp)}}
                for t, sp in records]), encoding="utf-8")
            read = lambda p: read_nlupp(p.parent.parent)  # noqa: E731
        else:
            from xml.sax.saxutils import escape, quoteattr

            path = tmp_path / "x.xml"
            path.write_bytes(("<sentences>" + "".join(
                f'<sentence id="{i}"><text>{escape(t)}</text><aspectTerms>' + "".join(
                    f"<aspectTerm term={quoteattr(s['label'])} from=\"{s['start']}\" "
                    f"to=\"{s['end']}\"/>" for s in sp) + "</aspectTerms></sentence>"
                for i, (t, sp) in enumerate(records)) + "</sentences>").encode(
                    "utf-8", "surrogatepass"))
            read = read_semeval_xml
        corpus = read_or_raise(read, path, counts)
        if corpus is None:
            return
        for sentence in corpus:
            for span in sentence.spans:
                s = sentence.offsets[span.start][0]
                e = sentence.offsets[span.end - 1][1]
                assert 0 <= s < e <= len(sentence.text)

    fuzz()
    report("character spans", counts)
    assert counts["read"] > 0


# ---------------------------------------------------------------- what the fuzz found
def test_a_json_number_of_thousands_of_digits_is_one_line(tmp_path: Path) -> None:
    """Python refuses to convert an integer of more than 4300 digits (a ValueError that is not
    a JSONDecodeError): in a JSONL record or an NLU++ fold it is a DataError naming the file."""
    path = tmp_path / "x.jsonl"
    path.write_text('{"text": "ab", "spans": [{"start": 0, "end": ' + "9" * 5000
                    + ', "label": "X"}]}\n', encoding="utf-8")
    with pytest.raises(SeqrepError, match=r"x\.jsonl:1: invalid JSON \(.*4300 digits") as err:
        read_jsonl(path)
    check_error(err.value, path)
    fold = tmp_path / "nlupp" / "banking" / "fold0.json"
    fold.parent.mkdir(parents=True)
    fold.write_text("[" + "1" * 4400 + "]", encoding="utf-8")
    with pytest.raises(SeqrepError, match=r"fold0\.json: invalid JSON") as err:
        read_nlupp(tmp_path / "nlupp")
    check_error(err.value, fold)


@pytest.mark.parametrize("column, row", [("form", "1\t\t_\tNOUN"), ("form", "1\t \t_\tNOUN"),
                                         ("upos", "1\tdog\t_\t"), ("upos", "1\tdog\t_\t ")])
def test_conllu_blank_form_or_label_is_an_error(tmp_path: Path, column: str, row: str) -> None:
    """A tab-separated CoNLL-U line with an empty form or label field read as the word '' or
    the tag 'B-' (a label the readers otherwise refuse); CoNLL-U writes an unset field as _."""
    path = tmp_path / "x.conllu"
    path.write_text("1\tThe\t_\tDET" + "\t_" * 6 + "\n" + row.replace("1", "2", 1) + "\t_" * 6
                    + "\n", encoding="utf-8")
    with pytest.raises(SeqrepError, match=f"x.conllu:2: empty {column} column") as err:
        read_conllu(path)
    check_error(err.value, path)


def test_conllu_text_and_newdoc_comments_without_a_value(tmp_path: Path) -> None:
    """``# text`` and ``# newdoc id`` with no ``= value`` made the sentence's text and doc_id
    the flag True instead of a string; they are kept in meta as flags and set nothing."""
    path = tmp_path / "x.conllu"
    path.write_text("# newdoc id\n# text\n1\tGo\t_\tVERB" + "\t_" * 6 + "\n", encoding="utf-8")
    (sentence,) = read_conllu(path)
    assert sentence.text is None and sentence.doc_id is None
    assert sentence.meta["text"] is True and sentence.meta["newdoc id"] is True
    check_corpus(read_conllu(path))
