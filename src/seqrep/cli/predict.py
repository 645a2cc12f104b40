"""``seqrep predict``: label raw text (an argument, a file, or stdin) with a trained model."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from seqrep.cli.options import check_decoding


def _lines(text: str) -> list[str]:
    """One text per ``\\n`` line (a final newline ends the last line; ``\\r\\n`` counts as one
    break); other Unicode line separators stay inside their line, so output lines match input
    lines one to one."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [x[:-1] if x.endswith("\r") else x for x in lines]


def _stdin() -> str:
    from seqrep.errors import DataError

    data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise DataError("<stdin>", f"not valid UTF-8 (byte {err.start})", line) from None


def predict(
    run: Path = typer.Argument(..., help="run folder (or a saved labeler folder)"),
    text: str | None = typer.Argument(None, help="text to label; '-' reads stdin"),
    input: Path | None = typer.Option(None, "--input", "-i",
                                      help="file with one text per line (.jsonl: objects "
                                           "with \"text\" or \"words\")"),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="write JSON lines here, streaming in chunks (constant "
        "memory, progress on stderr); an interrupted run resumes; shards over torchrun / "
        "accelerate launch processes"),
    output_format: str = typer.Option("jsonl", "--format", help="jsonl or conll"),
    words: bool = typer.Option(False, "--words",
                               help="input lines are pre-tokenized, whitespace-separated words"),
    decoding: str | None = typer.Option(None, "--decoding", help="greedy or constrained",
                                        callback=check_decoding),
    batch_size: int = typer.Option(32, "--batch-size"),
    trust_remote_code: bool = typer.Option(
        False, "--trust-remote-code",
        help="run code shipped with the model (never enabled by the run folder itself)"),
    device: str = typer.Option("auto", "--device", help="auto, cpu, cuda, cuda:N or mps"),
    precision: str = typer.Option("auto", "--precision",
                                  help="auto (bf16 on GPUs and on CPUs with native "
                                       "bf16, else fp32), fp32, bf16 or fp16"),
    runtime: str = typer.Option("auto", "--runtime", help="torch, onnx, onnx-int8 or auto "
                                "(onnx for a seqrep export folder)"),
) -> None:
    """Print one JSON line per input line (spans with character offsets), or CoNLL columns.

    Each line is one text. Within it, sentences end at a . ! or ? followed by a space and a
    capital letter, digit or opening quote (not after common abbreviations such as Dr. or
    e.g.), and words are split by seqrep's tokenizer (punctuation split off, English clitics
    split as in CoNLL, numbers, U.S.-style abbreviations, URLs, e-mail addresses, @mentions and
    #hashtags kept whole).
    """
    from seqrep.errors import ConfigError
    from seqrep.export import load_labeler
    from seqrep.predict import predict_text, to_conll

    if output_format not in ("jsonl", "conll"):
        raise ConfigError(f"--format {output_format!r}; expected jsonl or conll")
    if output is not None:
        if input is None:
            raise ConfigError("--output needs --input FILE (the texts to label)")
        if output_format != "jsonl":
            raise ConfigError("--output writes JSON lines; use --format jsonl")
        from accelerate import PartialState

        from seqrep.stream import predict_file, stderr_progress

        labeler = load_labeler(run, runtime, trust_remote_code, device, precision)
        state = PartialState(cpu=labeler.placement.device.type == "cpu")
        n = predict_file(labeler, input, output, decoding, batch_size,
                         progress=stderr_progress() if state.is_main_process else None,
                         accelerator=state)
        if state.is_main_process:
            typer.echo(f"{n} records -> {output}", err=True)
        return
    if input is not None:
        from seqrep.data.sources import read_text

        texts = [] if input.is_file() and not input.stat().st_size else _lines(read_text(input))
    elif text == "-" or text is None:
        texts = _lines(_stdin()) if text == "-" or not sys.stdin.isatty() else []
        if text is None and not texts:
            raise ConfigError("give TEXT, --input FILE, or '-' to read stdin")
    else:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise ConfigError("TEXT is not valid UTF-8; pass it in a file with --input") from None
        texts = [text]
    labeler = load_labeler(run, runtime, trust_remote_code, device, precision)
    for record in predict_text(labeler, texts, decoding, batch_size, pretokenized=words):
        if output_format == "conll":
            sys.stdout.write(to_conll(record))
        else:
            sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
