"""``seqrep serve`` as a user runs it: options, a bad folder, a busy port (in-process, through
the console script's entry point), and one real process that answers and stops on SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seqrep.cli.app import app, main
from seqrep.serve.local import free_port, wait_healthy

pytest.importorskip("uvicorn", reason="the serve extra is not installed")
httpx = pytest.importorskip("httpx", reason="the serve extra is not installed")

SEQREP = [sys.executable, "-c", "from seqrep.cli.app import main; main()"]


def test_help_lists_the_options() -> None:
    result = CliRunner().invoke(app, ["serve", "--help"], terminal_width=200)
    assert result.exit_code == 0
    for option in ("--host", "--port", "--max-batch-tokens", "--max-wait-ms",
                   "--max-text-chars", "--max-texts", "--max-queue", "--device", "--precision",
                   "--request-timeout", "--max-connections"):
        assert option in result.output, option


def _main(args: list[str], capsys) -> tuple[int, str]:  # noqa: ANN001
    """Run the console script's entry point in-process: (exit code, stderr)."""
    with pytest.raises(SystemExit) as exit_:
        main(args)
    return exit_.value.code, capsys.readouterr().err


def test_not_a_run_folder_is_one_line(tmp_path: Path, capsys) -> None:
    code, err = _main(["serve", str(tmp_path), "--port", str(free_port())], capsys)
    assert code == 2
    assert err.startswith("error:") and "not a saved labeler" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("option,value,says", [
    ("--max-texts", "0", "--max-texts 0"), ("--max-connections", "0", "--max-connections 0"),
    ("--request-timeout", "0", "--request-timeout 0"), ("--max-wait-ms", "-1", "--max-wait-ms -1"),
    ("--device", "tpu", "--device 'tpu'"),
    ("--precision", "fp64", "--precision 'fp64'"), ("--runtime", "tpu", "--runtime 'tpu'")])
def test_bad_option_value_is_one_line(labeler_dir: Path, capsys, monkeypatch, option: str,
                                      value: str, says: str) -> None:
    import seqrep.serve.app

    monkeypatch.setattr(seqrep.serve.app, "create_app", _never)
    code, err = _main(["serve", str(labeler_dir), "--port", str(free_port()), option, value],
                      capsys)
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err


def _never(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
    raise AssertionError("the app was built (and its model would load) after a user error")


def test_busy_port_is_one_line_before_the_model_loads(labeler_dir: Path, capsys,
                                                      monkeypatch) -> None:
    import socket

    import seqrep.serve.app

    monkeypatch.setattr(seqrep.serve.app, "create_app", _never)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, err = _main(["serve", str(labeler_dir), "--port", str(port)], capsys)
    assert code == 2, err
    assert err == f"error: --port {port}: cannot listen on 127.0.0.1:{port} (already in " \
                  f"use); choose another --port or stop what uses it\n"


def test_device_and_precision_reach_the_model(labeler_dir: Path, serving) -> None:
    import asyncio

    from seqrep.serve.app import create_app

    async def main() -> dict:
        async with serving(create_app(labeler_dir, device="cpu", precision="bf16")) as c:
            return (await c.get("/v1/model")).json()

    info = asyncio.run(main())
    assert (info["device"], info["autocast"]) == ("cpu", "bf16")


def test_serve_passes_device_and_precision_to_the_app(labeler_dir: Path, capsys,
                                                     monkeypatch) -> None:
    """`seqrep serve --device cpu --precision fp32` hands both to the app it builds (on a CPU
    machine `auto` would give the same placement, so the arguments themselves are checked)."""
    import seqrep.serve.app
    from seqrep.errors import ConfigError

    seen: dict = {}

    def record(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        seen.update(kwargs)
        raise ConfigError("recorded")

    monkeypatch.setattr(seqrep.serve.app, "create_app", record)
    code, err = _main(["serve", str(labeler_dir), "--port", str(free_port()), "--device", "cpu",
                       "--precision", "fp32"], capsys)
    assert code == 2 and "recorded" in err
    assert (seen["inference"].device, seen["inference"].precision) == ("cpu", "fp32")


def test_console_script_serves_and_stops_on_sigterm(labeler_dir: Path, texts) -> None:
    """One real process (the console script's way in): it answers, and SIGTERM stops it
    cleanly. That a shutdown finishes the request being computed is tested without timing in
    test_server.py."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(SEQREP + ["serve", str(labeler_dir), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        if not wait_healthy(base, 120, alive=lambda: proc.poll() is None):
            proc.kill()
            raise AssertionError(f"server did not start:\n{proc.communicate()[0]}")
        r = httpx.post(base + "/v1/label", json={"text": texts[0]}, timeout=60)
        assert r.status_code == 200 and r.json()["results"][0]["spans"]
        proc.send_signal(signal.SIGTERM)
        # uvicorn exits by the signal it got
        assert proc.wait(60) in (0, -signal.SIGTERM)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    log = proc.stdout.read()
    assert "Traceback" not in log and "Finished server process" in log
