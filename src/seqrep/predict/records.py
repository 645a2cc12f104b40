"""Prediction records as parquet: the columns of ``seqrep predict``'s JSON lines.

A record is ``{"text", "sentences": [{"start", "end", "tags", "words"}], "spans": [{"start",
"end", "label", "score", "text", "words"}]}`` (:func:`seqrep.predict.tagger.predict_text`).
``--output OUT.parquet`` writes the same records with this fixed schema (so an empty list has
the same type as a full one, and every file of every run can be concatenated), one row per input
text, in input order; reading a row back gives the JSON record exactly.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

ROWS_PER_GROUP = 4096  # rows per parquet row group: memory stays bounded while converting


def schema() -> Any:
    """The Arrow schema of a prediction record."""
    import pyarrow as pa

    sentence = pa.struct([("start", pa.int64()), ("end", pa.int64()),
                          ("tags", pa.list_(pa.string())), ("words", pa.list_(pa.string()))])
    span = pa.struct([("start", pa.int64()), ("end", pa.int64()), ("label", pa.string()),
                      ("score", pa.float64()), ("text", pa.string()),
                      ("words", pa.list_(pa.int64()))])  # the span's words: [first, end)
    return pa.schema([("text", pa.string()), ("sentences", pa.list_(sentence)),
                      ("spans", pa.list_(span))])


def jsonl_to_parquet(source: Path, output: Path) -> None:
    """Write the JSON-line records of ``source`` to ``output`` as parquet: into a fresh
    temporary file beside it first (created exclusively, never a link or a user's file),
    synced, then renamed onto ``output``, so ``output`` is either the old file or the whole
    new one."""
    from seqrep.core.extras import require

    require("datasets", "a .parquet output", ("pyarrow",))
    import pyarrow as pa
    import pyarrow.parquet as pq

    from seqrep.files import owner

    output = Path(output)
    tmp = owner.temporary(output)
    kind = schema()
    rows: list[dict[str, Any]] = []
    try:
        with pq.ParquetWriter(tmp, kind) as writer, open(source, encoding="utf-8") as f:
            for line in f:
                rows.append(json.loads(line))
                if len(rows) >= ROWS_PER_GROUP:
                    writer.write_table(pa.Table.from_pylist(rows, schema=kind))
                    rows = []
            if rows:
                writer.write_table(pa.Table.from_pylist(rows, schema=kind))
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, output)
    finally:
        tmp.unlink(missing_ok=True)


def read_parquet_records(path: Path) -> list[dict[str, Any]]:
    """The records of a prediction parquet file, as :func:`seqrep.predict.tagger.predict_text`
    returns them."""
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


def is_prediction_parquet(path: Path) -> bool:
    """Whether ``path`` is a parquet file of prediction records (a finished output that
    ``--output`` may replace)."""
    try:
        import pyarrow.parquet as pq

        return pq.read_schema(path).names == ["text", "sentences", "spans"]
    except Exception:  # noqa: BLE001 - any file pyarrow cannot read is no such output
        return False
