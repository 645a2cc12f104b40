"""The limits, batching and connections of one server (``seqrep serve``'s own options),
validated here.

The options ``serve`` shares with the other commands (runtime, device, precision, threads)
are :class:`~seqrep.config.InferenceConfig`'s; a shared batch's token budget starts from its
``batch_tokens``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from seqrep.config import InferenceConfig
from seqrep.errors import ConfigError


def _f(default: Any, help: str) -> Any:
    return dataclasses.field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class ServeSettings:
    """Limits and batching of one server (the ``seqrep serve`` options)."""

    max_batch_tokens: int = _f(InferenceConfig.batch_tokens, "close a shared batch before it "
                               "passes this many padded tokens")
    max_wait_ms: float = _f(10.0, "wait at most this long for more requests to join a batch")
    max_text_chars: int = _f(10_000, "longest text accepted (413 past it)")
    max_texts: int = _f(64, "most texts in one request (413)")
    max_queue: int = _f(256, "most requests waiting for a batch (503 + Retry-After past it)")
    retry_after_s: int = _f(1, "seconds a 503 asks the client to wait (Retry-After)")
    request_timeout: float = _f(20.0, "seconds a client has to send a whole request before "
                                      "its connection is closed")
    max_connections: int = _f(1000, "open connections past this get 503")

    def __post_init__(self) -> None:
        for name in ("max_batch_tokens", "max_texts", "max_text_chars", "max_queue",
                     "retry_after_s", "max_connections"):
            if getattr(self, name) < 1:
                raise ConfigError(f"--{name.replace('_', '-')} {getattr(self, name)}; "
                                  f"expected 1 or more")
        if self.max_wait_ms < 0:
            raise ConfigError(f"--max-wait-ms {self.max_wait_ms}; expected 0 or more")
        if not self.request_timeout > 0:
            raise ConfigError(f"--request-timeout {self.request_timeout}; expected more than 0")

    @property
    def max_body_bytes(self) -> int:
        """Bytes a request body may have: room for the largest request, even with every
        character written as a JSON escape pair (12 bytes), plus 64 KiB."""
        return self.max_texts * self.max_text_chars * 12 + 65_536
