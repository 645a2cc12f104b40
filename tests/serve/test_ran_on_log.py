"""`seqrep serve` says what runs the model once it is loaded (issue 27): the same line as
evaluate and predict print, in the server's log."""

from __future__ import annotations

import asyncio
import logging

from seqrep.serve.app import create_app


def test_load_logs_what_runs_the_model(labeler_dir, serving, caplog) -> None:
    caplog.set_level(logging.INFO, logger="seqrep.serve")

    async def main() -> None:
        async with serving(create_app(labeler_dir)) as c:
            assert (await c.get("/health")).status_code == 200

    asyncio.run(main())
    loaded = [r.getMessage() for r in caplog.records if "loaded" in r.getMessage()]
    assert loaded and loaded[0].endswith("; running on cpu, PyTorch, fp32"), loaded
