"""``seqrep serve`` as a user runs it: options, a bad folder, and a real process that answers
and, on SIGTERM, finishes the request it is computing before it exits."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seqrep.cli.app import app
from seqrep.serve.local import free_port, wait_healthy

pytest.importorskip("uvicorn", reason="the serve extra is not installed")
httpx = pytest.importorskip("httpx", reason="the serve extra is not installed")

SEQREP = [sys.executable, "-c", "from seqrep.cli.app import main; main()"]


def test_help_lists_the_options() -> None:
    result = CliRunner().invoke(app, ["serve", "--help"], terminal_width=200)
    assert result.exit_code == 0
    for option in ("--host", "--port", "--max-batch-tokens", "--max-wait-ms",
                   "--max-text-chars", "--max-texts", "--max-queue"):
        assert option in result.output, option


def test_not_a_run_folder_is_one_line(tmp_path: Path) -> None:
    out = subprocess.run(SEQREP + ["serve", str(tmp_path)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 2
    assert out.stderr.strip().startswith("error:") and "not a saved labeler" in out.stderr
    assert "Traceback" not in out.stderr


def test_bad_option_value(labeler_dir: Path) -> None:
    out = subprocess.run(SEQREP + ["serve", str(labeler_dir), "--max-texts", "0"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "--max-texts 0" in out.stderr


def test_serves_and_sigterm_finishes_the_open_request(labeler_dir: Path, texts) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(SEQREP + ["serve", str(labeler_dir), "--port", str(port),
                                      "--max-wait-ms", "0", "--max-batch-tokens", "64"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        if not wait_healthy(base, 120, alive=lambda: proc.poll() is None):
            proc.kill()
            raise AssertionError(f"server did not start:\n{proc.communicate()[0]}")
        r = httpx.post(base + "/v1/label", json={"text": texts[0]}, timeout=60)
        assert r.status_code == 200 and r.json()["results"][0]["spans"]
        # a request of many small batches (64 padded tokens each), then SIGTERM while it runs
        big = {"texts": [f"{i}. " + " ".join(texts) for i in range(48)]}
        answer: dict = {}

        def send() -> None:
            answer["r"] = httpx.post(base + "/v1/label", json=big, timeout=120)
            answer["at"] = time.monotonic()

        sender = threading.Thread(target=send)
        sender.start()
        busy = 'seqrep_requests_in_progress{route="/v1/label"} 1.0'
        while busy not in httpx.get(base + "/metrics").text:  # sent, and being answered
            assert "r" not in answer, "the request was too quick to test a shutdown under way"
            time.sleep(0.005)
        signalled = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        sender.join(120)
        assert answer["r"].status_code == 200 and answer["at"] > signalled
        assert len(answer["r"].json()["results"]) == 48
        # uvicorn exits by the signal it got, once the open requests are answered
        assert proc.wait(60) in (0, -signal.SIGTERM)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    log = proc.stdout.read()
    assert "Traceback" not in log and "Finished server process" in log
