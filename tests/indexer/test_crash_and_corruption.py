"""A killed indexing run leaves the previous index serving; corrupt or foreign files fail with a
clear error."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from testkit.corpus import build_data_dir, page
from websift.core.datadir import DataDir
from websift.indexer.build import build_index
from websift.indexer.errors import IndexCorrupt, IndexMissing
from websift.indexer.manifest import MANIFEST
from websift.indexer.searcher import IndexQuery, Searcher, current_generation
from websift.indexer.settings import KILL_AFTER_BARRELS_ENV

WEBSIFT = str(Path(sys.executable).parent / "websift")
U = "http://c.example"


@pytest.fixture()
def data(tmp_path: Path) -> DataDir:
    pages = {f"{U}/{i}": page(f"Page {i}", f"persimmon number{i} " * 20) for i in range(20)}
    d = build_data_dir(tmp_path / "data", pages)
    build_index(d)
    return d


def test_a_run_killed_while_writing_barrels_leaves_the_old_index_serving(data: DataDir) -> None:
    build_data_dir(data.root, {f"{U}/3": page("Page 3", "durian replaces persimmon")})
    env = {**os.environ, KILL_AFTER_BARRELS_ENV: "1"}
    proc = subprocess.run([WEBSIFT, "index", "--data", str(data.root), "--ram-mb", "1",
                           "--quiet"], env=env, capture_output=True, timeout=120, check=False)
    assert proc.returncode == -signal.SIGKILL
    leftovers = [p.name for p in data.index_dir.iterdir() if p.name.startswith("tmp-")]
    assert leftovers  # the killed run got as far as its barrels
    assert current_generation(data) == 1
    s = Searcher.open(data)
    assert s.generation == 1
    assert [h.url for h in s.search(IndexQuery("durian")).hits] == []
    assert f"{U}/3" in [h.url for h in s.search(IndexQuery("number3")).hits]
    # The next run sweeps the leftovers and indexes the change.
    report = build_index(data)
    assert report.generation == 2
    assert not [p for p in data.index_dir.iterdir() if p.name.startswith("tmp-")]
    assert [h.url for h in Searcher.open(data).search(IndexQuery("durian")).hits] == [f"{U}/3"]
    # The searcher opened before keeps serving its snapshot.
    assert f"{U}/3" in [h.url for h in s.search(IndexQuery("number3")).hits]


def test_missing_index_is_a_clear_error(tmp_path: Path) -> None:
    d = build_data_dir(tmp_path / "empty", {f"{U}/": page("x", "y")})
    with pytest.raises(IndexMissing, match="websift index"):
        Searcher.open(d)
    proc = subprocess.run([WEBSIFT, "search", "y", "--data", str(d.root)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 2
    assert "websift index" in proc.stderr and "Traceback" not in proc.stderr


def test_a_corrupt_postings_file_fails_its_checksum(data: DataDir) -> None:
    seg = next(p for p in data.index_dir.iterdir() if p.name.startswith("seg-"))
    target = seg / "post_docs.bin"
    raw = bytearray(target.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    target.write_bytes(bytes(raw))
    with pytest.raises(IndexCorrupt, match=r"post_docs\.bin fails its checksum"):
        Searcher.open(data)
    target.unlink()
    with pytest.raises(IndexCorrupt, match="missing"):
        Searcher.open(data)


def test_unknown_versions_and_a_damaged_manifest_are_refused(data: DataDir) -> None:
    path = data.index_dir / MANIFEST
    original = path.read_text()
    manifest = json.loads(original)
    manifest["version"] = 99
    path.write_text(json.dumps(manifest))
    with pytest.raises(IndexCorrupt, match="version 99"):
        Searcher.open(data)
    path.write_text(original.replace('"last_seq": ', '"last_seq": 1'))
    with pytest.raises(IndexCorrupt, match="checksum"):
        Searcher.open(data)
    path.write_text("{not json")
    with pytest.raises(IndexCorrupt, match="not valid JSON"):
        Searcher.open(data)
    assert current_generation(data) is None
    # An unreadable manifest does not block indexing: the next run rebuilds the index whole.
    report = build_index(data)
    assert report.mode == "full"
    assert Searcher.open(data).search(IndexQuery("persimmon")).total == 20


def test_an_unknown_segment_version_is_refused(data: DataDir) -> None:
    seg = next(p for p in data.index_dir.iterdir() if p.name.startswith("seg-"))
    meta = json.loads((seg / "meta.json").read_text())
    meta["version"] = 7
    (seg / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(IndexCorrupt, match="checksum"):
        Searcher.open(data)
    with pytest.raises(IndexCorrupt, match="format version 7"):
        Searcher.open(data, verify=False)
