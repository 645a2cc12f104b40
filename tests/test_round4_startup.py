"""``seqrep --help``, a command's ``--help`` and an option error need no model, so they answer
without importing torch or transformers (5-9 s of start-up before; issue 37, item 19).

Checked by an independent route: a fresh interpreter runs the console script's entry point
on each command line in turn and reports, after each, its exit code and which heavy modules
are in ``sys.modules`` (the first command line to import one is the one named)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("torch", "transformers", "accelerate", "peft", "onnxruntime", "matplotlib")

HELP = [["--help"], [], ["train", "--help"], ["bench", "--help"], ["predict", "--help"],
        ["serve", "--help"], ["distill", "--help"], ["report", "--help"], ["grid", "--help"],
        ["export", "--help"], ["evaluate", "--help"], ["score", "--help"], ["data", "--help"],
        ["models", "--help"]]
OPTION_ERRORS = [["train", "--no-such-option"], ["bench", "--sentences", "many"],
                 ["predict", "run", "--format"], ["serve", "--port", "x"]]

_CHILD = """
import contextlib, io, json, sys
from seqrep.cli.app import main
for argv in json.loads(sys.argv[1]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(argv)
            code = 0
        except SystemExit as ex:
            code = ex.code or 0
    print(json.dumps({"argv": argv, "code": code, "usage": "Usage" in out.getvalue(),
                      "heavy": [m for m in json.loads(sys.argv[2]) if m in sys.modules],
                      "typer": "typer" in sys.modules}))
"""


def test_help_and_option_errors_import_no_heavy_module() -> None:
    done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(HELP + OPTION_ERRORS),
                           json.dumps(HEAVY)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["argv"] for r in results] == HELP + OPTION_ERRORS
    assert all(r["typer"] for r in results)  # the route sees what an import brings in
    for r in results:
        name = "seqrep " + " ".join(r["argv"])
        assert r["heavy"] == [], f"{name} imported {r['heavy']}"
        if r["argv"] in HELP:
            assert r["code"] == 0 and r["usage"], name
        else:
            assert r["code"] == 2, name
