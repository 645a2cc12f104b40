"""docs/results.md is generated: the `seqrep report` command at its top, run on the committed
stores, writes it again byte for byte (so a refactor of the report cannot change a digit)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seqrep.cli.app import app

ROOT = Path(__file__).resolve().parents[2]


def _report_command() -> list[str]:
    text = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    block = text.split("```bash\n", 1)[1].split("```", 1)[0].replace("\\\n", " ")
    (line,) = [x for x in block.splitlines() if x.startswith("seqrep report ")]
    return shlex.split(line)[1:]


@pytest.mark.integration
def test_results_md_regenerates_byte_for_byte(tmp_path: Path, monkeypatch) -> None:
    args = _report_command()
    args[args.index("--out") + 1] = str(tmp_path)
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "results.md").read_bytes() == (ROOT / "docs" / "results.md").read_bytes()
