"""``seqrep score`` reads the gold and the predicted column alike: each column's scheme is
detected and converted to IOB2 (IOB1, BIOES, prefix-less, lowercase prefixes), and a column no
scheme reads is refused in one line with exit 2. Every expected value is counted by hand from
the spans written in the comments, never from the scorer."""

from __future__ import annotations

from pathlib import Path

import pytest

from seqrep.cli.app import main
from seqrep.evaluate import score_file


def write(tmp_path: Path, sentences: list[list[tuple[str, str, str]]]) -> Path:
    """A conlleval-style file: ``word POS gold predicted`` lines, a blank line per sentence."""
    lines: list[str] = []
    for sent in sentences:
        lines += [f"{w} NNP {g} {p}" for w, g, p in sent] + [""]
    path = tmp_path / "pred.txt"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def prf(correct: int, predicted: int, gold: int) -> tuple[float, float, float]:
    p, r = correct / predicted, correct / gold
    return p, r, 2 * p * r / (p + r)


def check(result: dict, correct: int, predicted: int, gold: int) -> None:
    p, r, f = prf(correct, predicted, gold)
    assert (result["predicted_spans"], result["gold_spans"]) == (predicted, gold)
    assert result["precision"] == pytest.approx(p) and result["recall"] == pytest.approx(r)
    assert result["f1"] == pytest.approx(f)


def test_iob1_columns_as_in_original_conll2003(tmp_path: Path) -> None:
    # IOB1: I- starts a span after O or another type; B- only between two spans of one type.
    path = write(tmp_path, [
        [("U.N.", "I-ORG", "I-ORG"), ("official", "O", "O"), ("Ekeus", "I-PER", "I-PER"),
         ("heads", "O", "O"), ("for", "O", "O"), ("Baghdad", "I-LOC", "I-PER")],
        [("Germany", "I-LOC", "I-LOC"), ("France", "B-LOC", "I-LOC"),
         ("Italy", "B-LOC", "B-LOC")]])
    # gold: ORG 0-1, PER 2-3, LOC 5-6 | LOC 0-1, LOC 1-2, LOC 2-3      (6 spans)
    # pred: ORG 0-1, PER 2-3, PER 5-6 | LOC 0-2, LOC 2-3               (5 spans)
    # right: ORG 0-1, PER 2-3, LOC 2-3 of sentence 2                   (3)
    result = score_file(path)
    check(result, 3, 5, 6)
    loc, per, org = (result["per_label"][k] for k in ("LOC", "PER", "ORG"))
    assert (loc["precision"], loc["recall"], loc["support"]) == (pytest.approx(1 / 2),
                                                                 pytest.approx(1 / 4), 4)
    assert (per["precision"], per["recall"], per["support"]) == (pytest.approx(1 / 2), 1.0, 1)
    assert (org["f1"], org["support"]) == (1.0, 1)


def test_identical_iob1_columns_score_100(tmp_path: Path) -> None:
    sent = [("EU", "I-ORG"), ("rejects", "O"), ("German", "I-MISC"), ("call", "O"),
            ("Paris", "I-LOC"), ("Berlin", "B-LOC")]
    result = score_file(write(tmp_path, [[(w, t, t) for w, t in sent]]))
    check(result, 4, 4, 4)


def test_bioes_columns(tmp_path: Path) -> None:
    path = write(tmp_path, [
        [("Angela", "B-PER", "B-PER"), ("Merkel", "E-PER", "E-PER"), ("in", "O", "O"),
         ("Paris", "S-LOC", "S-LOC")],
        [("Reuters", "S-ORG", "S-ORG"), ("World", "B-MISC", "B-MISC"),
         ("Cup", "I-MISC", "E-MISC"), ("final", "E-MISC", "S-MISC")]])
    # gold: PER 0-2, LOC 3-4 | ORG 0-1, MISC 1-4                       (4 spans)
    # pred: PER 0-2, LOC 3-4 | ORG 0-1, MISC 1-3, MISC 3-4             (5 spans)
    result = score_file(path)
    check(result, 3, 5, 4)
    assert result["per_label"]["MISC"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0,
                                           "support": 1}


def test_iob2_gold_bilou_predictions(tmp_path: Path) -> None:
    # each column in its own scheme: IOB2 gold, BILOU predictions (U- = S-, L- = E-)
    path = write(tmp_path, [[("Angela", "B-PER", "B-PER"), ("Merkel", "I-PER", "L-PER"),
                             ("in", "O", "O"), ("Paris", "B-LOC", "U-LOC")]])
    check(score_file(path), 2, 2, 2)


def test_prefixless_predictions_read_as_runs(tmp_path: Path) -> None:
    # plain labels against prefixed gold: a run of one label is one span (IO)
    path = write(tmp_path, [
        [("Angela", "B-PER", "PER"), ("Merkel", "I-PER", "PER"), ("visited", "O", "O"),
         ("Paris", "B-LOC", "ORG")],
        [("Rome", "B-LOC", "LOC"), ("and", "O", "O"), ("New", "B-LOC", "LOC"),
         ("York", "I-LOC", "LOC")]])
    # gold: PER 0-2, LOC 3-4 | LOC 0-1, LOC 2-4; pred: PER 0-2, ORG 3-4 | LOC 0-1, LOC 2-4
    check(score_file(path), 3, 4, 4)


def test_prefixless_predictions_without_o(tmp_path: Path) -> None:
    # plain labels on every word, against prefixed gold, are still spans (runs), not tokens
    path = write(tmp_path, [[("Angela", "B-PER", "PER"), ("Merkel", "I-PER", "PER"),
                             ("Berlin", "B-LOC", "PER")]])
    # gold: PER 0-2, LOC 2-3; pred: PER 0-3
    result = score_file(path)
    assert (result["predicted_spans"], result["gold_spans"], result["f1"]) == (1, 2, 0.0)


def test_plain_labels_with_o_in_both_columns_are_runs(tmp_path: Path) -> None:
    path = write(tmp_path, [[("Angela", "PER", "PER"), ("Merkel", "PER", "O"), ("in", "O", "O"),
                             ("Paris", "LOC", "LOC")]])
    # gold: PER 0-2, LOC 3-4; pred: PER 0-1, LOC 3-4
    check(score_file(path), 1, 2, 2)


def test_lowercase_prefixes(tmp_path: Path) -> None:
    # an IOB2 prediction column is scored as written: i-loc after o continues no span
    path = write(tmp_path, [[("Angela", "B-per", "b-per"), ("Merkel", "I-per", "i-per"),
                             ("in", "O", "o"), ("Paris", "B-loc", "i-loc"),
                             ("today", "O", "o"), ("Rome", "B-loc", "b-loc")]])
    # gold: per 0-2, loc 3-4, loc 5-6; pred: per 0-2, loc 5-6
    check(score_file(path), 2, 2, 3)


def test_plain_tags_in_both_columns_are_token_tagging(tmp_path: Path) -> None:
    path = write(tmp_path, [[("dogs", "NOUN", "NOUN"), ("bark", "VERB", "NOUN"),
                             ("loudly", "ADV", "ADV")]])
    result = score_file(path)
    assert result["accuracy"] == pytest.approx(2 / 3) and result["words"] == 3
    assert result["per_label"]["NOUN"]["precision"] == pytest.approx(1 / 2)


@pytest.mark.parametrize("pred, line, expected", [
    (["B-PER", "PER", "O"], 2, "has no B-/I- prefix but other tags have one"),
    (["B-PER", "I-", "O"], 2, "empty label"),
    (["O", "O", "B-B-PER"], 3, "two prefixes"),
])
def test_unreadable_prediction_column_is_one_line_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture, pred: list[str], line: int,
        expected: str) -> None:
    words, gold = ["Angela", "Merkel", "spoke"], ["B-PER", "I-PER", "O"]
    path = write(tmp_path, [list(zip(words, gold, pred))])
    with pytest.raises(SystemExit) as exit_:
        main(["score", str(path)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}:{line}: predicted column: ") and expected in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_stray_i_in_iob2_gold_is_repaired_but_not_in_predictions(tmp_path: Path) -> None:
    # one IOB2 column with a stray I-LOC (after O), in gold and in predictions: the gold is
    # read as a file is (the stray I-LOC starts a LOC span: gold PER, LOC = 2 spans); the
    # predictions are scored as written (the stray I-LOC is in no span: predicted PER = 1)
    path = write(tmp_path, [[("Obama", "B-PER", "B-PER"), ("in", "O", "O"),
                             ("Paris", "I-LOC", "I-LOC")]])
    check(score_file(path), 1, 1, 2)


def test_lowercase_o_in_plain_columns_is_outside(tmp_path: Path) -> None:
    # plain labels with a lowercase o: gold runs PER, LOC; predicted PER only ('o' is no label)
    path = write(tmp_path, [[("Obama", "PER", "PER"), ("in", "o", "o"), ("Paris", "LOC", "o")]])
    check(score_file(path), 1, 1, 2)


def test_cr_only_line_endings(tmp_path: Path) -> None:
    # a file from an old Mac (lone CR ends each line): two sentences, gold PER and LOC,
    # predicted PER (right) and PER (wrong type)
    path = tmp_path / "pred.txt"
    path.write_bytes(b"Obama NNP B-PER B-PER\rleft NNP O O\r\rParis NNP B-LOC B-PER\r")
    result = score_file(path)
    check(result, 1, 2, 2)
    assert result["sentences"] == 2
