"""A serving process keeps what outlived a swap out of the garbage collector's full passes
(api/gc_policy.py): its reload thread collects what is young, then freezes the rest; an hourly
reclaim collects whatever cycles the frozen objects left; every collection is timed."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from testkit.waiting import wait_for
from tests.api.test_reload_reuse import answers, cut, data, publish
from websift.api import gc_policy
from websift.api.gc_policy import HeapSettler
from websift.api.snapshot import SnapshotHolder
from websift.core.datadir import DataDir
from websift.core.gc_pauses import gc_pauses

__all__ = ["data"]  # the fixture: a base of three segments, generation 1

BASE = ["seg-000000", "seg-000001", "seg-000002"]


class Node:
    """A container the collector tracks; ``loop`` makes it a cycle of its own."""

    loop: Node | None = None


def cycle() -> weakref.ref[Node]:
    """A cycle that is garbage at once: only the collector can free it."""
    node = Node()
    node.loop = node
    return weakref.ref(node)


def tracked(obj: object) -> bool:
    """Whether the collector's generations hold ``obj`` (a frozen object is in none)."""
    return any(o is obj for o in gc.get_objects())


@pytest.fixture
def collector() -> Iterator[None]:
    """Automatic collections off (only what the code under test runs happens); the
    collector's state restored after."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.enable()


def test_a_retired_searcher_is_freed_by_its_references_alone(data: DataDir,
                                                             collector: None) -> None:
    # What freezing relies on: the snapshot a swap retires is not held by a cycle, so a
    # frozen one still goes when its last lease ends.
    holder = SnapshotHolder(data, reload_check_ms=0)
    holder.start()
    try:
        with holder.lease() as snap:
            old = weakref.ref(snap.searcher.value)
            answers(snap.searcher.value)
        cut(data, "seg-000003", 0)
        publish(data, [*BASE, "seg-000003"], 2)
        with holder.lease() as snap:  # reload_check_ms 0: this lease swaps
            assert snap.index_generation == 2
            answers(snap.searcher.value)
        assert old() is None
    finally:
        holder.close()


def test_the_reload_thread_collects_young_cycles_then_freezes_what_outlived_a_swap(
        data: DataDir, collector: None) -> None:
    holder = SnapshotHolder(data, reload_check_ms=1, settle_heap=True)
    holder.start()
    try:
        assert holder.heap is not None
        with holder.lease() as snap:
            answers(snap.searcher.value)
        garbage = cycle()
        kept = Node()
        assert tracked(kept) and garbage() is not None
        cut(data, "seg-000003", 0)
        publish(data, [*BASE, "seg-000003"], 2)

        def swapped_and_settled() -> bool:
            with holder.lease() as snap:  # each lease wakes the reload thread when due
                return snap.index_generation == 2 and holder.heap.settles >= 1

        wait_for(swapped_and_settled, "the swap to generation 2 and the settle after it")
        assert garbage() is None  # collected before the freeze, not kept frozen
        assert not tracked(kept)  # frozen: no collection walks it any more
        assert holder.heap.reclaims == 0
    finally:
        holder.close()


def test_a_check_without_a_swap_settles_only_after_settle_seconds() -> None:
    gc.collect()  # the young heap empty: only the clock can call for a settle
    now = [0.0]
    settler = HeapSettler(clock=lambda: now[0])
    try:
        settler.after_check(swapped=False)
        assert settler.settles == 0
        now[0] = gc_policy.SETTLE_SECONDS
        settler.after_check(swapped=False)
        assert settler.settles == 1
        settler.after_check(swapped=True)
        assert settler.settles == 2
    finally:
        gc.unfreeze()


def test_a_check_settles_early_once_the_young_heap_grew() -> None:
    # A busy server without swaps (its caches filling) settles before SETTLE_SECONDS, so the
    # settle's collection walks tens of thousands of young objects, not a minute's worth.
    threshold = gc.get_threshold()
    gc.set_threshold(700, 10, 10)  # CPython's (a crawl run in this process raises the first)
    gc.collect()
    now = [1.0]
    settler = HeapSettler(clock=lambda: now[0])
    try:
        settler.after_check(swapped=False)
        assert settler.settles == 0
        kept = [Node() for _ in range(40_000)]  # made and kept: generation 1 collected 5 times
        assert gc.get_count()[2] >= gc_policy.SETTLE_GROWTH
        settler.after_check(swapped=False)
        assert settler.settles == 1
        assert gc.get_count()[2] == 0 and not tracked(kept[0])
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


def test_the_reclaim_frees_cycles_that_frozen_objects_left(collector: None) -> None:
    now = [0.0]
    settler = HeapSettler(clock=lambda: now[0])
    node = Node()
    left = weakref.ref(node)
    settler.after_check(swapped=True)  # frozen while alive
    node.loop = node
    del node  # now a cycle among frozen objects
    gc.collect()
    assert left() is not None  # out of the collector's reach
    now[0] = gc_policy.RECLAIM_SECONDS
    settler.after_check(swapped=False)
    assert left() is None
    assert (settler.reclaims, settler.settles) == (1, 1)


def test_every_collection_is_timed_by_generation() -> None:
    pauses = gc_pauses()
    assert gc_pauses() is pauses and sum(h is pauses for h in gc.callbacks) == 1
    before = [(g.count, g.seconds) for g in pauses.generations]
    gc.collect(0)
    gc.collect()
    after = pauses.as_dict()
    assert after["0"]["count"] >= before[0][0] + 1
    assert after["2"]["count"] >= before[2][0] + 1
    assert after["2"]["seconds"] > before[2][1] and after["2"]["longest_ms"] > 0
