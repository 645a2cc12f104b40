"""The headline table that README.md and the site's home page (docs/index.md) lead with, made
from the peers benchmark's records by the same code as docs/research/peers.md's table
(:func:`peers.results.rows`), and written into both files between the markers
``<!-- headline:start -->`` and ``<!-- headline:end -->``, so the two cannot disagree.

``python benchmarks/peers/headline.py [--results DIR] [PAGE ...]`` rewrites the block in each
page (README.md and docs/index.md by default); tests/docs/test_headline.py checks that doing
so changes nothing. Run with the project's interpreter.
"""

from __future__ import annotations

import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: the harness's package lies one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from peers.common import HarnessError, fail
from peers.results import MEMORY_FILE, fill_page, load_records, load_speed, rows

REPO = Path(__file__).resolve().parents[2]
PAGES = ("README.md", "docs/index.md")
BEGIN, END = "<!-- headline:start -->", "<!-- headline:end -->"
COLUMNS = ("system", "precision", "test F1", "words/s", "training")
# the speed run's rows the headline shows, in order, each with the words a reader knows it by
# (the first is the system the page is about: its F1 and speed are in bold)
SHOWN = {
    "gemma-r1-L11-focus-compile-o125": "**seqrep**: Gemma-3-270m, r=1, cut at 11 of 18 "
                                       "layers, reading documents, `--runtime compile`",
    "gemma-r1-L11-focus-o125": "the same labeler, PyTorch eager",
    "gemma-r1-L11-focus-int8-o125": "the same labeler, ONNX Runtime, seqrep's int8 recipe",
    "gemma-r1-L8-focus-compile-o125": "the same recipe cut at layer 8, `--runtime compile`",
    "hf-trainer-openvino": "Hugging Face `Trainer` token classifier, all-mpnet-base-v2, "
                           "OpenVINO",
    "hf-trainer-compile": "the same, `torch.compile`",
    "hf-trainer-bf16": "the same, PyTorch eager",
    "hf-trainer": "the same, fp32",
    "flair-sentence": "flair `SequenceTagger` + CRF, all-mpnet-base-v2, sentence level",
    "spacy-trf": "spaCy 3.8 transformer pipeline (`--optimize accuracy`), all-mpnet-base-v2",
    "spacy-cnn": "spaCy 3.8 CNN pipeline (`--optimize efficiency`)",
    "flair-flert": "flair with FLERT document context",
}
# the runtime is in the row's words; OpenVINO's defaults compute in bf16 where it is native
PRECISION = {"onnx-int8": "int8", "compile-bf16": "bf16", "compile": "bf16",
             "openvino": "bf16"}


def _whole(value: float) -> str:
    """A whole number with thousands separators, halves rounded up (472.5 words/s is 473)."""
    return f"{Decimal(repr(value)).quantize(Decimal(1), ROUND_HALF_UP):,}"


def _cells(row: dict[str, Any], first: bool) -> list[str]:
    def bold(text: str) -> str:
        return f"**{text}**" if first else text

    f1, speed, seconds = row["f1"], row["words_per_s"], row["train_s"]
    return [SHOWN[row["name"]], PRECISION.get(row["precision"], row["precision"]),
            bold(f"{f1:.2f}") if isinstance(f1, int | float) else "-",
            bold(_whole(speed)) if isinstance(speed, int | float) else "-",
            f"{_whole(seconds / 60)} min" if isinstance(seconds, int | float) else "-"]


def table(results_dir: Path) -> str:
    """The headline table from the records in ``results_dir``, as Markdown.

    Raises:
        HarnessError: a record is unreadable, or a row the headline shows is missing.
    """
    made = {r["name"]: r for r in rows(load_records(results_dir), load_speed(results_dir),
                                       load_speed(results_dir, MEMORY_FILE))}
    missing = [name for name in SHOWN if name not in made]
    if missing:
        raise HarnessError(f"{results_dir}: the speed run has no rows {missing}")
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_cells(made[name], i == 0)) + " |"
              for i, name in enumerate(SHOWN)]
    return "\n".join(lines) + "\n"


def fill(page: Path, text: str) -> None:
    """Replace what lies between the page's headline markers by ``text``, atomically.

    Raises:
        HarnessError: the page is missing or lacks the markers (nothing is written).
    """
    fill_page(page, text, (BEGIN, END), option="")


def main(argv: list[str] | None = None) -> None:
    import argparse

    p = argparse.ArgumentParser(description="write the headline table into the pages")
    p.add_argument("--results", type=Path, default=REPO / "results")
    p.add_argument("pages", type=Path, nargs="*", default=[REPO / page for page in PAGES])
    args = p.parse_args(argv)
    try:
        text = table(args.results)
        for page in args.pages:
            fill(page, text)
        print(text, end="")
    except HarnessError as err:
        fail(err)


if __name__ == "__main__":
    main()
