"""``--decoding`` takes greedy or constrained: anything else is one line and exit 2 from every
command that has the option, while the options are read (no model is loaded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from seqrep.cli.app import main


@pytest.mark.parametrize("command", [["predict", "{run}", "Obama left."],
                                     ["evaluate", "{run}", "--dataset", "{run}/x.txt"]])
def test_unknown_decoding_is_one_line_exit_2(command: list[str], tmp_path: Path, capsys,
                                             monkeypatch) -> None:
    import seqrep.export

    def never(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("a model was loaded before --decoding was checked")

    monkeypatch.setattr(seqrep.export, "load_labeler", never)
    args = [a.format(run=tmp_path) for a in command] + ["--decoding", "foo"]
    with pytest.raises(SystemExit) as exit_:
        main(args)
    err = capsys.readouterr().err
    assert exit_.value.code == 2, err
    assert err == "error: --decoding 'foo'; expected one of greedy, constrained\n"


def test_train_unknown_decoding_is_one_line_exit_2(tmp_path: Path, capsys, monkeypatch) -> None:
    """``seqrep train`` takes auto too; the check is TrainConfig's, before any data or model
    is read."""
    import seqrep.train

    def never(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("training started before --decoding was checked")

    monkeypatch.setattr(seqrep.train, "train", never)
    with pytest.raises(SystemExit) as exit_:
        main(["train", "--output", str(tmp_path / "run"), "--decoding", "foo"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2, err
    assert err == "error: decoding='foo'; expected one of auto, greedy, constrained\n"
    assert not (tmp_path / "run").exists()
