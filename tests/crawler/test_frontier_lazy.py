"""The frontier at flat cost: lazy dividends, per-host heaps, refresh, focus, recrawl schedule.

The property test drives a real Frontier on a real CrawlStore through random sequences of
adds, reads (random children, some pages failing), payouts of the virtual page, commits and
reloads, next to an eager reference (ranking.opic.OpicState paying named page sets): every
page's cash agrees to 1e-12, the stored cash (bases plus pending dividends) plus the virtual
page's is 1 after every commit, and Greedy always picks a page with the most cash.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from websift.crawler.focus import FocusError, build_focus
from websift.crawler.frontier import REBUILD_SLACK, Frontier
from websift.ranking.opic import LazyOpicState, OpicParams, OpicState, Strategy
from websift.ranking.topic_store import TermModel, TopicRecord, TopicSet, save_topic
from websift.store.crawl_store import CrawlStore, origin_of
from websift.store.views import StoreReader

HOSTS = ("http://a.test", "http://b.test", "http://c.test")
T0 = 1_700_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


class Reference:
    """Eager OPIC with the same classes: live pages, unread live pages, live focus pages."""

    def __init__(self, params: OpicParams) -> None:
        self.state = OpicState(params, capacity=8)
        self.dead: set[int] = set()
        self.focus: set[int] = set()

    def add(self, uid: int, focus: bool) -> None:
        self.state.add_pages([uid])
        if focus:
            self.focus.add(uid)

    def read(self, uid: int, kids: list[int], dead: bool) -> None:
        live_kids = [k for k in kids if k not in self.dead]
        self.state.read(uid, [] if dead else live_kids)
        if dead:
            self.dead.add(uid)

    def pay(self, discovery_share: float | None) -> None:
        s = self.state
        live = np.asarray([i for i in np.flatnonzero(s.known) if i not in self.dead], dtype=np.int64)
        unread = live[s.reads[live] == 0]
        focus = np.asarray([i for i in live if i in self.focus], dtype=np.int64)
        if discovery_share is not None:
            s.params = OpicParams(s.params.window, discovery_share, s.params.history_decay,
                                  s.params.focus_share)
        s.distribute_virtual(unread, live, focus)


@contextmanager
def _store() -> Iterator[CrawlStore]:
    with tempfile.TemporaryDirectory() as tmp, CrawlStore.open(Path(tmp) / "s.sqlite3") as store:
        yield store


def _new_page(store: CrawlStore, frontier: Frontier, n: int) -> int:
    url = f"{HOSTS[n % 3]}/{'f' if n % 4 == 0 else 'p'}/{n}"
    uid, _ = store.add_url(url)
    frontier.add(uid, url, store.host_id(origin_of(url)), 0)
    return uid


def _check(frontier: Frontier, ref: Reference) -> None:
    ids = frontier.known_ids()
    np.testing.assert_allclose(frontier.opic.cash_of(ids), ref.state.cash[ids], rtol=0, atol=1e-12)
    assert frontier.opic.virtual_cash == pytest.approx(ref.state.virtual_cash, abs=1e-12)
    assert frontier.opic.total_cash() == pytest.approx(1.0, abs=1e-12)
    assert frontier.opic.clock == pytest.approx(ref.state.clock, abs=1e-12)
    pending = frontier.pending_ids()  # read pages whose interval has passed join first
    hosts = list(frontier.host_pending)
    assert sum(frontier.host_pending.values()) == len(pending)
    pick = frontier.select(hosts)
    if not pending:
        assert pick is None
        return
    assert pick in pending
    if frontier.explicit is not None:  # a recrawl: its schedule's order
        assert pick == max(pending, key=lambda u: (frontier.explicit[u], -u))  # type: ignore[index]
        return
    best = float(frontier.opic.cash_of(np.asarray(pending)).max())
    assert frontier.cash(pick) == pytest.approx(best, abs=1e-15)  # Greedy over every queue


OPS = st.lists(
    st.tuples(st.sampled_from(["add", "read", "read", "read", "fail", "pay", "commit", "reload",
                               "revive", "wait"]),
              st.integers(0, 10**6), st.lists(st.integers(0, 10**6), max_size=6)),
    min_size=1, max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(OPS, st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.booleans())
def test_lazy_dividends_match_the_eager_reference_and_the_store_stays_exact(
    ops: list[tuple[str, int, list[int]]], discovery: float, focus_share: float, recrawl: bool
) -> None:
    params = OpicParams(discovery_share=discovery, focus_share=focus_share)
    clock = Clock()
    focus = build_focus([r"/f/"], None, Path("/nonexistent"))

    def load(store: CrawlStore) -> Frontier:
        return Frontier.load(store, params=params, clock=clock, focus=focus,
                             min_refetch_interval=10.0)

    ref = Reference(params)
    with _store() as store:
        frontier = load(store)
        count = 0
        with store.transaction():
            for _ in range(3):
                ref.add(_new_page(store, frontier, count), count % 4 == 0)
                count += 1
            frontier.distribute_virtual()
            ref.pay(None)
            frontier.persist(store)
        store.begin()
        for op, pick, kids in ops:
            known = frontier.known_ids().tolist()
            if op == "add":
                uid = _new_page(store, frontier, count)
                ref.add(uid, count % 4 == 0)
                count += 1
            elif op in ("read", "fail"):
                live = [u for u in known if not frontier.opic.dead[u]]
                if not live:
                    continue
                uid = live[pick % len(live)]
                children = [known[k % len(known)] for k in kids]
                if kids and kids[0] % 3 == 0:  # a page that names a URL never seen: added first
                    children.append(_new_page(store, frontier, count))
                    ref.add(children[-1], count % 4 == 0)
                    count += 1
                frontier.read(uid, children, dead=op == "fail")
                ref.read(uid, [c for c in dict.fromkeys(children) if c != uid], op == "fail")
            elif op == "pay":
                frontier.distribute_virtual()
                ref.pay(frontier.discovery_share)
            elif op == "revive":
                dead = [u for u in known if frontier.opic.dead[u]]
                if dead:
                    uid = dead[pick % len(dead)]
                    frontier.revive(uid, "")
                    ref.dead.discard(uid)
            elif op == "wait":
                clock.now += pick % 30
            elif op in ("commit", "reload"):
                frontier.persist(store)
                store.commit()
                with StoreReader.open(store.path) as reader:
                    assert reader.opic_cash_total() == pytest.approx(1.0, abs=1e-12)
                if op == "reload":
                    frontier = load(store)
                    if recrawl:  # refresh only from here: unread pages get no dividend
                        frontier.schedule_explicit([(u, float(u)) for u in known])
                store.begin()
            _check(frontier, ref)
        frontier.persist(store)
        store.commit()
        with StoreReader.open(store.path) as reader:
            assert reader.opic_cash_total() == pytest.approx(1.0, abs=1e-12)


# ---------------------------------------------------------------------------- units
def _frontier(store: CrawlStore, **kw: object) -> tuple[Frontier, Clock]:
    clock = Clock()
    return Frontier.load(store, clock=clock, **kw), clock  # type: ignore[arg-type]


def _add(store: CrawlStore, f: Frontier, url: str) -> int:
    uid, _ = store.add_url(url)
    f.add(uid, url, store.host_id(origin_of(url)), 0)
    return uid


def test_a_payout_is_constant_time_and_changes_no_row(tmp_path: Path) -> None:
    with CrawlStore.open(tmp_path / "s.sqlite3") as store, store.transaction():
        f, _ = _frontier(store)
        ids = [_add(store, f, f"http://a.test/{i}") for i in range(50)]
        f.persist(store)
        assert not f.dirty
        levels = list(f.opic.levels)
        paid = f.distribute_virtual()
        assert paid == pytest.approx(1.0) and not f.dirty  # nothing to rewrite
        assert f.opic.levels[0] > levels[0] and f.opic.levels[1] > levels[1]
        assert f.opic.cash[ids].sum() == 0  # the bases did not move ...
        assert sum(f.cash(u) for u in ids) == pytest.approx(1.0)  # ... the cash did


def test_a_dividend_does_not_reorder_a_class_and_a_share_does(tmp_path: Path) -> None:
    with CrawlStore.open(tmp_path / "s.sqlite3") as store, store.transaction():
        f, _ = _frontier(store, params=OpicParams(discovery_share=0.5))
        a = [_add(store, f, f"http://a.test/{i}") for i in range(4)]
        f.distribute_virtual()
        late = _add(store, f, "http://a.test/late")  # missed the first dividend
        host = int(f.host_of[a[0]])
        assert f.select([host]) == a[0]  # equal cash: the lowest ID
        f.distribute_virtual()  # nothing to pay out: no change
        reader = f.select([host])
        assert reader is not None
        f.take(reader)
        f.read(reader, [a[3]])  # a[3] gets half of the reader's cash
        assert f.select([host]) == a[3]
        f.distribute_virtual()
        assert f.select([host]) == a[3]  # a dividend moves every unread page alike
        assert f.cash(late) < f.cash(a[1])


def test_stale_entries_are_bounded(tmp_path: Path) -> None:
    with CrawlStore.open(tmp_path / "s.sqlite3") as store, store.transaction():
        f, _ = _frontier(store, min_refetch_interval=float("inf"))
        hub = _add(store, f, "http://a.test/hub")
        others = [_add(store, f, f"http://a.test/{i}") for i in range(20)]
        f.distribute_virtual()
        for i in range(2000):  # every read re-keys the hub: one new entry each time
            page = others[i % len(others)]
            f.read(page, [hub])
            f.revive(page, "")
        hq = f.queues[int(f.host_of[hub])]
        for kind, heap in enumerate(hq.heaps):
            assert len(heap) <= 2 * hq.live[kind] + REBUILD_SLACK + 1
        assert f.select([int(f.host_of[hub])]) == hub


def test_read_pages_come_back_after_the_refetch_interval_and_compete_by_cash(
    tmp_path: Path,
) -> None:
    with CrawlStore.open(tmp_path / "s.sqlite3") as store, store.transaction():
        f, clock = _frontier(store, min_refetch_interval=100.0)
        home = _add(store, f, "http://a.test/")
        leaf = _add(store, f, "http://a.test/leaf")
        host = int(f.host_of[home])
        f.distribute_virtual()
        for uid in (home, leaf):
            f.take(uid)
            f.read(uid, [home])  # each links to the home page, which gathers cash
        unread = _add(store, f, "http://a.test/unread")  # no dividend yet: no cash
        assert f.pending_ids() == [unread]
        assert f.stats()["waiting_refresh"] == 2
        assert f.next_refresh_at() == pytest.approx(T0 + 100.0)
        clock.now = T0 + 99.0
        assert f.pending_count() == 1
        clock.now = T0 + 100.0
        assert f.pending_ids() == [home, leaf, unread]
        stats = f.stats()
        assert (stats["pending_unread"], stats["pending_refresh"]) == (1, 2)
        # one schedule: the richest page goes first, read or not
        order = []
        while (pick := f.select([host])) is not None:
            order.append((pick, f.cash(pick), f.was_read(pick)))
            f.take(pick)
        assert [u for u, _, _ in order] == [u for u, _, _ in sorted(order, key=lambda o: -o[1])]
        assert order[0][0] == home and order[0][2]  # a refresh: the home page has most cash
        assert not dict((u, r) for u, _, r in order)[unread]


def test_pages_seen_unchanged_wait_longer(tmp_path: Path) -> None:
    with CrawlStore.open(tmp_path / "s.sqlite3") as store, store.transaction():
        f, clock = _frontier(store, min_refetch_interval=10.0)
        changing = _add(store, f, "http://a.test/news")
        still = _add(store, f, "http://a.test/static")
        for uid in (changing, still):
            f.take(uid)
            f.read(uid, [])  # first fetch: back after the minimum
        clock.now += 10.0
        assert sorted(f.pending_ids()) == sorted([changing, still])
        for uid, changed in ((changing, True), (still, False)):
            f.take(uid)
            f.read(uid, [], changed=changed)
        start = clock.now
        clock.now = start + 10.0
        assert f.pending_ids() == [changing]
        clock.now = start + 10.0 * 24  # never seen changed: 1 + 23 times the minimum
        assert f.pending_ids() == [changing, still]


def test_dropping_a_host_and_dead_pages(tmp_path: Path) -> None:
    with CrawlStore.open(tmp_path / "s.sqlite3") as store, store.transaction():
        f, _ = _frontier(store)
        a = [_add(store, f, f"http://a.test/{i}") for i in range(3)]
        b = _add(store, f, "http://b.test/")
        assert f.drop_host(int(f.host_of[a[0]])) == 3
        assert f.pending_ids() == [b] and f.pending_hosts() == [int(f.host_of[b])]
        f.distribute_virtual()
        f.take(b)
        f.read(b, [a[0]], dead=True)  # failed: its cash to the virtual page, none to children
        assert f.cash(b) == 0 and f.opic.dead[b] and not f.was_read(a[0])
        assert f.stats()["live"] == 3
        f.distribute_virtual()
        assert f.cash(b) == 0  # dead pages get no dividend
        f.revive(b, "http://b.test/")
        assert f.pending_ids() == [b] and f.stats()["live"] == 4


def test_recrawl_schedule_is_refresh_only(tmp_path: Path) -> None:
    with CrawlStore.open(tmp_path / "s.sqlite3") as store, store.transaction():
        f, _ = _frontier(store)
        ids = [_add(store, f, f"http://a.test/{i}") for i in range(4)]
        f.distribute_virtual()
        for uid in ids[:3]:
            f.take(uid)
            f.read(uid, [ids[3]])
        assert f.schedule_explicit([(ids[0], 1.0), (ids[2], 5.0), (ids[1], 3.0)]) == 3
        host = int(f.host_of[ids[0]])
        discovery_level = f.opic.levels[1]
        new = _add(store, f, "http://a.test/new")  # enters OPIC, not the queue
        assert f.url(new) is None
        order = []
        while (pick := f.select([host])) is not None:
            order.append(pick)
            f.take(pick)
            f.read(pick, [new])
            f.distribute_virtual()
        assert order == [ids[2], ids[1], ids[0]]
        assert f.opic.levels[1] == discovery_level  # discovery share 0: unread pages get
        assert f.opic.levels[0] > 0  # only what every live page gets
        assert f.pending_count() == 0


def test_random_and_cycle_pick_among_the_ready_hosts(tmp_path: Path) -> None:
    with CrawlStore.open(tmp_path / "s.sqlite3") as store, store.transaction():
        f, _ = _frontier(store, strategy=Strategy.CYCLE)
        ids = [_add(store, f, f"http://{h}.test/{i}") for i in range(3) for h in "ab"]
        host_a = int(f.host_of[ids[0]])
        order = []
        while (uid := f.select([host_a])) is not None:
            order.append(uid)
            f.take(uid)
        assert order == ids[0::2]
        f.persist(store)
        g, _ = _frontier(store, strategy=Strategy.RANDOM)  # all six pending again
        assert {g.select([host_a]) for _ in range(40)} == set(ids[0::2])


def test_focus_pages_get_the_focus_share(tmp_path: Path) -> None:
    focus = build_focus([r"/news/"], None, tmp_path)
    assert focus is not None
    with CrawlStore.open(tmp_path / "s.sqlite3") as store, store.transaction():
        f, _ = _frontier(store, params=OpicParams(discovery_share=0.0, focus_share=0.5),
                         focus=focus)
        news = [_add(store, f, f"http://a.test/news/{i}") for i in range(2)]
        other = [_add(store, f, f"http://a.test/other/{i}") for i in range(3)]
        f.distribute_virtual()
        # half to the two news pages, the other half to all five pages
        assert f.cash(news[0]) == pytest.approx(0.25 + 0.1)
        assert f.cash(other[0]) == pytest.approx(0.1)
        assert f.stats()["focus"] == 2
        assert f.select([int(f.host_of[news[0]])]) == news[0]
        f.persist(store)
    with CrawlStore.open(tmp_path / "s.sqlite3") as store:
        g = Frontier.load(store)  # focus membership kept in the store, not re-decided
        assert g.opic.focus[news].all() and not g.opic.focus[other].any()


def test_focus_topic_matches_the_topic_definition(tmp_path: Path) -> None:
    topic = TopicSet("py", urls=("HTTP://Docs.test/Index.html",), hosts=("https://py.test/",),
                     patterns=(r"/python/",))
    save_topic(tmp_path, TopicRecord(topic, TermModel(), 0.0, 1, 0, {}))
    focus = build_focus([r"\.pdf$"], "py", tmp_path)
    assert focus is not None
    assert focus("http://docs.test/Index.html")  # the topic's URL, canonical
    assert focus("https://py.test/anything")  # on the topic's host
    assert focus("http://x.test/python/tips")  # its pattern
    assert focus("http://x.test/a.pdf")  # --focus
    assert not focus("http://x.test/other")
    assert build_focus([], None, tmp_path) is None
    with pytest.raises(FocusError, match="focus topic 'nope'"):
        build_focus([], "nope", tmp_path)
    with pytest.raises(FocusError, match="bad focus pattern"):
        build_focus(["("], None, tmp_path)


def test_lazy_state_keeps_the_eager_api_out() -> None:
    state = LazyOpicState()
    state.add_pages([1, 2])
    with pytest.raises(TypeError, match="pay_virtual"):
        state.distribute_virtual(np.array([1]), np.array([1, 2]))
