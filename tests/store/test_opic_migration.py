"""Schema version 2 (lazy OPIC dividends): a version-1 store is read as it is and upgraded in
place by the first writer, its OPIC state exact (stored cash plus virtual cash still 1)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from websift.crawler.frontier import Frontier
from websift.store.crawl_store import CrawlStore
from websift.store.schema import (
    DISALLOWED,
    ERROR,
    FETCHED,
    META_LEVELS,
    OPIC_DEAD,
    OPIC_READ,
    SCHEMA_VERSION,
    OpicGlobals,
    OpicRows,
)
from websift.store.views import StoreReader

STATUSES = ["discovered", FETCHED, ERROR, DISALLOWED, "redirect", "discovered"]
CASH = [0.1, 0.2, 0.0, 0.0, 0.05, 0.15]  # + 0.5 on the virtual page


def _version_1_store(path: Path) -> list[int]:
    """A store as websift wrote it before version 2: no opic_level / opic_flags columns."""
    with CrawlStore.open(path) as store, store.transaction():
        ids = [store.add_url(f"http://a.example/{i}")[0] for i in range(len(STATUSES))]
        out = store.add_url("http://a.example/not-in-opic")[0]
        for uid, status in zip(ids, STATUSES, strict=True):
            store.update_page(uid, status=status, fetched_at=100.0 + uid,
                              fetch_count=int(status != "discovered"))
        idx = np.asarray(ids)
        cash = np.asarray(CASH)
        store.save_opic_state(OpicRows(idx, cash, cash, np.ones(len(ids)), cash),
                              OpicGlobals(3.0, 0.5, 0.01))
        store.update_page(out, status=FETCHED)
    conn = sqlite3.connect(path)
    conn.executescript(
        "ALTER TABLE urls DROP COLUMN opic_level; ALTER TABLE urls DROP COLUMN opic_flags;"
        "UPDATE meta SET value='1' WHERE key='schema_version';"
        "DELETE FROM meta WHERE key LIKE 'opic_level_%';"
    )
    conn.close()
    return ids


def _columns(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {row[1] for row in conn.execute("PRAGMA table_info(urls)")}
    finally:
        conn.close()


def test_a_reader_reads_a_version_1_store_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "crawl.sqlite3"
    ids = _version_1_store(path)
    with StoreReader.open(path) as reader:
        assert reader.schema_version == 1
        assert reader.opic_cash_total() == pytest.approx(1.0, abs=1e-12)
        schedule = reader.refresh_schedule(10, 0.0)
        # the fetched pages by cash: ids[1], then the one never in OPIC (no cash)
        assert [(row.id, row.priority) for row in schedule] == [(ids[1], 0.2), (ids[-1] + 1, 0.0)]
    assert "opic_flags" not in _columns(path)  # a reader changes nothing


def test_a_writer_upgrades_in_place_and_the_state_stays_exact(tmp_path: Path) -> None:
    path = tmp_path / "crawl.sqlite3"
    ids = _version_1_store(path)
    with CrawlStore.open(path) as store:
        assert store.schema_version == SCHEMA_VERSION >= 2
        assert {"opic_level", "opic_flags"} <= _columns(path)
        table = store.opic_table()
        assert table.ids.tolist() == ids
        read, dead = OPIC_READ, OPIC_READ | OPIC_DEAD
        assert table.flags.tolist() == [0, read, dead, dead, read, 0]
        assert table.level.tolist() == [0.0] * len(ids)
        assert store.opic_globals(OpicGlobals(0.0, 1.0, 0.0)).levels == (0.0, 0.0, 0.0)
        assert store.opic_cash_total() == pytest.approx(1.0, abs=1e-12)
        frontier = Frontier.load(store)
        # the unread pages, and the read live ones (fetched long ago): refresh candidates
        assert frontier.pending_ids() == [ids[0], ids[1], ids[4], ids[5]]
        stats = frontier.stats()
        assert (stats["pending_unread"], stats["pending_refresh"]) == (2, 2)
        assert [frontier.cash(u) for u in ids] == CASH
        assert frontier.opic.members == [4, 2, 0]  # live, unread, focus
    with StoreReader.open(path) as reader:
        assert reader.schema_version == SCHEMA_VERSION
        assert reader.get_meta(META_LEVELS[0]) is None  # written by the first OPIC save
    with CrawlStore.open(path) as store:  # opening again: nothing left to do
        assert store.schema_version == SCHEMA_VERSION


def test_a_newer_store_is_still_refused_by_an_older_reader(tmp_path: Path) -> None:
    path = tmp_path / "crawl.sqlite3"
    CrawlStore.open(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION + 1),))
    conn.commit()
    conn.close()
    with pytest.raises(Exception, match=f"schema version {SCHEMA_VERSION + 1}"):
        StoreReader.open(path)


def test_the_signals_migration_adds_its_tables_and_readers_of_older_stores_see_none(
    tmp_path: Path
) -> None:
    path = tmp_path / "crawl.sqlite3"
    _version_1_store(path)
    with StoreReader.open(path) as reader:
        assert list(reader.canonical_variants()) == [] and reader.canonical_of(1) is None
    with CrawlStore.open(path) as store:
        assert store.schema_version >= 3
        a, _ = store.add_url("http://h/a")
        b, _ = store.add_url("http://h/a?utm_source=x")
        with store.transaction():
            store.set_canonical(b, a)
        assert list(store.canonical_variants()) == [(b, a)] and store.variants_of(a) == [b]
        with store.transaction():
            store.set_canonical(b, None)
            store.save_lastmod_trust({1: (4, 1)})
            store.set_hreflang(a, {"de": b})
        assert store.canonical_of(b) is None
        assert store.lastmod_trust() == {1: (4, 1)} and store.hreflang_of(a) == {"de": b}


def test_the_pushes_migration_adds_its_table_and_readers_of_older_stores_see_none(
    tmp_path: Path
) -> None:
    path = tmp_path / "crawl.sqlite3"
    _version_1_store(path)
    with StoreReader.open(path) as reader:
        assert reader.waiting_pushes(10) == [] and reader.push_counts() == (0, 0)
    with CrawlStore.open(path) as store:
        assert store.schema_version == SCHEMA_VERSION >= 6
        assert store.add_pushes("h", ["http://h/a", "http://h/b", "http://h/c"]) == 3
        waiting = store.waiting_pushes(2)
        assert [u for _, u in waiting] == ["http://h/a", "http://h/b"]
        store.take_pushes([i for i, _ in waiting])
        assert [u for _, u in store.waiting_pushes(10)] == ["http://h/c"]
        assert store.push_counts() == (3, 2)



def test_pushes_taken_long_ago_are_deleted_as_new_ones_are_taken(tmp_path: Path) -> None:
    path = tmp_path / "crawl.sqlite3"
    with CrawlStore.open(path) as store:
        store.add_pushes("h", ["http://h/old", "http://h/recent"])
        (old, _), (recent, _) = store.waiting_pushes(10)
        store.take_pushes([old, recent])
    conn = sqlite3.connect(path)
    with conn:  # as if the first was taken eight days ago
        conn.execute("UPDATE pushes SET taken = taken - 8 * 86400 WHERE id=?", (old,))
    conn.close()
    with CrawlStore.open(path) as store:
        assert store.push_counts() == (2, 2)
        store.add_pushes("h", ["http://h/next"])
        store.take_pushes([i for i, _ in store.waiting_pushes(10)])
        assert store.push_counts() == (2, 2)  # the old one gone, the recent one kept
