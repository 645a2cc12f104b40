"""The headline table: README.md and the site's home page lead with one table, written into
both by one function from the peers benchmark's records (results/peers-*.json and
results/peers-speed.json), so the two cannot disagree."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from peers import headline  # noqa: E402
from peers.common import HarnessError  # noqa: E402

# The README's comparison as it was written by hand from docs/research/peers.md's table,
# before the generator existed: the generator must reproduce it from the records.
EXPECTED = """\
| system | precision | test F1 | words/s | training |
|---|---|---|---|---|
| **seqrep**: Gemma-3-270m, r=1, cut at 11 of 18 layers, reading documents | bf16 | **92.61** | **738** | 54 min |
| the same labeler, ONNX Runtime, seqrep's int8 recipe | int8 | 92.63 | 611 | 54 min |
| Hugging Face `Trainer` token classifier, all-mpnet-base-v2 | bf16 | 90.32 | 1,883 | 60 min |
| the same, fp32 | fp32 | 90.36 | 786 | 60 min |
| flair `SequenceTagger` + CRF, all-mpnet-base-v2, sentence level | fp32 | 87.43 | 775 | 62 min |
| spaCy 3.8 transformer pipeline (`--optimize accuracy`), all-mpnet-base-v2 | fp32 | 86.52 | 473 | 62 min |
| spaCy 3.8 CNN pipeline (`--optimize efficiency`) | fp32 | 79.87 | 32,170 | 10 min |
| flair with FLERT document context | fp32 | 76.62 | 69 | 60 min |
"""  # noqa: E501 - a table row is as long as it is


def test_the_table_made_from_the_records_is_the_hand_written_one() -> None:
    assert headline.table(ROOT / "results") == EXPECTED


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_the_page_holds_the_regenerated_block(page: str) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")
    start, end = text.find(headline.BEGIN), text.find(headline.END)
    assert 0 <= start < end, f"{page} lacks {headline.BEGIN} ... {headline.END}"
    held = text[start + len(headline.BEGIN):end]
    assert held == "\n\n" + EXPECTED + "\n", \
        f"{page}'s headline differs from the records: run python benchmarks/peers/headline.py"


def test_filling_writes_only_between_the_markers(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"before\n{headline.BEGIN}\nold\n{headline.END}\nafter\n", encoding="utf-8")
    headline.fill(page, "| new |\n")
    assert page.read_text(encoding="utf-8") == \
        f"before\n{headline.BEGIN}\n\n| new |\n\n{headline.END}\nafter\n"


def test_a_page_without_the_markers_is_refused_and_kept(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("no markers\n", encoding="utf-8")
    with pytest.raises(HarnessError, match="page.md.*headline:start"):
        headline.fill(page, "| new |\n")
    assert page.read_text(encoding="utf-8") == "no markers\n"
