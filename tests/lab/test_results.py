from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from seqrep.lab.results import append_record, read_records


def _read_warning(store: Path) -> tuple[list, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = read_records(store)
    return records, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def test_a_writer_killed_mid_character_loses_only_its_own_record(tmp_path: Path) -> None:
    store = tmp_path / "r.jsonl"
    append_record(store, {"run_id": "a", "name": "Zürich"})
    torn = (json.dumps({"run_id": "b", "name": "日本語"}, ensure_ascii=False) + "\n").encode()
    cut = torn.index("本".encode()) + 1  # inside the three bytes of 本
    with open(store, "ab") as f:
        f.write(torn[:cut])
    with pytest.raises(UnicodeDecodeError):
        torn[:cut].decode("utf-8")
    append_record(store, {"run_id": "c", "name": "café"})
    append_record(store, {"run_id": "d"})
    records, messages = _read_warning(store)
    assert [r["run_id"] for r in records] == ["a", "c", "d"]
    assert records[1]["name"] == "café"
    assert len(messages) == 1
    assert "1 line" in messages[0] and "line 2" in messages[0]


def test_skipped_lines_are_counted_in_one_warning(tmp_path: Path) -> None:
    store = tmp_path / "r.jsonl"
    store.write_bytes(b'{"a": 1}\n{"b": \xe6\x97\n\n{"c": 3}\nnot json\n\xff\xfe\n[1, 2]\n'
                      b'{"d": 4}\n')
    records, messages = _read_warning(store)
    assert records == [{"a": 1}, {"c": 3}, {"d": 4}]
    assert len(messages) == 1
    assert "4 lines" in messages[0] and "line 2" in messages[0]


def test_a_torn_final_line_without_newline_is_skipped(tmp_path: Path) -> None:
    store = tmp_path / "r.jsonl"
    store.write_bytes('{"a": 1}\n{"b": "Mü'.encode()[:-1])
    records, messages = _read_warning(store)
    assert records == [{"a": 1}]
    assert len(messages) == 1 and "line 2" in messages[0]


def test_a_complete_final_line_without_newline_is_kept(tmp_path: Path) -> None:
    store = tmp_path / "r.jsonl"
    store.write_bytes(b'{"a": 1}\r\n{"b": 2}')
    records, messages = _read_warning(store)
    assert records == [{"a": 1}, {"b": 2}] and messages == []


@pytest.mark.parametrize("sep", ["\u2028", "\u0085", "\u2029", "\r", "\r\n", "\x0b", "\x0c",
                                 "\x1c", "\x1d", "\x1e"])
def test_line_separators_inside_strings_round_trip(tmp_path: Path, sep: str) -> None:
    store = tmp_path / "r.jsonl"
    written = [{"run_id": i, "text": f"one{sep}two{sep}", "label": sep} for i in range(3)]
    for record in written:
        append_record(store, record)
    records, messages = _read_warning(store)
    assert records == written and messages == []


def test_all_separators_in_one_store(tmp_path: Path) -> None:
    store = tmp_path / "r.jsonl"
    written = [{"text": "a\u2028b"}, {"text": "c\u0085d"}, {"text": "e\u2029f\rg"}]
    for record in written:
        append_record(store, record)
    assert read_records(store) == written


def test_append_after_a_torn_tail_starts_on_a_fresh_line(tmp_path: Path) -> None:
    store = tmp_path / "r.jsonl"
    store.write_bytes('{"a": 1}\n{"b": "日'.encode()[:-2])
    append_record(store, {"c": 3})
    data = store.read_bytes()
    assert data.endswith(b'\n{"c": 3}\n')
    assert data.split(b"\n")[-2] == b'{"c": 3}'
    records, messages = _read_warning(store)
    assert records == [{"a": 1}, {"c": 3}] and len(messages) == 1


def test_a_missing_or_empty_store_has_no_records(tmp_path: Path) -> None:
    assert read_records(tmp_path / "none.jsonl") == []
    (tmp_path / "empty.jsonl").write_bytes(b"")
    assert read_records(tmp_path / "empty.jsonl") == []
