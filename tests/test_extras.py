"""A command whose extra is missing is one line naming the extra, exit 2 (seqrep.core.extras)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from seqrep.core.extras import EXTRAS, require
from seqrep.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def test_every_extra_in_the_table_is_declared_in_pyproject() -> None:
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert set(EXTRAS) <= set(declared)


def test_require_names_the_extra_and_the_missing_module(monkeypatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "scipy" else real(name, *a))
    with pytest.raises(ConfigError) as err:
        require("lab", "seqrep report")
    assert str(err.value) == ("seqrep report needs the 'lab' extra (scipy not installed): "
                              "pip install 'seqrep-labeler[lab]'")
    require("serve", "seqrep serve")  # installed here: no error


# a child interpreter in which the lab extra's modules cannot be imported, as in an
# environment that installed only the core
_BLOCK = textwrap.dedent("""
    import sys
    # None in sys.modules: `import x` raises ImportError and importlib.util.find_spec(x) is
    # None, as where x was never installed
    for name in {blocked!r}:
        sys.modules[name] = None
    from seqrep.cli.app import main
    main({argv!r})
""")


def _run_without(blocked: set[str], argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    code = _BLOCK.format(blocked=blocked, argv=argv)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


@pytest.mark.parametrize("argv", [["report", "store.jsonl"], ["grid", "grid.yaml"]])
def test_lab_commands_without_the_lab_extra_are_one_line(tmp_path, argv) -> None:
    (tmp_path / "store.jsonl").write_text("")
    (tmp_path / "grid.yaml").write_text("models: [x]\n")
    done = _run_without({"matplotlib", "scipy", "yaml"}, argv, tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "'lab' extra" in lines[0] and "seqrep-labeler[lab]" in lines[0], lines


def test_serve_without_the_serve_extra_is_one_line(tmp_path) -> None:
    done = _run_without({"fastapi", "fastapi_offline"}, ["serve", str(tmp_path)], tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "'serve' extra" in lines[0] and "seqrep-labeler[serve]" in lines[0], lines
