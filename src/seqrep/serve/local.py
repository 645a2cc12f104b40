"""Starting a server on this machine and waiting for it: a free loopback port, and polling
``/health`` until the model is loaded (used by the load test and the server's tests)."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on at ``host`` now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_healthy(base: str, timeout: float, alive: Callable[[], bool] = lambda: True,
                 interval: float = 0.1) -> bool:
    """Poll ``base + "/health"`` until it answers 200 (True), or until ``timeout`` seconds
    pass or ``alive()`` turns false (False: the caller reports why)."""
    import httpx

    end = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(base + "/health", timeout=2).status_code == 200:
                return True
        except httpx.TransportError:
            pass
        if not alive() or time.monotonic() > end:
            return False
        time.sleep(interval)
