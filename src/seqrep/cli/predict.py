"""``seqrep predict``: label raw text (an argument, a file, or stdin) with a trained model."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from seqrep.cli.options import inference_option, revision_option

if TYPE_CHECKING:
    from seqrep.config import InferenceConfig


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
                                      help="file with one text per line, or .jsonl records "
                                           "with \"text\" or \"words\" (and \"doc_id\")"),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="stream JSON lines into this file; an interrupted run "
        "resumes"),
    output_format: str = typer.Option("jsonl", "--format", help="jsonl or conll"),
    words: bool = typer.Option(False, "--words",
                               help="input lines are pre-tokenized, whitespace-separated words"),
    decoding: str | None = inference_option("decoding"),
    batch_size: int = inference_option("batch_size"),
    trust_remote_code: bool = inference_option("trust_remote_code"),
    device: str = inference_option("device"),
    precision: str = inference_option("precision"),
    runtime: str = inference_option("runtime"),
    context_overlap: float | None = inference_option("context_overlap"),
    revision: str | None = revision_option(),
    engine: str = typer.Option("local", "--engine",
                               help="local (this process, or torchrun's) or ray (Ray "
                                    "actors; needs --input and --output)"),
    actors: int = typer.Option(1, "--actors", help="with --engine ray: how many actors label"),
    address: str | None = typer.Option(
        None, "--address", help="with --engine ray: the Ray cluster to join (default: "
        "RAY_ADDRESS, else a Ray runtime started on this machine)"),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="with --output: replace a file that is no seqrep output, "
        "or a partial one of another input or labeler"),
) -> None:
    """Print one JSON line per input line (spans with character offsets), or CoNLL columns.

    Each line is one text. Within it, sentences end at a . ! or ? followed by a space and a
    capital letter, digit or opening quote (not after common abbreviations such as Dr. or
    e.g.), and words are split by seqrep's tokenizer (punctuation split off, English clitics
    split as in CoNLL, numbers, U.S.-style abbreviations, URLs, e-mail addresses, @mentions and
    #hashtags kept whole). A labeler trained with --context document labels each text as one
    document, and consecutive .jsonl lines with the same "doc_id" as one.
    """
    from seqrep.cli.options import inference_config, with_revision
    from seqrep.errors import ConfigError

    settings = inference_config(locals())  # the options above; checked once, here
    run = with_revision(run, revision)
    if output_format not in ("jsonl", "conll"):
        raise ConfigError(f"--format {output_format!r}; expected jsonl or conll")
    _check_engine(engine, actors, address, input, output)
    if input is not None:
        _check_input(input)
    if output is not None:
        if input is None:
            raise ConfigError("--output needs --input FILE (the texts to label)")
        if output_format != "jsonl":
            raise ConfigError("--output writes JSON lines; use --format jsonl")
        _predict_to_file(run, input, output, settings, words, overwrite,
                         (engine, actors, address))
    elif input is not None:
        _file_to_stdout(run, input, settings, words, output_format)
    else:
        _texts_to_stdout(run, _texts(text), settings, words, output_format)


def _check_input(input: Path) -> None:
    """An input file read before anything loads: a CoNLL column file is refused (its columns
    would be labeled as words), an empty one said on stderr (nothing to label is no error)."""
    from seqrep.errors import ConfigError
    from seqrep.predict.inputs import count_records, is_parquet, looks_like_conll

    if looks_like_conll(input):
        raise ConfigError(f"{input} looks like a CoNLL column file (words and tags in columns, "
                          "blank lines between sentences), and --input reads one text per "
                          "line; give plain text, or each sentence's words on one line with "
                          "--words (to score a labeled file: seqrep evaluate RUN --dataset FILE)")
    if input.is_file() and (input.stat().st_size == 0 if not is_parquet(input)
                            else count_records(input) == 0):
        typer.echo(f"note: {input} is empty: nothing to label", err=True)


def _check_engine(engine: str, actors: int, address: str | None, input: Path | None,
                  output: Path | None) -> None:
    """The engine options, checked before anything loads (Ray's extra included)."""
    from seqrep.errors import ConfigError

    if engine not in ("local", "ray"):
        raise ConfigError(f"--engine {engine!r}; expected local or ray")
    if engine == "local":
        if actors != 1 or address is not None:
            raise ConfigError("--actors and --address need --engine ray")
        return
    if input is None or output is None:
        raise ConfigError("--engine ray needs --input FILE and --output FILE")
    if actors < 1:
        raise ConfigError(f"--actors {actors}; expected 1 or more")
    from seqrep.core.extras import require

    require("ray", "seqrep predict --engine ray")


def _texts(text: str | None) -> list[str]:
    """The texts of the TEXT argument: itself, or stdin's lines for ``-`` (or when stdin is
    no terminal and TEXT is not given)."""
    from seqrep.errors import ConfigError

    if text == "-" or text is None:
        texts = _lines(_stdin()) if text == "-" or not sys.stdin.isatty() else []
        if text is None and not texts:
            raise ConfigError("give TEXT, --input FILE, or '-' to read stdin")
        if not texts:
            typer.echo("note: stdin is empty: nothing to label", err=True)
        return texts
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError("TEXT is not valid UTF-8; pass it in a file with --input") from None
    return [text]


def _loaded(run: Path, settings: InferenceConfig, say: bool = True) -> Any:
    """The labeler of ``run`` as ``settings`` say, its ``running on ...`` line on stderr
    (stdout stays the records)."""
    from seqrep.export import load
    from seqrep.model.device import ran_on_line

    labeler = load(run, settings)
    if say:
        typer.echo(ran_on_line(labeler), err=True)
    return labeler


def _texts_to_stdout(run: Path, texts: list[str], settings: InferenceConfig, words: bool,
                     output_format: str) -> None:
    """TEXT or stdin: the texts labeled in one call, their records on stdout."""
    from seqrep.predict.tagger import predict_text

    labeler = _loaded(run, settings)
    for record in predict_text(labeler, texts, settings.decoding, settings.batch_size,
                               pretokenized=words):
        _write(record, output_format)


def _file_to_stdout(run: Path, input: Path, settings: InferenceConfig, words: bool,
                    output_format: str) -> None:
    """``--input`` without ``--output``: the file read whole (lines or JSONL records, their
    ``doc_id`` kept, as with ``--output``), labeled in one call, records on stdout."""
    from seqrep.predict.inputs import read_records
    from seqrep.predict.tagger import predict_text

    items = [x[1:] for x in read_records(input, words)]  # (text, pretokenized[, doc_id])
    labeler = _loaded(run, settings)
    for record in predict_text(labeler, [it[0] for it in items], settings.decoding,
                               settings.batch_size, pretokenized=[it[1] for it in items],
                               docs=[it[2] if len(it) > 2 else None for it in items]):
        _write(record, output_format)


def _write(record: dict, output_format: str) -> None:
    from seqrep.predict.tagger import to_conll

    if output_format == "conll":
        sys.stdout.write(to_conll(record))
    else:
        sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")


def _predict_to_file(run: Path, input: Path, output: Path, settings: InferenceConfig,
                     words: bool, overwrite: bool,
                     engine: tuple[str, int, str | None] = ("local", 1, None)) -> None:
    """``--output``: paths and an existing partial output checked before the model loads,
    then streamed (:func:`seqrep.predict.stream.predict_file`), here or by Ray actors."""
    import os

    from accelerate import PartialState

    from seqrep.model.device import ran_on_line
    from seqrep.model.hub import resolve, snapshot_of
    from seqrep.predict.stream import predict_file, prepare, run_identity, stderr_progress

    # a Hub name is resolved once, here: the partial output's identity names the snapshot's
    # commit, and the labeler loaded is that snapshot even if the branch moves meanwhile
    run = resolve(run)
    hub = snapshot_of(run)
    # RANK: set by torchrun / accelerate launch; only their main process handles OUT.partial
    plan = prepare(input, output, run_identity(run, runtime=settings.runtime,
                                               precision=settings.precision,
                                               decoding=settings.decoding, words=words,
                                               **settings.layout),
                   overwrite, main=os.environ.get("RANK", "0") == "0")
    if engine[0] == "ray":  # each actor resolves the name itself: to the same commit
        _predict_with_ray(run if hub is None else Path(f"{hub[0]}@{hub[1]}"), input, output,
                          settings, words, overwrite, plan, engine)
        return
    labeler = _loaded(run, settings, say=False)
    state = PartialState(cpu=labeler.placement.device.type == "cpu")
    main = state.is_main_process
    if main:
        typer.echo(ran_on_line(labeler), err=True)
    bar = stderr_progress() if main else None
    first: list[int] = []
    start = time.perf_counter()

    def progress(done: int, total: int) -> None:
        if not first:
            first.append(done)
        if bar is not None:
            bar(done, total)

    n = predict_file(labeler, input, output, settings.decoding, settings.batch_size,
                     progress=progress,
                     accelerator=state, words=words, plan=plan, overwrite=overwrite,
                     log=(lambda m: typer.echo(m, err=True)) if main else None)
    if main:
        new, seconds = n - (first[0] if first else 0), time.perf_counter() - start
        typer.echo(f"{n} records -> {output} ({new} labeled in {seconds:.1f} s, "
                   f"{new / max(seconds, 1e-3):.1f} texts/s)", err=True)


def _predict_with_ray(run: Path, input: Path, output: Path, settings: InferenceConfig,
                      words: bool, overwrite: bool, plan: Any,
                      engine: tuple[str, int, str | None]) -> None:
    """``--engine ray``: the checked plan labeled by Ray actors
    (:func:`seqrep.integrations.ray.predict_with_ray`)."""
    from seqrep.integrations.ray import predict_with_ray
    from seqrep.predict.stream import stderr_progress

    _, actors, address = engine
    start = time.perf_counter()
    n = predict_with_ray(run, input, output, settings, actors=actors, address=address,
                         words=words, overwrite=overwrite, plan=plan,
                         log=lambda m: typer.echo(m, err=True), progress=stderr_progress())
    typer.echo(f"{n} records -> {output} ({time.perf_counter() - start:.1f} s with {actors} "
               f"Ray actor{'s' if actors > 1 else ''})", err=True)
