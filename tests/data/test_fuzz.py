"""A seeded fuzz of every reader: random byte edits, truncations and line shuffles of the tiny
fixture files either read or raise a SeqrepError (one line for the user), never another
exception; what reads must also give spans and figures."""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from seqrep.data.absa import read_absa_tokenized, read_semeval_xml
from seqrep.data.conll import read_conll
from seqrep.data.conllu import read_conllu
from seqrep.data.jsonl import read_jsonl
from seqrep.data.nlupp import read_nlupp
from seqrep.data.parallel import read_parallel
from seqrep.data.readers import read_corpus
from seqrep.errors import SeqrepError

CASES = int(os.environ.get("SEQREP_FUZZ_CASES", "150"))  # per reader: a few seconds in all
# Pieces that mean something to some format, spliced in at random places.
PIECES = [b"\t", b"\n", b"\n\n", b" ", b"-", b"B-", b"I-", b"E-", b"S-", b"O", b"_", b"=",
          b"####", b"#", b"-DOCSTART-", b"1-2", b"8.1", b"[", b"]", b"{", b"}", b'"', b",",
          b":", b"true", b"null", b"-1", b"99999999999999999999", b"<", b">", b"</text>",
          b"<sentence>", b"&", b"\x00", b"\xff", b"\xe9", b"\xc3", b"\r", b"\xc2\xa0",
          "\u2028".encode(), "é".encode(), "🙂".encode(), b"[" * 3000, b"{\"a\":" * 2000]


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One to four random edits of ``data``."""
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(6)
        i = rng.randrange(len(data) + 1)
        if kind == 0:  # truncate
            data = data[:i]
        elif kind == 1:  # delete a run
            data = data[:i] + data[i + rng.randint(1, 20):]
        elif kind == 2:  # insert a meaningful piece
            data = data[:i] + rng.choice(PIECES) + data[i:]
        elif kind == 3:  # flip a byte
            if data:
                i = min(i, len(data) - 1)
                data = data[:i] + bytes([rng.randrange(256)]) + data[i + 1:]
        elif kind == 4:  # shuffle, drop or repeat lines
            lines = data.split(b"\n")
            op = rng.randrange(3)
            if op == 0:
                rng.shuffle(lines)
            elif op == 1 and lines:
                del lines[rng.randrange(len(lines))]
            else:
                lines.insert(rng.randrange(len(lines) + 1), rng.choice(lines))
            data = b"\n".join(lines)
        else:  # random bytes
            data = data[:i] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 8))) + data[i:]
    return data


def check_reads_or_raises_one_line(read: Callable[[Path], object], path: Path) -> None:
    try:
        corpus = read(path)
    except SeqrepError as err:
        assert len(str(err).splitlines()) == 1, repr(str(err))
        assert len(str(err)) < 400 + len(str(path)), str(err)
        return
    for sentence in corpus:  # what reads is usable
        assert len(sentence.spans) <= len(sentence)
    corpus.stats()


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
    }


@pytest.mark.parametrize("name", ["conll", "conllu", "jsonl", "semeval-xml", "absa-tokenized",
                                  "nlupp", "parallel-in", "parallel-out", "detected"])
def test_mutants_read_or_raise_a_seqrep_error(fixtures: Path, tmp_path: Path, name: str) -> None:
    original, target, read = _targets(fixtures, tmp_path)[name]
    data = original.read_bytes()
    rng = random.Random(f"seqrep-fuzz-{name}")
    for case in range(CASES):
        mutant = mutate(data, rng)
        target.write_bytes(mutant)
        try:
            check_reads_or_raises_one_line(read, target)
        except Exception as err:  # noqa: BLE001 - report the mutant that broke the reader
            raise AssertionError(f"{name} case {case}: {type(err).__name__}: {err}\n"
                                 f"mutant: {mutant[:400]!r}") from err
