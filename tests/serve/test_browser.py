"""The web page in a real headless Chromium against a real uvicorn server on 127.0.0.1.

Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: JSON
messages ending in NUL on file descriptors 3 and 4), so nothing beyond Debian's chromium is
needed: the test types into the textarea, clicks Run (a real mouse event at the button) or
presses Ctrl+Enter, and reads the highlighted spans back from the DOM.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed")
pytest.importorskip("uvicorn", reason="the serve extra is not installed")
httpx = pytest.importorskip("httpx", reason="the serve extra is not installed")

CHROMIUM = next((p for p in (os.environ.get("SEQREP_CHROMIUM"), "/usr/bin/chromium",
                             shutil.which("chromium"), shutil.which("chromium-browser"))
                 if p and os.path.exists(p)), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed "
                                "(apt-get install chromium, or set SEQREP_CHROMIUM)")


class Chrome:
    """A headless Chromium and one page, over the DevTools protocol on a pipe."""

    def __init__(self, binary: str, profile: Path, width: int = 1280, height: int = 860) -> None:
        cmd_r, self._cmd_w = os.pipe()  # we write commands, chromium reads them on fd 3
        self._evt_r, evt_w = os.pipe()  # chromium writes answers and events on fd 4
        # out of the way of 3 and 4, so the child's dup2 cannot clobber one with the other
        high_r, high_w = fcntl.fcntl(cmd_r, fcntl.F_DUPFD, 10), fcntl.fcntl(evt_w,
                                                                          fcntl.F_DUPFD, 10)
        os.close(cmd_r)
        os.close(evt_w)

        def fds() -> None:
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-extensions", "--disable-default-apps", "--no-first-run",
             "--no-default-browser-check", "--mute-audio", f"--window-size={width},{height}",
             f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=fds, pass_fds=(3, 4, high_r, high_w))
        os.close(high_r)
        os.close(high_w)
        self._next_id = 0
        self._answers: dict[int, dict] = {}
        self._cv = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target,
                                 flatten=True)["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Runtime.enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width,
                  height=height, deviceScaleFactor=1, mobile=False)

    def _read(self) -> None:
        buf = b""
        while True:
            chunk = os.read(self._evt_r, 1 << 16)
            if not chunk:
                break
            buf += chunk
            *messages, buf = buf.split(b"\0")
            for raw in messages:
                msg = json.loads(raw)
                if "id" in msg:
                    with self._cv:
                        self._answers[msg["id"]] = msg
                        self._cv.notify_all()

    def call(self, method: str, session: bool = False, timeout: float = 30,
             **params: Any) -> dict:
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        with self._cv:
            if not self._cv.wait_for(lambda: msg["id"] in self._answers, timeout):
                raise TimeoutError(f"chromium did not answer {method}")
            answer = self._answers.pop(msg["id"])
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer.get("result", {})

    def js(self, expression: str) -> Any:
        out = self.call("Runtime.evaluate", session=True, expression=expression,
                        returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in out:
            raise RuntimeError(f"{expression}: {out['exceptionDetails']}")
        return out["result"].get("value")

    def wait(self, expression: str, timeout: float = 60) -> Any:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            value = self.js(expression)
            if value:
                return value
            time.sleep(0.05)
        raise TimeoutError(f"never true: {expression}")

    def goto(self, url: str) -> None:
        self.call("Page.navigate", session=True, url=url)
        self.wait("document.readyState === 'complete' && !!document.getElementById('run')")

    def click(self, selector: str) -> None:
        """A real left click at the element's centre (mouse moved, pressed, released)."""
        box = self.js(f"(() => {{ const r = document.querySelector({json.dumps(selector)})"
                      f".getBoundingClientRect(); return [r.x + r.width / 2, "
                      f"r.y + r.height / 2]; }})()")
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", session=True, type=kind, x=box[0], y=box[1],
                      button="left", clickCount=1)

    def type_into(self, selector: str, text: str) -> None:
        """Focus the field, select what it holds and type ``text`` over it."""
        self.click(selector)
        self.js(f"document.querySelector({json.dumps(selector)}).select()")
        self.call("Input.insertText", session=True, text=text)

    def ctrl_enter(self) -> None:
        for kind in ("rawKeyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", session=True, type=kind, modifiers=2,
                      key="Enter", code="Enter", windowsVirtualKeyCode=13,
                      nativeVirtualKeyCode=13)

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", session=True, format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=5)
        except (TimeoutError, RuntimeError, OSError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        os.close(self._cmd_w)


@pytest.fixture(scope="module")
def server(labeler):
    """A real uvicorn server on 127.0.0.1 and a free port, in a thread."""
    import uvicorn

    from seqrep.serve.app import ServeSettings, create_app
    from seqrep.serve.local import free_port, wait_healthy

    app = create_app(labeler=labeler, settings=ServeSettings(max_text_chars=2000))
    port = free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                        lifespan="on"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    if not wait_healthy(base, 60, interval=0.05):
        raise TimeoutError("server did not start")
    yield base
    srv.should_exit = True
    thread.join(30)


@pytest.fixture(scope="module")
def chrome(tmp_path_factory):
    browser = Chrome(CHROMIUM, tmp_path_factory.mktemp("chromium-profile"))
    yield browser
    browser.close()


MARKS = """Array.from(document.querySelectorAll('#output mark.entity')).map(m => ({
  start: Number(m.dataset.start), end: Number(m.dataset.end), label: m.dataset.label,
  text: m.querySelector('.entity-text').textContent, tag: m.querySelector('.entity-label')
  .textContent, title: m.title, colour: m.style.getPropertyValue('--c')}))"""


def _check_page(chrome: Chrome, base: str, text: str) -> list[dict]:
    """The page's marks and JSON equal the API's answer for ``text``."""
    chrome.wait("document.getElementById('status').dataset.state === 'done'")
    api = httpx.post(base + "/v1/label", json={"text": text}, timeout=60).json()
    spans = api["results"][0]["spans"]
    marks = chrome.js(MARKS)
    assert [(m["start"], m["end"], m["label"], m["text"]) for m in marks] == \
        [(s["start"], s["end"], s["label"], s["text"]) for s in spans]
    for m, s in zip(marks, spans):
        assert m["tag"] == s["label"] and m["title"] == f"{s['label']} · score {s['score']:.4f}"
    colours = {}
    for m in marks:  # one colour per label
        assert colours.setdefault(m["label"], m["colour"]) == m["colour"]
    assert len(set(colours.values())) == len(colours)
    legend = chrome.js("Array.from(document.querySelectorAll('#legend .legend-item'))"
                       ".map(e => e.dataset.label)")
    assert set(colours) <= set(legend)
    assert json.loads(chrome.js("document.getElementById('json').textContent")) == api
    # the page shows the text as sent, marks and all (label tags aside)
    shown = chrome.js("(() => { const o = document.getElementById('output').cloneNode(true);"
                      " o.querySelectorAll('.entity-label').forEach(e => e.remove());"
                      " return o.textContent; })()")
    assert shown == text
    return marks


def test_run_button_highlights_the_api_spans(chrome, server, texts) -> None:
    chrome.goto(server + "/")
    chrome.wait("!document.getElementById('model').textContent.startsWith('loading')")
    text = texts[0]
    chrome.type_into("#input", text)
    assert chrome.js("document.getElementById('input').value") == text
    chrome.click("#run")
    marks = _check_page(chrome, server, text)
    assert marks, "the tiny model labels something in this text"


def test_ctrl_enter_runs_and_offsets_are_code_points(chrome, server, texts) -> None:
    chrome.goto(server + "/")
    text = texts[2] + "\n" + texts[4]  # emoji, accents, CJK, Cyrillic, a line break
    chrome.type_into("#input", text)
    chrome.ctrl_enter()
    _check_page(chrome, server, text)


def test_text_in_the_url_runs_by_itself(chrome, server, texts, tmp_path) -> None:
    text = texts[1]
    # /v1/model answers slowly, as from a loaded server: the URL's text must be in the form
    # at once, not only after the model's information arrives (CI once read the example text)
    slow = chrome.call("Page.addScriptToEvaluateOnNewDocument", session=True, source=(
        "const realFetch = window.fetch; window.fetch = (url, ...rest) => "
        "String(url).endsWith('/v1/model') ? new Promise(done => setTimeout(() => "
        "done(realFetch(url, ...rest)), 1500)) : realFetch(url, ...rest);"))["identifier"]
    try:
        chrome.goto(server + "/?text=" + urllib.parse.quote(text))
        assert chrome.js("document.getElementById('input').value") == text
    finally:
        chrome.call("Page.removeScriptToEvaluateOnNewDocument", session=True, identifier=slow)
    _check_page(chrome, server, text)
    shot = tmp_path / "page.png"
    chrome.screenshot(shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_error_is_shown_not_thrown(chrome, server) -> None:
    chrome.goto(server + "/")
    chrome.type_into("#input", "x" * 2001)
    chrome.click("#run")
    status = chrome.wait("document.getElementById('status').dataset.state === 'error' && "
                         "document.getElementById('status').textContent")
    assert status.startswith("413") and "max-text-chars" in status
    assert chrome.js("document.getElementById('run').disabled") is False
