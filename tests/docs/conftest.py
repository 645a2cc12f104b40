"""The documentation site, built once per session with ``mkdocs build --strict`` into a
temporary folder, for the tests that read or browse it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def build_site(out: Path) -> subprocess.CompletedProcess:
    """``mkdocs build --strict`` of the repository's site into ``out``, in a subprocess (as
    CI runs it): a broken link, a missing page or a bad API reference exits non-zero."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(out)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built site's folder; the build's failure fails the test with mkdocs' output."""
    for module in ("mkdocs", "material", "mkdocstrings_handlers.python"):
        if importlib.util.find_spec(module.split(".")[0]) is None:
            pytest.skip(f"{module} is not installed (pip install -e '.[docs]')")
    out = tmp_path_factory.mktemp("site")
    start = time.monotonic()
    ran = build_site(out)
    if ran.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed (exit {ran.returncode}) after "
                    f"{time.monotonic() - start:.1f} s:\n{ran.stdout}\n{ran.stderr}")
    return out
