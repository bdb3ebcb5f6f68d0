"""The link targets' lane of ``websift index --follow`` (indexer/follow.py ``TargetsLane``): a
fetched page's cut holds no anchor-only document; the targets of its links are cut afterwards
in shares of their own, the last of which records ``targets_seq``; a round cut short is taken
again whole; ``run_once(only_ids=...)`` indexes a share without taking any change of the
store."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from testkit.corpus import build_data_dir
from testkit.waiting import wait_for
from websift.core.datadir import DataDir
from websift.indexer.build import build_index, run_once, targets_seq
from websift.indexer.errors import IndexCorrupt, IndexMissing
from websift.indexer.follow import FollowStatus, TargetsLane, follow, read_status
from websift.indexer.follow_merges import OpenSegments
from websift.indexer.manifest import read_manifest
from websift.indexer.searcher import IndexQuery, Searcher
from websift.store.views import StoreReader

A = "http://a.example"
WITHIN = 60.0  # generous: cuts on a loaded 2-core machine


def page(title: str, body: str) -> str:
    return f"<html><head><title>{title}</title></head><body><p>{body}</p></body></html>"


def urls(data: DataDir, q: str) -> list[str] | None:
    """The URLs a fresh Searcher finds (None: no index yet, or it moved on while opening)."""
    try:
        return sorted(h.url for h in Searcher.open(data).search(IndexQuery(q, k=50)).hits)
    except (IndexCorrupt, IndexMissing):
        return None


def test_a_share_of_targets_keeps_last_seq_and_records_targets_seq_last(tmp_path: Path) -> None:
    data = build_data_dir(tmp_path / "d", {f"{A}/1": page("One", "aardvark")})
    build_index(data)
    build_data_dir(data.root, {f"{A}/2": page("Two", "walrus")},
                   links=[(f"{A}/2", f"{A}/t", "zebra crossing"),
                          (f"{A}/2", f"{A}/u", "yak shaving")])
    with StoreReader.open(data.store_path) as store:
        def once(**kw: object) -> None:
            run_once(data, store, read_manifest(data.index_dir), ram_mb=64,
                     started=time.monotonic(), say=lambda _m: None, procs=1, merge=False,
                     **kw)  # type: ignore[arg-type]

        once(link_targets=False)  # the fetched page's cut
        pages_cut = read_manifest(data.index_dir)
        assert urls(data, "walrus") == [f"{A}/2"] and urls(data, "zebra") == []
        t, u = (store.url_id(f"{A}/{x}") for x in "tu")
        assert t is not None and u is not None
        once(only_ids=[t])  # a share, not the round's last: targets_seq stays
        first = read_manifest(data.index_dir)
        assert first.generation > pages_cut.generation
        assert first.last_seq == pages_cut.last_seq
        assert targets_seq(first) == targets_seq(pages_cut) < first.last_seq
        assert urls(data, "zebra") == [f"{A}/t"] and urls(data, "yak") == []
        once(only_ids=[u], targets_done=pages_cut.last_seq)  # the round's last share
        last = read_manifest(data.index_dir)
        assert targets_seq(last) == last.last_seq == pages_cut.last_seq
        assert urls(data, "yak") == [f"{A}/u"] and urls(data, "walrus") == [f"{A}/2"]
        # nothing to index: the record alone moves, the segments stay
        build_data_dir(data.root, {f"{A}/3": page("Three", "quokka")})
        once(link_targets=False)
        deferred = read_manifest(data.index_dir)
        assert targets_seq(deferred) < deferred.last_seq
        once(only_ids=[], targets_done=deferred.last_seq)
        recorded = read_manifest(data.index_dir)
        assert recorded.generation == deferred.generation + 1
        assert [s.name for s in recorded.segments] == [s.name for s in deferred.segments]
        assert targets_seq(recorded) == recorded.last_seq == deferred.last_seq


def test_follow_cuts_the_fetched_page_first_and_its_link_targets_in_shares(
        tmp_path: Path) -> None:
    data = build_data_dir(tmp_path / "d", {f"{A}/1": page("One", "aardvark")})
    stop = threading.Event()
    result: list[FollowStatus | BaseException] = []

    def run() -> None:
        try:
            result.append(follow(data, stop, interval=0.3, every=50, procs=1,
                                 targets_every=0.5, targets_share=1))
        except BaseException as exc:  # noqa: BLE001 - handed to the test, which raises it
            result.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: urls(data, "aardvark") == [f"{A}/1"], "the first cut", WITHIN)
        build_data_dir(data.root, {f"{A}/2": page("Two", "walrus")},
                       links=[(f"{A}/2", f"{A}/{x}", f"{word} anchor")
                              for x, word in (("t", "zebra"), ("u", "yak"), ("v", "okapi"))])
        wait_for(lambda: urls(data, "anchor") == [f"{A}/{x}" for x in "tuv"],
                 "the three link targets", WITHIN)
        wait_for(lambda: (m := read_manifest(data.index_dir)).last_seq == targets_seq(m),
                 "the round's targets_seq recorded", WITHIN)
        wait_for(lambda: (s := read_status(data)) is not None
                 and sum(c["targets"] for c in s.recent_cuts) >= 3, "the shares' status",
                 WITHIN)
    finally:
        stop.set()
        thread.join(timeout=60)
    assert not thread.is_alive()
    assert result and isinstance(result[0], FollowStatus), result
    cuts = result[0].recent_cuts
    pages = [c for c in cuts if not c["targets"]]
    shares = [c for c in cuts if c["targets"]]
    # the fetched page's cut held it alone; each share at most one target
    assert [(c["documents"], c["anchor_only"]) for c in pages[1:]] == [(1, 0)]
    assert len(shares) == 3 and all(c["anchor_only"] == 1 for c in shares)
    assert all(s["began"] > pages[1]["began"] for s in shares)
    assert urls(data, "walrus") == [f"{A}/2"]


def test_a_round_cut_short_is_taken_again_whole_and_leaves_changed_pages_to_their_cuts(
        tmp_path: Path) -> None:
    data = build_data_dir(tmp_path / "d", {f"{A}/1": page("One", "aardvark")})
    build_index(data)
    build_data_dir(data.root, {f"{A}/2": page("Two", "walrus")},
                   links=[(f"{A}/2", f"{A}/{x}", f"{x} anchor") for x in ("t", "u", "1")])
    with StoreReader.open(data.store_path) as store:
        def cut(share: list[int] | None, done: int | None = None) -> None:
            run_once(data, store, read_manifest(data.index_dir), ram_mb=64,
                     started=time.monotonic(), say=lambda _m: None, procs=1, merge=False,
                     link_targets=False, only_ids=share, targets_done=done)

        cut(None)  # the fetched page's cut
        manifest = read_manifest(data.index_dir)
        lane = TargetsLane(every=0.0, share=1)
        assert lane.due(time.monotonic(), manifest)
        lane.start(store, manifest, OpenSegments(), data.index_dir, time.monotonic())
        ids = {store.url_id(f"{A}/{x}") for x in ("t", "u", "1")}
        assert set(lane.ids) == ids and lane.pending() == 3
        share, done = lane.next_share(store, manifest.last_seq)
        assert len(share) == 1 and done is None
        cut(share)  # then the follower stops: the round is cut short
        again = TargetsLane(every=0.0, share=10)
        again.start(store, read_manifest(data.index_dir), OpenSegments(), data.index_dir,
                    time.monotonic())
        assert set(again.ids) == ids  # the whole round again
        # /1 is fetched again meanwhile: its own cut takes it, not the targets' share
        build_data_dir(data.root, {f"{A}/1": page("One", "aardvark again")})
        share, done = again.next_share(store, manifest.last_seq)
        assert set(share) == ids - {store.url_id(f"{A}/1")} and done == manifest.last_seq
        assert again.pending() == 0
        cut(share, done)
        recorded = read_manifest(data.index_dir)
        assert targets_seq(recorded) == recorded.last_seq == manifest.last_seq
        assert not again.due(time.monotonic(), recorded)
