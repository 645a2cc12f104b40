"""What the user-facing pages may hold: no commit hashes, dates, issue numbers, test paths or
check accounts (they belong to the research pages and the changelog), and code blocks that
fit the page (at most 88 columns, so nothing scrolls sideways)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
# the research pages (docs/research/ and the generated results with their notes) and the
# changelog keep where each figure came from
RESEARCH = {"changelog.md", "results.md", "results-notes.md"}
PROVENANCE = re.compile(
    r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b"  # a commit hash
    r"|\b20\d\d-\d\d-\d\d\b"                                      # an ISO date
    r"|\bissues?[ #-]*\d+"                                        # an issue number
    r"|\btests/|::test_|\btest_\w+\.py"                           # a test's path
    r"|\bfresh\d+\b", re.IGNORECASE)                              # a check's account
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
WIDTH = 88


def user_pages() -> list[Path]:
    return [p for p in sorted(DOCS.rglob("*.md"))
            if p.relative_to(DOCS).parts[0] != "research" and p.name not in RESEARCH]


def test_the_scan_finds_each_kind() -> None:
    lines = ["built from 569c4ba", "on 2026-12-02", "issue 27 measured", "see issue14.yaml",
             "(`tests/test_fit.py`)", "(`::test_resume`)", "as the user `fresh8`",
             "`test_security.py::x`"]
    assert [bool(PROVENANCE.search(line)) for line in lines] == [True] * len(lines)
    clean = ["0.7096774193548386", "F1 92.61 at 738 words/s", "exit layer 11", "bf16"]
    assert not any(PROVENANCE.search(line) for line in clean)


def test_user_pages_name_no_hashes_dates_issues_or_tests() -> None:
    found = [f"{page.relative_to(ROOT)}:{number}: {line.strip()[:100]}"
             for page in user_pages()
             for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
             if PROVENANCE.search(line)]
    assert not found, f"{len(found)} lines:\n" + "\n".join(found)


def wide_code_lines(page: Path) -> list[str]:
    """The lines of the page's fenced code blocks longer than WIDTH columns."""
    wide, fence = [], None
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        match = FENCE.match(line)
        if fence is None:
            fence = match.group(1) if match else None
        elif line.strip() == fence:
            fence = None
        elif len(line) > WIDTH:
            wide.append(f"{page.name}:{number}: {len(line)} columns")
    return wide


def test_wide_code_lines_are_found(tmp_path: Path) -> None:
    page = tmp_path / "docs.md"
    page.write_text("x" * 100 + "\n```bash\n" + "y" * 88 + "\n" + "z" * 89 + "\n```\n",
                    encoding="utf-8")
    assert [line.split(": ")[1] for line in wide_code_lines(page)] == ["89 columns"]


def test_code_blocks_of_the_docs_fit_the_page() -> None:
    # the research pages keep the commands exactly as they ran (results.md is generated)
    wide = [line for page in user_pages() for line in wide_code_lines(page)]
    assert not wide, f"{len(wide)} code lines over {WIDTH} columns:\n" + "\n".join(wide)


def test_code_blocks_of_the_readme_fit_the_page() -> None:
    wide = wide_code_lines(ROOT / "README.md")
    assert not wide, f"{len(wide)} code lines over {WIDTH} columns:\n" + "\n".join(wide)
