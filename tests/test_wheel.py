"""The wheel installs into a user's environment without touching its torch, and the core alone
runs seqrep (issue 39: packaging).

The environments are made here: a fresh virtual environment whose site-packages is linked, entry
by entry, to this suite's own (so it holds torch 2.13.0 and the rest, as a user's would, without
downloading anything), minus seqrep itself, and, for the core-only checks, minus every extra's
packages. pip's own ``--report`` says what it would install.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
# top-level names of what the extras install (and their own heavy dependencies); pyyaml stays:
# huggingface_hub, which transformers needs, requires it
EXTRA_MODULES = ("matplotlib", "scipy", "fastapi", "uvicorn", "prometheus",
                 "starlette", "spacy", "thinc", "onnx", "onnxruntime", "onnxscript", "onnx_ir",
                 "bitsandbytes", "gguf", "mkdocs", "mkdocstrings", "pymdown", "griffe")


def _run(*args: str, cwd: Path | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return subprocess.run(list(args), capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=timeout)


def _environment(root: Path, drop: tuple[str, ...] = ()) -> Path:
    """A fresh venv at ``root`` whose site-packages links this one's entries, minus seqrep's
    own and those whose name starts with one of ``drop``; returns its python."""
    made = _run(sys.executable, "-m", "venv", "--without-pip", str(root))
    assert made.returncode == 0, made.stderr
    python = root / "bin" / "python"
    target = Path(_run(str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                       "['purelib'])").stdout.strip())
    ours = Path(sysconfig.get_paths()["purelib"])
    for entry in ours.iterdir():
        low = entry.name.lower()
        if "seqrep" in low or low.startswith(tuple(d.lower() for d in drop)):
            continue
        os.symlink(entry, target / entry.name)
    return python


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """seqrep's wheel, built from a copy of the tracked sources (the checkout stays clean)."""
    src = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "src", src / "src", ignore=shutil.ignore_patterns(
        "__pycache__", "*.egg-info"))
    out = tmp_path_factory.mktemp("dist")
    built = _run(sys.executable, "-m", "build", "--wheel", "--sdist", "--no-isolation",
                 "--outdir", str(out), str(src))
    assert built.returncode == 0, built.stderr[-2000:]
    (whl,) = out.glob("seqrep_labeler-*.whl")  # the distribution's name, not the import's
    return whl


def test_the_wheel_and_sdist_pass_twine_check(wheel: Path) -> None:
    """What the package index would be given: a wheel and an sdist named seqrep-labeler
    (the name ``seqrep`` is another project's there), with metadata twine accepts."""
    pytest.importorskip("twine")
    (sdist,) = wheel.parent.glob("seqrep_labeler-*.tar.gz")
    checked = _run(sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist))
    assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]
    assert checked.stdout.count("PASSED") == 2, checked.stdout


def test_the_wheel_holds_the_web_page(wheel: Path) -> None:
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    for page in ("index.html", "app.js", "style.css"):
        assert f"seqrep/serve/static/{page}" in names


def test_installing_keeps_the_users_torch_and_runs_the_quickstart(wheel, tmp_path, tiny):
    python = _environment(tmp_path / "env")
    pip = [str(python), "-m", "pip"]
    if _run(str(python), "-m", "pip", "--version").returncode != 0:
        pytest.skip("pip is not importable in the linked environment")
    report = tmp_path / "report.json"
    # with an extra, as a user installs it: its packages are there, so nothing more comes
    done = _run(*pip, "install", "--no-index", "--report", str(report), f"{wheel}[serve]")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    installed = [i["metadata"]["name"].lower() for i in json.loads(report.read_text())["install"]]
    # torch (and the rest) neither reinstalled nor upgraded: the ranges accept what the
    # environment holds
    assert installed == ["seqrep-labeler"], installed
    code = (
        "import seqrep, torch\n"
        "from seqrep import predict_text, train_labeler\n"
        "assert 'site-packages' in seqrep.__file__, seqrep.__file__\n"
        "tags = ['B-PER', 'I-PER', 'O', 'O', 'B-LOC', 'O']\n"
        "train = [(['Ada', 'Lovelace', 'flew', 'to', c, '.'], tags) for c in ('Paris', 'Oslo')]\n"
        f"lab, m = train_labeler(train * 4, model={tiny('llama')!r}, exit_layer=2, epochs=1,\n"
        "                        output='runs/quickstart', quiet=True)\n"
        "print(m['status'], torch.__version__, len(predict_text(lab, ['Ada flew to Rome.'])))\n")
    ran = _run(str(python), "-c", code, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-3000:]
    import torch

    assert ran.stdout.split() == ["finished", torch.__version__, "1"]


def test_the_core_alone_runs_help_version_and_predict(tmp_path, tiny):
    from seqrep.model.labeler import SequenceLabeler

    python = _environment(tmp_path / "env", drop=EXTRA_MODULES)
    # seqrep from this checkout's sources, but none of the extras' packages
    (Path(_run(str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"
               ).stdout.strip()) / "seqrep-src.pth").write_text(str(ROOT / "src") + "\n")
    missing = _run(str(python), "-c", "import importlib.util as u; print([m for m in "
                   "('matplotlib', 'scipy', 'fastapi', 'spacy', 'onnxruntime', 'gguf')"
                   " if u.find_spec(m)])")
    assert missing.stdout.strip() == "[]", missing.stdout + missing.stderr
    run = SequenceLabeler.from_model(tiny("llama"), labels=["O", "B-PER", "I-PER"],
                                     finetune="frozen").save_pretrained(tmp_path / "lab")
    seqrep = [str(python), "-m", "seqrep"]
    assert _run(*seqrep, "--help").returncode == 0
    version = _run(*seqrep, "--version")
    assert version.returncode == 0 and version.stdout.strip() == "seqrep 0.1.0"
    predicted = _run(*seqrep, "predict", str(run), "Ada Lovelace wrote it.")
    assert predicted.returncode == 0, predicted.stderr[-2000:]
    assert json.loads(predicted.stdout)["text"] == "Ada Lovelace wrote it."
    refused = _run(*seqrep, "report", str(tmp_path / "store.jsonl"))
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and len(lines) == 1 and "seqrep-labeler[lab]" in lines[0], lines
