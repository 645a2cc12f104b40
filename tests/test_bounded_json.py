"""seqrep.files.atomic.read_json: the one bounded path every JSON record of a folder is read
through."""

from __future__ import annotations

import os

import pytest

from seqrep.errors import ConfigError, ModelError
from seqrep.files.atomic import MAX_JSON_DEPTH, read_json


def test_reads_a_small_record(tmp_path):
    (tmp_path / "a.json").write_text('{"x": [1, 2, {"y": null}]}')
    assert read_json(tmp_path / "a.json", "a record") == {"x": [1, 2, {"y": None}]}


def test_a_link_to_dev_zero_is_refused_before_it_is_read(tmp_path):
    os.symlink("/dev/zero", tmp_path / "metrics.json")
    with pytest.raises(ModelError, match=r"metrics\.json: not a record \(not a regular file\)"):
        read_json(tmp_path / "metrics.json", "a record")


def test_a_fifo_and_a_folder_are_refused(tmp_path):
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "dir.json").mkdir()
    for name in ("fifo.json", "dir.json"):
        with pytest.raises(ModelError, match="not a regular file"):
            read_json(tmp_path / name, "a record")


def test_size_and_depth_caps_and_the_error_class(tmp_path):
    (tmp_path / "big.json").write_text('"' + "x" * 200 + '"')
    with pytest.raises(ConfigError, match="larger than 100 bytes"):
        read_json(tmp_path / "big.json", "a record", ConfigError, max_bytes=100)
    # exactly at the cap is read; one level past it is refused
    ok = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    (tmp_path / "ok.json").write_text(ok)
    assert read_json(tmp_path / "ok.json", "a record") is not None
    deep = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    (tmp_path / "deep.json").write_text(deep)
    with pytest.raises(ModelError, match=f"nested deeper than {MAX_JSON_DEPTH}"):
        read_json(tmp_path / "deep.json", "a record")
    (tmp_path / "deeper.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ModelError, match="not a record"):
        read_json(tmp_path / "deeper.json", "a record")


def test_binary_and_missing(tmp_path):
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ModelError, match=r"bin\.json: not a record"):
        read_json(tmp_path / "bin.json", "a record")
    with pytest.raises(ModelError, match=r"\(missing\)"):
        read_json(tmp_path / "absent.json", "a record")


def test_a_data_error_names_the_file_once(tmp_path):
    from seqrep.errors import DataError

    (tmp_path / "x.json").write_text("{")
    with pytest.raises(DataError) as err:
        read_json(tmp_path / "x.json", "a record", DataError)
    assert str(err.value).startswith(f"{tmp_path / 'x.json'}: not a record (")
