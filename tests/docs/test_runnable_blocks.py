"""The code blocks the pages mark runnable run, read from the pages themselves.

A fenced block right after the line ``<!-- runnable -->`` runs (docs/contributing.md says how):
``python`` blocks in one namespace per page, ``bash`` blocks as ``seqrep`` commands through the
console script's entry point, in process. The blocks of a page run in order in one fresh folder
holding every block with ``title="PATH"`` of any page as the file PATH, a tiny trained run as
``runs/demo`` and a ``SEQREP_DATA`` whose ``conll2003`` is a few sentences; the packaged models'
names are mapped to tiny random models of their families. A failing block fails its page's
test, naming the page and the block's number.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest
from inprocess import seqrep

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FIXTURE = ROOT / "tests" / "fixtures" / "data" / "tiny.conll"
MARKER = "<!-- runnable -->"
FENCE = re.compile(r"^(`{3,})\s*([\w-]*)(.*)$")
TITLE = re.compile(r'title="([^"]+)"')
# packaged model name -> (tiny family, layers): as deep as the real model, so exit layers hold
MODELS = {"smollm2-135m": ("llama", 30), "gemma3-270m": ("gemma3", 18),
          "minilm-l6": ("bert", 6)}


@dataclass
class Block:
    """One fenced block of a page: its language, its title (a file it stands for), whether it
    is marked runnable, its text, and its number among the page's runnable blocks."""

    lang: str
    title: str | None
    runnable: bool
    text: str
    number: int = 0


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a Markdown page, in order."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found, i, count = [], 0, 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, lang, rest = match.groups()
        runnable = i > 0 and lines[i - 1].strip() == MARKER
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == fence), None)
        assert end is not None, f"{page.relative_to(ROOT)}: a block opened on line {i + 1} " \
                                f"is never closed"
        title = TITLE.search(rest)
        block = Block(lang, title and title.group(1), runnable, "\n".join(lines[i + 1:end]))
        if runnable:
            count += 1
            block.number = count
        found.append(block)
        i = end + 1
    return found


PAGES = sorted(DOCS.rglob("*.md"))
RUNNABLE = [page for page in PAGES if any(b.runnable for b in blocks(page))]


def shell_commands(text: str) -> list[list[str]]:
    """A bash block's commands: ``\\`` continues a line, ``#`` starts a comment."""
    joined = re.sub(r"\\\n", " ", text)
    return [words for words in (shlex.split(line, comments=True)
                                for line in joined.splitlines()) if words]


@pytest.fixture(scope="module")
def workspace(tiny, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """What every page's blocks find: the tiny models, the data folder and runs/demo."""
    models = {name: tiny(family, layers) for name, (family, layers) in MODELS.items()}
    root = tmp_path_factory.mktemp("docs-blocks")
    data = root / "data" / "conll2003"
    data.mkdir(parents=True)
    for name in ("eng.train", "eng.testa", "eng.testb"):
        shutil.copy(FIXTURE, data / name)
    files = {}
    for page in PAGES:
        for block in blocks(page):
            if block.title:
                earlier = files.setdefault(block.title, (page, block.text))
                assert earlier[1] == block.text, \
                    f"{block.title} differs in {earlier[0].name} and {page.name}"
    demo = root / "runs" / "demo"
    ran = seqrep("train", "--model", models["smollm2-135m"], "--train", str(FIXTURE),
                 "--validation", str(FIXTURE), "--test", str(FIXTURE), "-r", "1",
                 "--exit-layer", "10", "--epochs", "1", "--threads", "1", "-q",
                 "-o", str(demo))
    assert ran.returncode == 0, ran.stderr
    return {"models": models, "data": root / "data", "demo": demo, "root": root,
            "files": {path: text for path, (_, text) in files.items()}}


def _map_models(text: str, models: dict[str, str]) -> str:
    for name, folder in models.items():
        text = re.sub(rf"(?<![\w/-]){re.escape(name)}(?![\w-])", folder, text)
    return text


@pytest.mark.parametrize("page", RUNNABLE, ids=[str(p.relative_to(DOCS)) for p in RUNNABLE])
def test_the_runnable_blocks_of_the_page_run(page: Path, workspace: dict,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    name = page.relative_to(ROOT)
    folder = workspace["root"] / "pages" / str(page.relative_to(DOCS)).replace(os.sep, "-")
    folder.mkdir(parents=True)
    for path, text in workspace["files"].items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text + "\n", encoding="utf-8")
    (folder / "runs").mkdir()
    (folder / "runs" / "demo").symlink_to(workspace["demo"], target_is_directory=True)
    monkeypatch.chdir(folder)
    monkeypatch.setenv("SEQREP_DATA", str(workspace["data"]))
    namespace: dict = {"__name__": "__docs__"}
    for block in (b for b in blocks(page) if b.runnable):
        where = f"{name}, runnable block {block.number}"
        text = _map_models(block.text, workspace["models"])
        if block.lang == "python":
            try:
                exec(compile(text, where, "exec"), namespace)  # noqa: S102 - the page's code
            except Exception:  # noqa: BLE001 - any failure of the block fails the test
                pytest.fail(f"{where} failed:\n{traceback.format_exc(limit=-3)}")
        elif block.lang in ("bash", "sh", "shell"):
            for words in shell_commands(text):
                assert words[0] == "seqrep", \
                    f"{where}: only seqrep commands run here, not {words[0]!r}"
                ran = seqrep(*words[1:])
                assert ran.returncode == 0, f"{where} failed (exit {ran.returncode}): " \
                    f"{shlex.join(words)}\n{ran.stdout[-2000:]}\n{ran.stderr[-3000:]}"
        else:
            pytest.fail(f"{where}: a runnable block is python or bash, not {block.lang!r}")
