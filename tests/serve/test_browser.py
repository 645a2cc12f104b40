"""The web page in a real headless Chromium against a real uvicorn server on 127.0.0.1.

Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: JSON
messages ending in NUL on file descriptors 3 and 4), so nothing beyond Debian's chromium is
needed: the test types into the textarea, clicks Run (a real mouse event at the button) or
presses Ctrl+Enter, and reads the highlighted spans back from the DOM.
"""

from __future__ import annotations

import json
import threading
import urllib.parse

import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed")
pytest.importorskip("uvicorn", reason="the serve extra is not installed")
httpx = pytest.importorskip("httpx", reason="the serve extra is not installed")

from chromium import CHROMIUM, Chrome  # noqa: E402

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed "
                                "(apt-get install chromium, or set SEQREP_CHROMIUM)")


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
