"""Hugging Face data on disk, read as files anyone may have made: parquet and arrow files, and
folders ``save_to_disk`` wrote.

A ``save_to_disk`` folder is checked whole before a file of it is opened
(:func:`seqrep.files.reader.check_folder`: no link out of it, no FIFO, device or socket, a
bounded number of entries), its ``state.json`` and ``dataset_info.json`` are read bounded and
checked here (``_data_files`` may name only plain files of the folder itself), and its arrow
files are read here through :func:`seqrep.files.reader.map_file`; ``datasets`` only builds the
Dataset from the checked parts (its features from ``dataset_info.json``, as
``datasets.load_from_disk`` does). The saved output format (``_format_type``: numpy, torch ...)
is checked but not applied: the rows are read as they are stored.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from seqrep.data.quote import show
from seqrep.errors import DataError, first_line
from seqrep.files.reader import check_folder, map_file, read_bytes

STATE = "state.json"
INFO = "dataset_info.json"
DICT = "dataset_dict.json"
_JSON_BYTES = {STATE: 1 << 20, DICT: 1 << 20, INFO: 64 << 20}  # info: ClassLabel names
_PLAIN_NAME = re.compile(r"[\w-][\w.-]*")  # a file or split name: no '/', not '.' or '..'


def datasets_module() -> Any:
    """The ``datasets`` module, or one line naming the extra that installs it."""
    from seqrep.core.extras import require

    require("datasets", "reading Hugging Face datasets")
    import datasets

    return datasets


def _limit(rel: str) -> int | None:
    return _JSON_BYTES.get(rel.rsplit("/", 1)[-1])


def check_saved_folder(path: Path) -> list[str]:
    """The files of a ``save_to_disk`` folder (a Dataset's or a DatasetDict's), relative, after
    the folder is checked whole (see the module's docstring); one line naming the entry."""
    return check_folder(path, DataError, limit=_limit)


def read_json_file(path: Path, within: Path, what: str) -> Any:
    """A small JSON file of a checked folder, read bounded, parsed, or one line."""
    raw = read_bytes(path, _JSON_BYTES[path.name], DataError, within=within, what=what)
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise DataError(path, f"not {what} ({first_line(err)})") from None


def table_of(path: Path, kind: str, within: Path | None = None) -> Any:
    """A parquet or arrow file as a pyarrow Table: an arrow file in the IPC file format or,
    as ``save_to_disk`` writes it, the stream format. Mapped, not opened by pyarrow, so a
    FIFO or a device is refused (a link leaves ``within`` only where it is not given)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = pa.py_buffer(map_file(path, DataError, within=within, what=f"a {kind} file"))
    try:
        if kind == "parquet":
            return pq.read_table(pa.BufferReader(data))
        try:
            return pa.ipc.open_file(pa.BufferReader(data)).read_all()
        except pa.ArrowInvalid:
            return pa.ipc.open_stream(pa.BufferReader(data)).read_all()
    except (OSError, ValueError, pa.ArrowException) as err:
        raise DataError(path, f"not a readable {kind} file ({first_line(err)})") from None


def _bad(path: Path, field: str, value: Any, expected: str) -> DataError:
    return DataError(path / STATE, f"{field} is {show(value)}; expected {expected}")


def _check_state(path: Path, state: Any, files: list[str]) -> list[str]:
    """The data files ``state.json`` names (plain names of files in ``path``), its other
    fields checked by type."""
    if not isinstance(state, dict):
        raise DataError(path / STATE, f"holds {show(state)}; expected a JSON object")
    data_files = state.get("_data_files")
    if not (isinstance(data_files, list) and data_files):
        raise _bad(path, "_data_files", data_files, 'a list of {"filename": NAME}, at least one')
    names = []
    for entry in data_files:
        name = entry.get("filename") if isinstance(entry, dict) else None
        if not (isinstance(name, str) and _PLAIN_NAME.fullmatch(name) and name in files):
            raise _bad(path, "_data_files", entry, 'a {"filename": NAME} naming a file of '
                                                   "this folder (no path)")
        names.append(name)
    kinds = {"_fingerprint": (str,), "_format_type": (str, type(None)),
             "_format_kwargs": (dict,), "_output_all_columns": (bool,),
             "_split": (str, type(None)), "_format_columns": (list, type(None))}
    for field, types in kinds.items():
        if field in state and not isinstance(state[field], types):
            wanted = " or ".join("null" if t is type(None) else
                                 {str: "a string", dict: "an object", bool: "true or false",
                                  list: "a list of column names"}[t] for t in types)
            raise _bad(path, field, state[field], wanted)
    if state.get("_format_type") == "custom":  # a transform function: no folder holds one
        raise _bad(path, "_format_type", "custom", "null or a format name (numpy, torch, "
                                                   "pandas, arrow ...)")
    columns = state.get("_format_columns") or []
    if not all(isinstance(c, str) for c in columns):
        raise _bad(path, "_format_columns", columns, "a list of column names")
    return names


def read_saved_dataset(path: Path) -> Any:
    """The ``datasets.Dataset`` a ``save_to_disk`` folder holds, read as the module's docstring
    says; every refusal one line naming the file and the field."""
    datasets = datasets_module()
    import pyarrow as pa

    files = check_saved_folder(path)
    state = read_json_file(path / STATE, path, "a save_to_disk state (state.json)")
    names = _check_state(path, state, files)
    info = read_json_file(path / INFO, path, "a save_to_disk dataset_info.json")
    if not isinstance(info, dict):
        raise DataError(path / INFO, f"holds {show(info)}; expected a JSON object")
    tables = [table_of(path / name, "arrow", within=path) for name in names]
    try:
        table = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
    except pa.ArrowException as err:
        raise DataError(path / names[0], f"the files of _data_files have different columns "
                                         f"({first_line(err)}); expected one schema") from None
    missing = [c for c in state.get("_format_columns") or [] if c not in table.column_names]
    if missing:
        raise _bad(path, "_format_columns", missing[0], "names of the dataset's columns "
                                                        f"({', '.join(table.column_names)})")
    try:
        from datasets.table import InMemoryTable

        fingerprint = state.get("_fingerprint")  # else datasets hashes all the rows
        return datasets.Dataset(InMemoryTable(table), info=datasets.DatasetInfo.from_dict(info),
                                fingerprint=fingerprint if isinstance(fingerprint, str)
                                else "seqrep-saved")
    except Exception as err:  # noqa: BLE001 - whatever datasets makes of a tampered info
        raise DataError(path / INFO, f"does not describe the arrow files "
                                     f"({type(err).__name__}: {first_line(err)}); expected "
                                     "the features save_to_disk wrote") from None


def saved_splits(path: Path) -> list[str]:
    """The split names of a ``DatasetDict.save_to_disk`` folder, after the folder is checked
    whole; each names a folder of it (read by :func:`read_saved_dataset` when chosen)."""
    files = check_saved_folder(path)
    record = read_json_file(path / DICT, path, "a DatasetDict record")
    splits = record.get("splits") if isinstance(record, dict) else None
    if not (isinstance(splits, list)
            and all(isinstance(s, str) and _PLAIN_NAME.fullmatch(s) for s in splits)):
        raise DataError(path / DICT, f"\"splits\" is {show(splits)}; expected a list of the "
                                     "names of its split folders")
    missing = next((s for s in splits if not any(f.startswith(f"{s}/") for f in files)), None)
    if missing is not None:
        raise DataError(path / DICT, f"split {show(missing)} has no folder of files here; "
                                     "expected one folder per split")
    return splits
