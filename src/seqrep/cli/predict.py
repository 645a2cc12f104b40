"""``seqrep predict``: label raw text (an argument, a file, or stdin) with a trained model."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer


def predict(
    run: Path = typer.Argument(..., help="run folder (or a saved labeler folder)"),
    text: str | None = typer.Argument(None, help="text to label; '-' reads stdin"),
    input: Path | None = typer.Option(None, "--input", "-i",
                                      help="file with one text per line"),
    output_format: str = typer.Option("jsonl", "--format", help="jsonl or conll"),
    words: bool = typer.Option(False, "--words",
                               help="input lines are pre-tokenized, whitespace-separated words"),
    decoding: str | None = typer.Option(None, "--decoding", help="greedy or constrained"),
    batch_size: int = typer.Option(32, "--batch-size"),
) -> None:
    """Print one JSON line per input text (spans with character offsets), or CoNLL columns.

    Raw text is split into sentences at line breaks and after . ! ? followed by a capital,
    and into words by seqrep's tokenizer (punctuation split off, U.S.-style abbreviations
    and numbers kept whole).
    """
    from seqrep.errors import ConfigError
    from seqrep.model.labeler import SequenceLabeler
    from seqrep.predict import predict_text, to_conll

    if output_format not in ("jsonl", "conll"):
        raise ConfigError(f"--format {output_format!r}; expected jsonl or conll")
    if input is not None:
        from seqrep.data.sources import read_text

        texts = read_text(input).splitlines() if input.is_file() and input.stat().st_size \
            else [] if input.is_file() else read_text(input).splitlines()
    elif text == "-" or text is None:
        texts = sys.stdin.read().splitlines() if text == "-" or not sys.stdin.isatty() else []
        if text is None and not texts:
            raise ConfigError("give TEXT, --input FILE, or '-' to read stdin")
    else:
        texts = [text]
    labeler = SequenceLabeler.from_pretrained(run)
    for record in predict_text(labeler, texts, decoding, batch_size, pretokenized=words):
        if output_format == "conll":
            sys.stdout.write(to_conll(record))
        else:
            sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
