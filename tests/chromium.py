"""A headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
JSON messages ending in NUL on file descriptors 3 and 4), so nothing beyond Debian's chromium is
needed; shared by the web page's and the documentation site's browser tests."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

CHROMIUM = next((p for p in (os.environ.get("SEQREP_CHROMIUM"), "/usr/bin/chromium",
                             shutil.which("chromium"), shutil.which("chromium-browser"))
                 if p and os.path.exists(p)), None)


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
