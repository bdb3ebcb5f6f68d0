"""The data directory: created with a marker; foreign and newer directories refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from websift.core.datadir import MARKER, DataDir, atomic_write_bytes
from websift.core.errors import StoreError


def test_create_then_open(tmp_path: Path) -> None:
    data = DataDir.create(tmp_path / "d")
    assert (data.root / MARKER).exists()
    assert DataDir.open(tmp_path / "d").store_path == data.root / "crawl.sqlite3"


def test_missing_directory_says_to_crawl_first(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="run 'websift crawl' first"):
        DataDir.open(tmp_path / "nothing")


def test_foreign_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "holiday.jpg").write_bytes(b"\xff\xd8")
    with pytest.raises(StoreError, match="not a websift data directory"):
        DataDir.create(tmp_path)
    with pytest.raises(StoreError, match="not a websift data directory"):
        DataDir.open(tmp_path)


def test_newer_data_version_is_refused(tmp_path: Path) -> None:
    DataDir.create(tmp_path)
    (tmp_path / MARKER).write_text(json.dumps({"format": "websift-data", "version": 99}))
    with pytest.raises(StoreError, match="newer websift"):
        DataDir.open(tmp_path)


def test_atomic_write_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "file.json"
    atomic_write_bytes(target, b"one")
    atomic_write_bytes(target, b"two")
    assert target.read_bytes() == b"two"
    assert [p.name for p in target.parent.iterdir()] == ["file.json"]
