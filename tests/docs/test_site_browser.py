"""The built site in headless Chromium, served from 127.0.0.1 with nothing else reachable: the
home page and a reference page render, and material's client-side search finds "exit layer"
(its index and worker are files of the site, so search works offline)."""

from __future__ import annotations

import functools
import json
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import chromium as browser  # noqa: E402
import pytest

pytestmark = pytest.mark.skipif(browser.CHROMIUM is None, reason="no chromium installed "
                                "(apt-get install chromium, or set SEQREP_CHROMIUM)")


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # no access log on stderr
        pass


@pytest.fixture(scope="module")
def served(site: Path):
    """The site over HTTP on 127.0.0.1 and a free port, in a thread."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet,
                                                                      directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join(10)


@pytest.fixture(scope="module")
def chrome(tmp_path_factory: pytest.TempPathFactory):
    driver = browser.Chrome(browser.CHROMIUM, tmp_path_factory.mktemp("chromium-docs"))
    yield driver
    driver.close()


def _open(chrome, url: str) -> None:  # noqa: ANN001 - serve.test_browser.Chrome
    chrome.call("Page.navigate", session=True, url=url)
    chrome.wait("document.readyState === 'complete' && !!document.querySelector('.md-content')")


def test_the_home_page_and_a_reference_page_render(chrome, served: str) -> None:  # noqa: ANN001
    _open(chrome, served + "/")
    title = chrome.js("document.querySelector('.md-content h1').firstChild.textContent")
    assert title.strip() == "seqrep"
    # the theme's stylesheet applied: the header is laid out, not unstyled text
    assert chrome.js("getComputedStyle(document.querySelector('.md-header')).position") \
        in ("sticky", "fixed")
    _open(chrome, served + "/reference/cli/")
    heading = chrome.js("document.getElementById('seqrep-train').textContent")
    assert "seqrep train" in heading
    rows = chrome.js("document.querySelectorAll('.md-content table tr').length")
    assert rows > 50, f"the CLI reference renders only {rows} table rows"


def test_the_search_box_finds_exit_layer_offline(chrome, served: str) -> None:  # noqa: ANN001
    _open(chrome, served + "/")
    chrome.click("label.md-search__icon, .md-search__input, label[for='__search']")
    chrome.js("document.querySelector('.md-search__input').focus()")
    chrome.call("Input.insertText", session=True, text="exit layer")
    chrome.wait("document.querySelectorAll('.md-search-result__item').length > 0", timeout=60)
    titles = chrome.js("Array.from(document.querySelectorAll('.md-search-result__item'))"
                       ".map(e => e.textContent)")
    assert any("exit layer" in t.lower() for t in titles), json.dumps(titles)[:500]
    assert any("The exit layer" in t for t in titles), "the concepts page is not found"
