"""CrawlStore's crawler-side methods: group-commit transactions, OPIC state, near-duplicate seeds."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from websift.crawler.frontier import Frontier
from websift.crawler.groupcommit import GroupCommit
from websift.store.crawl_store import CrawlStore
from websift.store.errors import BatchLost
from websift.store.schema import (
    FETCHED,
    META_CLOCK,
    META_DEFAULT_HISTORY,
    META_LEVELS,
    META_VIRTUAL,
    OPIC_DEAD,
    OPIC_FOCUS,
    OPIC_READ,
    OpicGlobals,
    OpicRows,
    origin_of,
)
from websift.store.views import StoreReader
from websift.store.warc import WarcWriterFile


def _raw(path: Path, sql: str) -> list[tuple[object, ...]]:
    """Read the file behind the store's back: what is committed, as another process sees it."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_a_failed_step_is_undone_alone_and_the_batch_commits_at_once(tmp_path: Path) -> None:
    path = tmp_path / "crawl.sqlite3"
    with CrawlStore.open(path) as store:
        assert not store.in_transaction
        store.begin()
        assert store.in_transaction
        with store.transaction():
            store.add_url("http://a.example/kept")
        with pytest.raises(RuntimeError), store.transaction():
            store.add_url("http://a.example/undone")
            raise RuntimeError("step failed")
        assert _raw(path, "SELECT url FROM urls") == []  # nothing visible before the commit
        store.commit()
        assert not store.in_transaction
    assert _raw(path, "SELECT url FROM urls") == [("http://a.example/kept",)]


def test_simhashes_skip_pages_without_one_and_duplicates(tmp_path: Path) -> None:
    with CrawlStore.open(tmp_path / "crawl.sqlite3") as store:
        with store.transaction():
            a, b, c = (store.add_url(f"http://a.example/{x}")[0] for x in "abc")
        for uid, fp, dup in ((a, -(2**63), None), (b, 7, a), (c, None, None)):
            store.record_fetched(uid, http_status=200, content_type="text/html", warc=None,
                                 content_hash=f"h{uid}", simhash=fp, duplicate_of=dup)
        assert list(store.simhashes()) == [(a, -(2**63))]


def test_opic_state_saves_exact_numbers_and_reloads(tmp_path: Path) -> None:
    path = tmp_path / "crawl.sqlite3"
    with CrawlStore.open(path) as store:
        default = OpicGlobals(clock=0.0, virtual_cash=1.0, default_history=0.0)
        assert store.opic_globals(default) == default  # nothing saved yet
        with store.transaction():
            ids = [store.add_url(f"http://a.example/{i}", depth=i)[0] for i in range(4)]
        assert store.opic_table().ids.size == 0  # in the store, not yet in OPIC
        idx = np.asarray(ids[:3], dtype=np.int64)
        cash = np.asarray([0.1, 0.2, 1 / 3])
        history = np.asarray([0.0, 1e-300, 2.5])
        g_last = np.asarray([0.0, 1.0, 2.0])
        importance = np.asarray([0.25, 0.5, 0.125])
        level = np.asarray([0.0, 0.1 + 0.2, 1e-17])
        flags = np.asarray([0, OPIC_READ | OPIC_FOCUS, OPIC_READ | OPIC_DEAD])
        totals = OpicGlobals(clock=2.0000000000000004, virtual_cash=1 - 0.1 - 0.2 - 1 / 3,
                             default_history=0.7, levels=(0.1 + 0.2, 1 / 7, 0.0))
        with store.transaction():
            store.save_opic_state(
                OpicRows(idx, cash, history, g_last, importance, level, flags), totals)
            store.update_page(ids[1], status=FETCHED)
            store.update_page(ids[1], fetched_at=123.5)
    with CrawlStore.open(path) as store:
        assert store.opic_globals(default) == totals  # bit for bit (repr round-trips)
        table = store.opic_table()
        assert table.ids.tolist() == ids[:3]
        assert table.depth.tolist() == [0, 1, 2]
        assert table.discovered.tolist() == [True, False, True]
        for name, expected in (("cash", cash), ("history", history), ("g_last", g_last),
                               ("level", level)):
            assert getattr(table, name).tolist() == expected.tolist(), name  # bit for bit
        assert table.flags.tolist() == flags.tolist()
        assert np.isnan(table.fetched_at[[0, 2]]).all() and table.fetched_at[1] == 123.5
        assert table.host_id.tolist() == [store.host_id(origin_of("http://a.example/"))] * 3
        imp = store.importance_by_id(store.max_url_id() + 1)
        assert imp[ids].tolist() == [0.25, 0.5, 0.125, 0.0]
    meta = {str(k): v for k, v in _raw(path, "SELECT key, value FROM meta WHERE key LIKE 'opic_%'")}
    assert meta == {META_CLOCK: repr(totals.clock), META_VIRTUAL: repr(totals.virtual_cash),
                    META_DEFAULT_HISTORY: "0.7",
                    **{key: repr(v) for key, v in zip(META_LEVELS, totals.levels, strict=True)}}


def test_opic_state_is_saved_whole_or_not_at_all(tmp_path: Path) -> None:
    with CrawlStore.open(tmp_path / "crawl.sqlite3") as store:
        with store.transaction():
            ids = [store.add_url(f"http://a.example/{i}")[0] for i in range(3)]
        one = np.ones(2)
        broken = OpicRows(np.asarray(ids), one, one, one, one)  # 3 IDs, 2 values each
        with store.transaction():
            with pytest.raises(ValueError):
                store.save_opic_state(broken, OpicGlobals(5.0, 0.0, 0.0))
            # the rows written before the error were rolled back with the savepoint
            assert [p.cash for p in store.pages()] == [0.0, 0.0, 0.0]
            assert store.get_meta(META_CLOCK) is None


def test_a_batch_sqlite_rolled_back_commits_nothing_more(tmp_path: Path) -> None:
    """After SQLite rolled the open batch back on its own (what a full disk while it writes the
    journal does), a further step and the batch's commit raise BatchLost instead of storing
    pages' cash without the virtual page's: the stored cash stays 1 (Lemma 2.2)."""
    path = tmp_path / "crawl.sqlite3"
    warc = WarcWriterFile(tmp_path / "warc")
    with CrawlStore.open(path) as store:
        frontier = Frontier(virtual_every=100)
        batch = GroupCommit(store, warc, max_steps=100, max_age=3600.0)
        batch.before_commit.append(lambda: frontier.persist(store))
        with store.transaction():
            ids = []
            for i in range(6):
                url = f"http://a.example/{i}"
                uid = store.add_url(url)[0]
                frontier.add(uid, url, store.host_id(origin_of(url)), 0)
                ids.append(uid)
            frontier.distribute_virtual()
            frontier.persist(store)
        frontier.persist(store)  # a step's rows dirty from here on
        for uid in ids[:2]:
            with batch.step():
                frontier.take(uid)
                store.update_page(uid, status=FETCHED)
                frontier.dirty.update(frontier.read(uid, ids[2:4]))
        store._conn.execute("ROLLBACK")  # what SQLite does itself after a full disk
        with pytest.raises(BatchLost), batch.step():
            frontier.take(ids[2])
            store.update_page(ids[2], status=FETCHED)
            frontier.dirty.update(frontier.read(ids[2], ids[4:]))
        with pytest.raises(BatchLost):
            batch.commit()
        assert not store.in_transaction and batch.commits == 0
    warc.close()
    assert _raw(path, f"SELECT count(*) FROM urls WHERE status='{FETCHED}'") == [(0,)]
    with StoreReader.open(path) as reader:
        assert reader.opic_cash_total() == pytest.approx(1.0, abs=1e-12)


def test_frontier_persisted_through_the_store_keeps_total_cash_one(tmp_path: Path) -> None:
    """Lemma 2.2 on disk: after batches of OPIC steps saved by the group commit, the stored
    cash plus the stored virtual cash is 1, and a reload gives back the same state."""
    path = tmp_path / "crawl.sqlite3"
    warc = WarcWriterFile(tmp_path / "warc")
    with CrawlStore.open(path) as store:
        frontier = Frontier(virtual_every=3)
        dirty: set[int] = set()
        batch = GroupCommit(store, warc, max_steps=2, max_age=3600.0)

        def flush() -> None:
            frontier.persist(store, sorted(dirty))
            dirty.clear()

        batch.before_commit.append(flush)
        with store.transaction():
            ids = []
            for i in range(8):
                url = f"http://{'ab'[i % 2]}.example/{i}"
                uid = store.add_url(url)[0]
                frontier.add(uid, url, store.host_id(origin_of(url)), 0)
                ids.append(uid)
            frontier.distribute_virtual()
            frontier.persist(store)
        for step, uid in enumerate(ids[:7]):
            with batch.step():
                frontier.take(uid)
                store.update_page(uid, status=FETCHED)
                kids = [ids[(step + 1) % 8], ids[(step + 3) % 8]]
                dirty.update(frontier.read(uid, kids, dead=step == 4))
                if frontier.virtual_due():
                    frontier.distribute_virtual()  # no row changes: the levels move
        assert store.in_transaction  # the last step's batch is still open
        batch.commit()
        assert not store.in_transaction and batch.commits == 4
    warc.close()

    with StoreReader.open(path) as reader:  # another connection: what is committed
        assert reader.opic_cash_total() == pytest.approx(1.0, abs=1e-12)
    with CrawlStore.open(path) as store:
        again = Frontier.load(store)
        assert again.opic.virtual_cash == frontier.opic.virtual_cash
        assert again.opic.clock == frontier.opic.clock
        n = max(ids) + 1
        np.testing.assert_array_equal(again.opic.cash[:n], frontier.opic.cash[:n])
        np.testing.assert_array_equal(again.opic.history[:n], frontier.opic.history[:n])
        assert again.pending_ids() == ids[7:]  # the unread ones are the frontier again
        assert again.opic.total_cash() == pytest.approx(1.0, abs=1e-12)
