"""The README's Python snippets run as written (issue 37, item 16).

The code blocks are read from README.md's *Quickstart* section at test time, never copied
here, and run in order in one namespace (the second loads the run the first trained). Only
the model name is substituted: the packaged ``smollm2-135m`` becomes a tiny random llama with
20 layers, and ``runs/demo`` is a labeler saved there from it first. Each statement runs in
turn; on a machine without CUDA the snippet's ``lab.place("cuda", ...)`` cannot run, and must
fail as one SeqrepError naming the parameter (``device='cuda'``), after which the rest runs
on the labeler as it was.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import torch

from seqrep.errors import SeqrepError
from seqrep.model.labeler import SequenceLabeler

README = Path(__file__).resolve().parents[1] / "README.md"
PACKAGED_NAME = "smollm2-135m"


def python_snippets() -> list[str]:
    """The ```python blocks of README.md's ``## Quickstart`` section."""
    text = README.read_text(encoding="utf-8")
    section = re.search(r"^## Quickstart\n(.*?)(?=^## )", text, re.S | re.M)
    assert section, "README.md has no '## Quickstart' section"
    blocks = re.findall(r"^```python\n(.*?)^```", section.group(1), re.S | re.M)
    assert blocks, "README.md's Quickstart section has no python code block"
    return blocks


def test_the_readme_python_snippets_run(tiny, tmp_path: Path, monkeypatch) -> None:
    model = tiny("llama", 20)
    monkeypatch.chdir(tmp_path)
    SequenceLabeler.from_model(model, labels=["O", "B-PER", "I-PER"],
                               finetune="frozen").save_pretrained(Path("runs/demo"))
    refused = []
    namespace: dict = {}
    for code in python_snippets():
        assert PACKAGED_NAME in code or "from_model" not in code
        code = code.replace(f'"{PACKAGED_NAME}"', repr(model))
        for node in ast.parse(code).body:
            line = ast.get_source_segment(code, node)
            try:
                exec(compile(ast.Module([node], []), "README.md", "exec"), namespace)  # noqa: S102
            except SeqrepError as err:
                if torch.cuda.is_available() or '"cuda"' not in line:
                    raise
                message = str(err)
                assert message.startswith("device='cuda':") and "--device" not in message, \
                    message
                refused.append(line)
    assert namespace["metrics"]["status"] == "finished"
    assert namespace["lab"].placement.device.type in ("cpu", "cuda")
    if not torch.cuda.is_available():
        assert len(refused) == 1 and ".place(" in refused[0], refused


@pytest.mark.parametrize("snippet", python_snippets())
def test_every_snippet_parses(snippet: str) -> None:
    ast.parse(snippet)
