"""`websift index --follow` (indexer/follow.py) on a crawl store written while it runs: new pages
become searchable within the cut interval, changed pages replace their old version, pages that
fail or say noindex leave the index, nothing changed means no new manifest, and a stop leaves
a whole manifest and no tmp-* directory."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.corpus import build_data_dir, page
from testkit.following import FollowThread
from testkit.waiting import wait_for
from testkit.websift_process import REPO, terminated, websift_child, websift_command
from websift.core.datadir import DataDir
from websift.indexer.build import build_index, run_once
from websift.indexer.errors import IndexCorrupt, IndexInterrupted, IndexMissing
from websift.indexer.follow import read_status
from websift.indexer.manifest import read_manifest
from websift.indexer.searcher import IndexQuery, Searcher
from websift.indexer.settings import DEFAULT_INDEX_SETTINGS
from websift.indexer.workers import AnalyserPool
from websift.store.crawl_store import CrawlStore
from websift.store.views import StoreReader

A = "http://a.example"
INTERVAL = 0.3  # seconds between cuts in these tests
# A page committed is searchable within the interval plus one cut; on a loaded 2-core machine
# a cut of a few pages can take a few seconds, so the bound is generous but finite.
SEARCHABLE_WITHIN = INTERVAL + 20.0


def urls_for(data: DataDir, q: str) -> list[str] | None:
    """The URLs a fresh Searcher finds for ``q`` (None: the index moved on while it opened,
    a merge having swept a segment the manifest it read named; or no index yet)."""
    try:
        return [h.url for h in Searcher.open(data).search(IndexQuery(q, k=20)).hits]
    except (IndexCorrupt, IndexMissing):
        return None


def tmp_dirs(data: DataDir) -> list[str]:
    return [p.name for p in data.index_dir.iterdir() if p.name.startswith("tmp-")]


@pytest.fixture()
def following(tmp_path: Path) -> Iterator[tuple[DataDir, list[str]]]:
    data = build_data_dir(tmp_path / "d", {f"{A}/first": page("First", "aardvark basics")})
    lines: list[str] = []
    with FollowThread(data, interval=INTERVAL, every=50, procs=1,
                      on_cut=lines.append) as follower:
        wait_for(lambda: urls_for(data, "aardvark") == [f"{A}/first"], "the first cut",
                 SEARCHABLE_WITHIN)
        yield data, lines
        status = follower.stop()
    assert status.state == "stopped"
    assert tmp_dirs(data) == []


def test_pages_committed_while_following_become_searchable(
        following: tuple[DataDir, list[str]]) -> None:
    data, lines = following
    before = read_manifest(data.index_dir).generation
    committed = time.monotonic()
    build_data_dir(data.root, {f"{A}/new": page("New", "bandicoot habits")})
    wait_for(lambda: urls_for(data, "bandicoot") == [f"{A}/new"], "the new page",
             SEARCHABLE_WITHIN)
    assert time.monotonic() - committed < SEARCHABLE_WITHIN
    assert read_manifest(data.index_dir).generation > before
    # the follower writes its status just after the cut's manifest: wait for it
    wait_for(lambda: (st := read_status(data)) is not None and st.cuts >= 2,
             "the cut's status", SEARCHABLE_WITHIN)
    assert lines and lines[-1].startswith("cut ")
    status = read_status(data)
    assert status is not None and status.state == "following" and status.cuts >= 2
    assert status.live_docs >= 2 and status.index_bytes > 0 and status.cut_bytes > 0


def test_changed_failed_and_noindex_pages(following: tuple[DataDir, list[str]]) -> None:
    data, _ = following
    build_data_dir(data.root, {f"{A}/c": page("C", "capybara"), f"{A}/f": page("F", "fossa"),
                               f"{A}/n": page("N", "numbat")})
    wait_for(lambda: urls_for(data, "capybara fossa numbat") is not None
             and len(urls_for(data, "capybara OR fossa OR numbat") or []) == 3,
             "three new pages", SEARCHABLE_WITHIN)
    # /c changes, /n is fetched again and says noindex, /f fails.
    build_data_dir(data.root, {f"{A}/c": page("C", "coati"), f"{A}/n": page("N", "numbat")},
                   noindex=[f"{A}/n"])
    with CrawlStore.open(data.store_path) as store, store.transaction():
        uid = store.url_id(f"{A}/f")
        assert uid is not None
        store.mark_failed(uid, "http 500", 500, time.time())
    wait_for(lambda: urls_for(data, "coati") == [f"{A}/c"]
             and urls_for(data, "capybara") == [] and urls_for(data, "numbat") == []
             and urls_for(data, "fossa") == [], "the changed, noindex and failed pages",
             SEARCHABLE_WITHIN)


def test_nothing_changed_means_no_new_manifest(following: tuple[DataDir, list[str]]) -> None:
    data, _ = following
    generation = read_manifest(data.index_dir).generation
    seen = read_status(data)
    assert seen is not None
    # The idle loop writes its status every STATUS_SECONDS: two such writes later, still the
    # same manifest.
    wait_for(lambda: (s := read_status(data)) is not None and s.updated > seen.updated + 2.5,
             "two idle status writes")
    assert read_manifest(data.index_dir).generation == generation


def test_rebuild_and_follow_are_refused_together(tmp_path: Path) -> None:
    done = subprocess.run(websift_command("index", "--data", str(tmp_path / "d"), "--follow",
                                          "--rebuild"), cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 2 and "--rebuild and --follow" in done.stderr


def test_a_stopped_cut_is_discarded_whole(tmp_path: Path) -> None:
    data = build_data_dir(tmp_path / "d", {f"{A}/x": page("X", "xerus")})
    build_index(data)
    build_data_dir(data.root, {f"{A}/y": page("Y", "yak")})
    before = read_manifest(data.index_dir)
    with StoreReader.open(data.store_path) as store, pytest.raises(IndexInterrupted):
        run_once(data, store, before, ram_mb=64, started=time.monotonic(),
                 say=lambda _m: None, procs=1, should_stop=lambda: True)
    assert read_manifest(data.index_dir).generation == before.generation
    assert tmp_dirs(data) == []
    assert urls_for(data, "yak") == []


def test_a_running_pool_indexes_later_segments_as_a_fresh_one(tmp_path: Path) -> None:
    """The pool keeps its workers and their word memos between segments (AnalyserPool.rebind):
    a word learned for the first segment gets its place in the second one's lexicon."""
    first = {f"{A}/1": page("One", "quokka wombat dingo"), f"{A}/2": page("Two", "wombat emu")}
    second = {f"{A}/3": page("Three", "dingo quokka kookaburra"),
              f"{A}/4": page("Four", "emu wombat")}
    shared = build_data_dir(tmp_path / "shared", first)
    fresh = build_data_dir(tmp_path / "fresh", first)
    build_index(fresh, procs=1)
    with AnalyserPool(shared.warc_dir, 2, {}, DEFAULT_INDEX_SETTINGS) as pool:
        for pages in (None, second):
            if pages is not None:
                build_data_dir(shared.root, pages)
                build_data_dir(fresh.root, pages)
            with StoreReader.open(shared.store_path) as store:
                manifest = read_manifest(shared.index_dir) if pages else None
                run_once(shared, store, manifest, ram_mb=64, started=time.monotonic(),
                         say=lambda _m: None, procs=2, pool=pool)
    build_index(fresh, procs=1)
    a, b = Searcher.open(shared), Searcher.open(fresh)
    assert a.segments[-1].terms() == b.segments[-1].terms()
    for q in ("wombat", "dingo quokka", "emu", "kookaburra"):
        got = [(h.url, round(h.text_score, 4)) for h in a.search(IndexQuery(q, k=10)).hits]
        assert got == [(h.url, round(h.text_score, 4))
                       for h in b.search(IndexQuery(q, k=10)).hits], q


@pytest.mark.slow
def test_the_command_follows_new_hosts_with_two_procs_and_exits_0_on_sigterm(
        tmp_path: Path) -> None:
    """``websift index --follow --procs 2`` started before the crawl has made anything waits
    for the store; each cut then brings pages of several new hosts, so their templates are
    sampled while the follower's worker pool runs (no second pool is forked beside it), every
    cut ends, and SIGTERM stops it with exit 0."""
    def hosts(names: str, word: str) -> dict[str, str]:
        return {f"http://{h}.example/{i}": page(f"{h} {i}", f"{word}{h} common words {i}")
                for h in names for i in range(6)}

    with websift_child("index", "--data", str(tmp_path / "d"), "--follow", "--interval",
                       str(INTERVAL), "--every", "100", "--procs", "2") as proc:
        wait_for((tmp_path / "d" / "index" / "follow-status.json").exists,
                 "the follower's first status")
        data = build_data_dir(tmp_path / "d", hosts("abc", "first"))
        wait_for(lambda: len(urls_for(data, "firsta") or []) == 6, "the first cut",
                 SEARCHABLE_WITHIN)
        for n, names in enumerate(("def", "ghi")):
            build_data_dir(data.root, hosts(names, f"later{n}"))
            wait_for(lambda w=f"later{n}{names[-1]}": len(urls_for(data, w) or []) == 6,
                     f"cut {n + 2}", SEARCHABLE_WITHIN)
        out, err = terminated(proc)
    assert proc.returncode == 0, err
    cuts = [ln for ln in out.splitlines() if ln.startswith("index: cut ")]
    assert len(cuts) >= 3 and out.splitlines()[-1].startswith("index: stopped after")
    assert len(urls_for(data, "common") or []) == 20  # k=20: at least 20 of the 54 pages
    manifest = read_manifest(data.index_dir)
    assert {p.name for p in data.index_dir.iterdir() if p.is_dir()} == {
        s.name for s in manifest.segments}
    assert tmp_dirs(data) == []
    status = read_status(data)
    assert status is not None and status.state == "stopped" and status.cuts == len(cuts)
