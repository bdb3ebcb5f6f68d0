"""The OPIC frontier: selection among ready hosts, reading, persistence and reload."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from websift.crawler.frontier import Frontier
from websift.ranking.opic import Strategy
from websift.store.crawl_store import CrawlStore, origin_of
from websift.store.schema import META_CLOCK, META_VIRTUAL


def _store(tmp_path: Path) -> CrawlStore:
    return CrawlStore.open(tmp_path / "crawl.sqlite3")


def _add(store: CrawlStore, frontier: Frontier, url: str) -> int:
    uid, _ = store.add_url(url)
    frontier.add(uid, url, store.host_id(origin_of(url)), 0)
    return uid


def test_greedy_picks_the_most_cash_among_ready_hosts(tmp_path: Path) -> None:
    with _store(tmp_path) as store, store.transaction():
        f = Frontier()
        a1 = _add(store, f, "http://a.test/1")
        a2 = _add(store, f, "http://a.test/2")
        b1 = _add(store, f, "http://b.test/1")
        for uid, amount in ((a1, 0.1), (a2, 0.2), (b1, 0.7)):
            f.set_cash(uid, amount)  # from the virtual page, which is left with nothing
        assert f.opic.virtual_cash == pytest.approx(0.0, abs=1e-15)
        host_a, host_b = int(f.host_of[a1]), int(f.host_of[b1])
        assert f.select([host_a, host_b]) == b1
        assert f.select([host_a]) == a2  # b's host is not ready: best of a
        assert f.select([]) is None
        assert f.take(b1) == "http://b.test/1"
        assert f.select([host_b]) is None  # nothing left pending there
        assert f.pending_count() == 2


def test_cycle_and_random_strategies(tmp_path: Path) -> None:
    with _store(tmp_path) as store, store.transaction():
        f = Frontier(strategy=Strategy.CYCLE)
        ids = [_add(store, f, f"http://a.test/{i}") for i in range(4)]
        host = int(f.host_of[ids[0]])
        order = []
        for _ in range(4):
            uid = f.select([host])
            assert uid is not None
            order.append(uid)
            f.take(uid)
        assert order == ids
        g = Frontier(strategy=Strategy.RANDOM, seed=3)
        more = [_add(store, g, f"http://r.test/{i}") for i in range(50)]
        picks = {g.select([int(g.host_of[more[0]])]) for _ in range(30)}
        assert len(picks) > 5 and picks <= set(more)


def test_reading_moves_cash_to_children_and_virtual_page(tmp_path: Path) -> None:
    with _store(tmp_path) as store, store.transaction():
        f = Frontier(virtual_every=1000)
        p = _add(store, f, "http://a.test/")
        c1 = _add(store, f, "http://a.test/c1")
        c2 = _add(store, f, "http://a.test/c2")
        f.distribute_virtual()
        before = f.cash(p)
        assert before > 0
        f.take(p)
        changed = f.read(p, [c1, c2, c2, p])
        assert changed == {p, c1, c2}
        assert f.cash(p) == 0
        assert f.opic.total_cash() == pytest.approx(1.0)
        # a failed page is dangling: all its cash goes to the virtual page, and it gets no more
        virtual = f.opic.virtual_cash
        cash_c1 = f.cash(c1)
        f.take(c1)
        f.read(c1, [], dead=True)
        assert f.opic.virtual_cash == pytest.approx(virtual + cash_c1)
        f.read(c2, [c1])  # a link to a dead page carries nothing to it
        assert f.cash(c1) == 0
        paid = f.distribute_virtual()
        assert paid > 0 and f.cash(c1) == 0 and f.cash(p) > 0
        assert f.opic.total_cash() == pytest.approx(1.0)


def test_persist_and_load_round_trip(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        with store.transaction():
            f = Frontier(virtual_every=2)
            ids = [_add(store, f, f"http://a.test/{i}") for i in range(6)]
            f.distribute_virtual()
            f.persist(store)
            for uid, kids in ((ids[0], ids[1:4]), (ids[1], [ids[0], ids[5]])):
                f.take(uid)
                store.update_page(uid, status="fetched")
                f.read(uid, kids)
                f.persist(store)
            f.persist_all(store)
        g = Frontier.load(store)
        assert g.opic.clock == pytest.approx(f.opic.clock)
        assert float(store.get_meta(META_CLOCK) or 0) == pytest.approx(f.opic.clock)
        assert float(store.get_meta(META_VIRTUAL) or 0) == pytest.approx(f.opic.virtual_cash)
        n = max(ids) + 1
        np.testing.assert_allclose(g.opic.cash[:n], f.opic.cash[:n])
        np.testing.assert_allclose(g.opic.history[:n], f.opic.history[:n])
        assert g.pending_ids() == f.pending_ids() == ids[2:]
        assert g.opic.total_cash() == pytest.approx(1.0)
        stored = sum(p.importance for p in store.pages())
        assert stored == pytest.approx(float(f.opic.importance(np.array(ids)).sum()))
