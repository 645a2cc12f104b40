"""The peers harness's conversions, on a few sentences written here: seqrep's CoNLL-2003
folder to the neutral JSON lines, those to flair's columns and spaCy's Docs and back, and
predictions to conlleval's columns, scored by ``seqrep score``. Expected values are written
out by hand."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from inprocess import seqrep

# the harness is a package beside src/ (benchmarks/peers), not part of seqrep
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from peers import common, convert  # noqa: E402
from peers.common import HarnessError  # noqa: E402

# two documents in CoNLL-2003's own layout (IOB1: an entity starts with I- unless it follows
# one of the same type)
TRAIN = """-DOCSTART- -X- -X- O

EU NNP B-NP I-ORG
rejects VBZ B-VP O
German JJ B-NP I-MISC
call NN I-NP O

Peter NNP B-NP I-PER
Blackburn NNP I-NP I-PER

-DOCSTART- -X- -X- O

BRUSSELS NNP B-NP I-LOC
1996-08-22 CD I-NP O
"""
EXPECTED = [
    {"words": ["EU", "rejects", "German", "call"], "tags": ["B-ORG", "O", "B-MISC", "O"],
     "doc_id": "doc1"},
    {"words": ["Peter", "Blackburn"], "tags": ["B-PER", "I-PER"], "doc_id": "doc1"},
    {"words": ["BRUSSELS", "1996-08-22"], "tags": ["B-LOC", "O"], "doc_id": "doc2"},
]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("data")
    (root / "conll2003").mkdir()
    for name in ("eng.train", "eng.testa", "eng.testb"):
        (root / "conll2003" / name).write_text(TRAIN, encoding="utf-8")
    return root


def test_conll2003_to_neutral_files(data_dir: Path, tmp_path: Path) -> None:
    manifest = convert.convert(tmp_path / "out", data_dir)
    for split in ("train", "validation", "test"):
        lines = (tmp_path / "out" / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()
        assert [json.loads(ln) for ln in lines] == EXPECTED
        assert common.read_jsonl(tmp_path / "out" / f"{split}.jsonl") == EXPECTED
        assert manifest["splits"][split]["sentences"] == 3
        assert manifest["splits"][split]["words"] == 8
        assert manifest["splits"][split]["documents"] == 2


def test_smoke_subset_keeps_whole_documents(data_dir: Path, tmp_path: Path) -> None:
    convert.convert(tmp_path / "out", data_dir, max_sentences=1)
    assert common.read_jsonl(tmp_path / "out" / "test.jsonl") == EXPECTED[:2]


def test_missing_data_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match=f"{tmp_path / 'conll2003'} is missing"):
        convert.conll_folder(tmp_path)
    (tmp_path / "conll2003").mkdir()
    (tmp_path / "conll2003" / "eng.train").write_text(TRAIN, encoding="utf-8")
    with pytest.raises(HarnessError, match="eng.testa is missing"):
        convert.conll_folder(tmp_path)


def test_bad_neutral_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "test.jsonl"
    path.write_text(json.dumps(EXPECTED[0]) + "\n"
                    + json.dumps({"words": ["a", "b"], "tags": ["O"]}) + "\n", encoding="utf-8")
    with pytest.raises(HarnessError) as ex:
        common.read_jsonl(path)
    assert str(ex.value) == f"{path}:2: 2 words but 1 tags"
    path.write_text("{oops\n", encoding="utf-8")
    with pytest.raises(HarnessError, match=f"{path}:1: not JSON"):
        common.read_jsonl(path)


def test_flair_columns_mark_documents_and_read_back(tmp_path: Path) -> None:
    text = common.flair_columns(EXPECTED)
    assert text == ("-DOCSTART- O\n\nEU B-ORG\nrejects O\nGerman B-MISC\ncall O\n\n"
                    "Peter B-PER\nBlackburn I-PER\n\n-DOCSTART- O\n\nBRUSSELS B-LOC\n"
                    "1996-08-22 O\n\n")
    # read back by seqrep's own CoNLL reader: same sentences, tags and documents
    from seqrep.data.conll import read_conll

    path = tmp_path / "train.txt"
    path.write_text(text, encoding="utf-8")
    back = [{"words": list(s.words), "tags": list(s.tags), "doc_id": s.doc_id}
            for s in read_conll(path)]
    assert back == EXPECTED


def test_spacy_docs_carry_documents_sentences_and_entities() -> None:
    spacy = pytest.importorskip("spacy")
    from peers import spacy_peer

    docs = spacy_peer.to_docs(spacy.blank("en").vocab, EXPECTED, gold=True)
    assert len(docs) == 2
    assert [[t.text for t in s] for s in docs[0].sents] == [EXPECTED[0]["words"],
                                                            EXPECTED[1]["words"]]
    assert [(e.start, e.end, e.label_) for e in docs[0].ents] == [
        (0, 1, "ORG"), (2, 3, "MISC"), (4, 6, "PER")]
    assert [(e.text, e.label_) for e in docs[1].ents] == [("BRUSSELS", "LOC")]
    bare = spacy_peer.to_docs(spacy.blank("en").vocab, EXPECTED, gold=False)
    assert [len(d.ents) for d in bare] == [0, 0]


def test_spans_and_document_tags_to_sentences() -> None:
    assert common.spans_to_iob2(5, [(3, 5, "PER"), (0, 1, "LOC")]) == [
        "B-LOC", "O", "O", "B-PER", "I-PER"]
    with pytest.raises(HarnessError, match="overlaps"):
        common.spans_to_iob2(4, [(0, 2, "PER"), (1, 3, "LOC")])
    with pytest.raises(HarnessError, match="outside"):
        common.spans_to_iob2(2, [(1, 3, "PER")])
    # a span across the boundary of sentences of 2 and 3 words is cut there
    assert common.split_document_tags(["O", "B-ORG", "I-ORG", "I-ORG", "O"], [2, 3]) == [
        ["O", "B-ORG"], ["B-ORG", "I-ORG", "O"]]
    with pytest.raises(HarnessError):
        common.split_document_tags(["O"], [2])


def test_conll_columns_scored_by_seqrep(tmp_path: Path) -> None:
    predicted = [["B-ORG", "O", "O", "O"], ["B-PER", "I-PER"], ["B-ORG", "O"]]
    text = common.conll_columns(EXPECTED, predicted)
    assert text.splitlines()[:5] == ["EU B-ORG B-ORG", "rejects O O", "German B-MISC O",
                                     "call O O", ""]
    assert text.endswith("BRUSSELS B-LOC B-ORG\n1996-08-22 O O\n\n")
    path = tmp_path / "pred.conll"
    common.write_text(path, text)
    ran = seqrep("score", "--json", str(path))
    assert ran.returncode == 0, ran.stderr
    score = json.loads(ran.stdout)
    # gold: ORG, MISC, PER, LOC (4 spans); predicted: ORG, PER, ORG (3); right: ORG, PER
    assert score["precision"] == pytest.approx(2 / 3)
    assert score["recall"] == pytest.approx(2 / 4)
    assert score["f1"] == pytest.approx(2 * (2 / 3) * (1 / 2) / (2 / 3 + 1 / 2))
    with pytest.raises(HarnessError, match="sentence 2: 1 predicted tags for 2 words"):
        common.conll_columns(EXPECTED, [predicted[0], ["O"], predicted[2]])


def test_cpu_flags_from_cpuinfo() -> None:
    info = "processor : 0\nmodel name : Some Xeon\nflags : fpu avx2 avx512f avx512_vnni\n"
    got = common.cpu_flags(info)
    assert got["model"] == "Some Xeon"
    assert got["flags"]["avx512_vnni"] and got["flags"]["avx2"]
    assert not got["flags"]["avx512_bf16"] and not got["flags"]["amx_bf16"]


def test_cpu_names_its_generation() -> None:
    """"AMD EPYC" alone hides the generation (a hypervisor's model name): the family, model
    and stepping numbers tell two machines with one name apart; absent ones are None."""
    info = ("processor : 0\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\n"
            "stepping\t: 1\nflags : avx2\nprocessor : 1\ncpu family : 99\n")
    got = common.cpu_flags(info)
    assert (got["model"], got["family"], got["model_number"], got["stepping"]) == (
        "AMD EPYC", 25, 17, 1)
    bare = common.cpu_flags("model name : X\n")
    assert bare["family"] is None and bare["model_number"] is None


def test_clock_schedule_warms_up_then_decays_to_zero_at_the_budget() -> None:
    """flair-flert's schedule by the clock: a budget of 100 s warms up over its first 10 s and
    decays linearly to zero at 100 s (values by hand)."""
    from peers.common import clock_lr_factor

    got = [clock_lr_factor(t, 100.0) for t in (0, 5, 10, 55, 90, 100, 150)]
    assert got == pytest.approx([0.0, 0.5, 1.0, 0.5, 1 / 9, 0.0, 0.0])
    assert clock_lr_factor(30, 60, warmup=0.5) == 1.0


def test_a_damaged_manifest_is_one_line(data_dir: Path, tmp_path: Path, monkeypatch,
                                        capsys) -> None:
    """run.py reads the converted data's manifest.json through the bounded reader: a damaged
    one is one line naming it and exit 2, not a traceback."""
    from peers import run
    from peers.common import MARK

    venv = tmp_path / "venvs" / "spacy"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    (venv / MARK).write_text("spacy==3.8.7\n", encoding="utf-8")
    monkeypatch.setenv("PEERS_VENVS", str(tmp_path / "venvs"))
    manifest = tmp_path / "work" / "data" / "manifest.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text('{"max_sentences": nu', encoding="utf-8")
    with pytest.raises(SystemExit) as ex:
        run.main(["--systems", "spacy-cnn", "--data-dir", str(data_dir), "--work",
                  str(tmp_path / "work"), "--results", str(tmp_path / "r")])
    assert ex.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(manifest) in err, err
