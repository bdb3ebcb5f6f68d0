"""Merges beside the cuts (indexer/follow_merges.py): a cut published while a merge is written
stays after the merged segment and keeps masking what it replaced; a stop discards the merge
in progress whole; ``follow`` merges without holding cuts back."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from testkit.corpus import build_data_dir, page
from testkit.following import FollowThread
from testkit.waiting import wait_for
from websift.core.datadir import DataDir
from websift.core.process_messages import RemoteError
from websift.indexer.build import build_index, run_once, targets_seq
from websift.indexer.errors import IndexCorrupt, IndexMissing
from websift.indexer.follow import read_status
from websift.indexer.follow_merges import MERGING_PREFIX, BackgroundMerger
from websift.indexer.manifest import Manifest, read_manifest
from websift.indexer.merge_policy import MergePolicy
from websift.indexer.searcher import IndexQuery, Searcher
from websift.store.views import StoreReader

A = "http://a.example"
EAGER = MergePolicy(merge_factor=2, min_size=1)  # every two segments of a level merge
WITHIN = 60.0  # generous: a spawned worker's start and a merge on a loaded 2-core machine


def urls(data: DataDir, q: str) -> list[str] | None:
    """The URLs a fresh Searcher finds (None: no index yet, or it moved on while opening)."""
    try:
        return sorted(h.url for h in Searcher.open(data).search(IndexQuery(q, k=50)).hits)
    except (IndexCorrupt, IndexMissing):
        return None


def cut(data: DataDir, pages: dict[str, str]) -> Manifest:
    """Commit ``pages`` to the store and cut one segment of them, no merges."""
    build_data_dir(data.root, pages)
    with StoreReader.open(data.store_path) as store:
        run_once(data, store, read_manifest(data.index_dir), ram_mb=64,
                 started=time.monotonic(), say=lambda _m: None, procs=1, merge=False)
    return read_manifest(data.index_dir)


def leftovers(data: DataDir) -> list[str]:
    return [p.name for p in data.index_dir.iterdir()
            if p.name.startswith((MERGING_PREFIX, "tmp-"))]


def test_a_cut_published_during_a_merge_stays_after_it_and_masks(tmp_path: Path) -> None:
    data = build_data_dir(tmp_path / "d", {f"{A}/1": page("One", "aardvark old")})
    build_index(data)
    manifest = cut(data, {f"{A}/2": page("Two", "badger")})
    assert len(manifest.segments) == 2
    merger = BackgroundMerger(data.index_dir, 64 << 20, EAGER, nice=0)
    try:
        assert merger.step(manifest) is manifest and merger.busy  # the two segments
        # published while the merge runs (or waits to land): page 1's new version
        manifest = cut(data, {f"{A}/1": page("One", "aardvark new")})
        newest = manifest.segments[-1].name
        assert len(manifest.segments) == 3
        wait_for(lambda: merger.step(read_manifest(data.index_dir)).generation
                 > manifest.generation, "the merge to land", WITHIN)
    finally:
        merger.close()
    landed = read_manifest(data.index_dir)
    assert [s.name for s in landed.segments][-1] == newest  # the cut stays last
    assert landed.segments[0].name.endswith("-merged") and len(landed.segments) == 2
    assert landed.stats["merges"] == 1 and landed.stats["merge_bytes"] > 0
    assert landed.stats["live_docs"] == 2
    assert urls(data, "aardvark") == [f"{A}/1"]
    assert urls(data, "old") == []  # the merged segment's version stays masked
    assert urls(data, "new") == [f"{A}/1"] and urls(data, "badger") == [f"{A}/2"]
    assert {p.name for p in data.index_dir.iterdir() if p.is_dir()} == {
        s.name for s in landed.segments}


def test_a_stop_discards_the_merge_in_progress_whole(tmp_path: Path) -> None:
    data = build_data_dir(tmp_path / "d", {f"{A}/1": page("One", "aardvark")})
    build_index(data)
    manifest = cut(data, {f"{A}/2": page("Two", "badger")})
    merger = BackgroundMerger(data.index_dir, 64 << 20, EAGER, nice=0)
    merger.step(manifest)
    assert merger.busy
    merger.close()  # finished or interrupted: never landed
    assert read_manifest(data.index_dir).generation == manifest.generation
    assert leftovers(data) == []
    assert urls(data, "aardvark badger") == [f"{A}/1", f"{A}/2"]


def test_a_failed_merge_comes_back_as_its_type_and_message(tmp_path: Path) -> None:
    """The worker's error crosses the pipe as JSON (no pickle): a known type is raised as
    itself, with the worker's traceback text on its RemoteError cause."""
    data = build_data_dir(tmp_path / "d", {f"{A}/1": page("One", "aardvark")})
    build_index(data)
    manifest = cut(data, {f"{A}/2": page("Two", "badger")})
    in_the_way = data.index_dir / f"{MERGING_PREFIX}{os.getpid()}-1"  # the merge's directory
    in_the_way.write_text("a file where the merge writes its segment")
    merger = BackgroundMerger(data.index_dir, 64 << 20, EAGER, nice=0)
    merger.step(manifest)
    assert merger.busy
    with pytest.raises(FileExistsError, match=in_the_way.name) as failed:
        merger.close()
    cause = failed.value.__cause__
    assert isinstance(cause, RemoteError) and cause.type_name == "FileExistsError"
    assert str(cause).startswith("the merge worker raised FileExistsError: ")
    assert "Traceback" in cause.remote_traceback and "mkdir" in cause.remote_traceback
    assert read_manifest(data.index_dir).generation == manifest.generation
    assert urls(data, "aardvark badger") == [f"{A}/1", f"{A}/2"]


@pytest.mark.slow
def test_follow_merges_beside_its_cuts(tmp_path: Path) -> None:
    data = build_data_dir(tmp_path / "d", {f"{A}/0": page("Zero", "common w0")})
    with FollowThread(data, interval=0.2, every=50, procs=1, policy=EAGER) as follower:
        for i in range(1, 4):
            wait_for(lambda i=i: len(urls(data, "common") or []) == i, f"page {i - 1}", WITHIN)
            build_data_dir(data.root, {f"{A}/{i}": page(f"P{i}", f"common w{i}")})
        wait_for(lambda: len(urls(data, "common") or []) == 4, "the last page", WITHIN)
        wait_for(lambda: (st := read_status(data)) is not None and st.merges >= 2
                 and not st.merging and len(read_manifest(data.index_dir).segments) <= 2,
                 "the merges", WITHIN)
        status = follower.stop()
    assert status.state == "stopped" and status.cuts >= 4 and status.recent_merges
    assert all(m["ended"] >= m["began"] for m in status.recent_merges)
    assert urls(data, "common") == [f"{A}/{i}" for i in range(4)]
    assert leftovers(data) == []


def test_link_targets_left_to_a_later_cut_are_indexed_then(tmp_path: Path) -> None:
    """A cut without link targets indexes the changed page alone; the next run that takes
    targets indexes the anchor texts of every link changed since (``targets_seq``)."""
    data = build_data_dir(tmp_path / "d", {f"{A}/1": page("One", "aardvark")})
    build_index(data)
    build_data_dir(data.root, {f"{A}/2": page("Two", "walrus")},
                   links=[(f"{A}/2", f"{A}/t", "zebra crossing")])
    with StoreReader.open(data.store_path) as store:
        run_once(data, store, read_manifest(data.index_dir), ram_mb=64,
                 started=time.monotonic(), say=lambda _m: None, procs=1, merge=False,
                 link_targets=False)
        deferred = read_manifest(data.index_dir)
        assert urls(data, "walrus") == [f"{A}/2"] and urls(data, "zebra") == []
        assert targets_seq(deferred) < deferred.last_seq
        report = run_once(data, store, deferred, ram_mb=64, started=time.monotonic(),
                          say=lambda _m: None, procs=1, merge=False)
    assert report.mode == "incremental" and report.anchor_only >= 1
    caught_up = read_manifest(data.index_dir)
    assert targets_seq(caught_up) == caught_up.last_seq
    assert urls(data, "zebra") == [f"{A}/t"] and urls(data, "walrus") == [f"{A}/2"]
