"""Read-only snapshots of the index and the ranks, swapped atomically when newer ones appear.

A :class:`Snapshot` pairs one opened index generation (``indexer.searcher.Searcher``) with one
ranks generation (:class:`RankView`, or ``None`` before ``websift rank`` ran).  Requests lease the
current snapshot (:meth:`SnapshotHolder.lease`), use it, and give it back.

Hot reload: at most every ``reload_check_ms`` the generations on disk are checked (the index
and the ranks manifests: one small read each).  Once :meth:`SnapshotHolder.start` served a
snapshot, the check runs in the holder's reload thread, woken by the first lease after the
interval: no request waits for it, nor for the opening of a newer generation (with
``reload_check_ms`` 0, every request checks and waits: the newest generation, always).  The
new searcher takes over the old one's opened segments and caches where they are the same
(``Searcher.open(previous=...)``, indexer/searcher.py), its most recent decoded lists brought
up to date before it serves; then the holder's reference is replaced in one assignment, so a
request sees the old snapshot or the new one, never a mix.  Leasing takes no lock.  A
manifest or file that is damaged, or written by a newer websift, never takes a serving
snapshot down: that part stays as it was, the failure is counted by error class in
``reload_failures`` (shown by ``/stats``) and looked at again at the next check, not on every
request.  Each swap's wall and CPU time, by phase, go to ``reload_times``
(api/reload_times.py: ``/stats`` ``reload_seconds``).  The old snapshot is closed when its
last lease ends: each opened resource counts the snapshots that use it, each snapshot counts
its leases (a searcher shared by two snapshots, when only the ranks changed, stays open while
either lives).

Removals (``websift remove``, store/removals.py): at the same check the holder reads the removal
rules in force from the crawl store (one small query); when they changed, the searcher is built
again over the same opened segments with the new rules (``Searcher.with_removals``: removal
masks computed once, indexer/removal_masks.py) and swapped in like a new generation.  A store
that cannot be read keeps the rules as they were (counted in ``reload_failures``).

The garbage collector: in a serving process (``settle_heap``) the reload thread freezes what
outlived each swap after collecting what is young (api/gc_policy.py), so the collector's full
passes do not walk the caches and snapshots while searches wait for the GIL.

Shards (``websift serve --shard DIR ...``): the index part is then the live generation of each
shard's index directory opened as one searcher (``Searcher.open_shards``: global statistics);
the ranks, crawl store and topics are those of one data directory (``--ranks``, else the first
shard).  A newer generation in any shard swaps in a new searcher; the shards that did not
change keep their opened segments.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np

from websift.api.gc_policy import HeapSettler
from websift.api.reload_times import ReloadTimes
from websift.core.checked import RereadJson
from websift.core.datadir import DataDir
from websift.core.errors import WebsiftError
from websift.indexer.errors import IndexMissing
from websift.indexer.manifest import read_manifest as read_index_manifest
from websift.indexer.searcher import Searcher
from websift.ranking import ranks as ranks_mod
from websift.ranking.errors import RanksMissing
from websift.ranking.fusion import DEFAULT_SITE_MIX, normalise_mean_one, site_static
from websift.ranking.ranks import Ranks
from websift.store.removals import RemovalRules
from websift.store.views import StoreReader

T = TypeVar("T")
log = logging.getLogger("websift.api")


class Shared(Generic[T]):
    """A resource used by one or more snapshots; ``close`` runs when the last one lets go."""

    def __init__(self, value: T, close: Callable[[T], None]) -> None:
        self.value = value
        self._close = close
        self._refs = 0
        self._lock = threading.Lock()

    def retain(self) -> None:
        with self._lock:
            self._refs += 1

    def release(self) -> None:
        with self._lock:
            self._refs -= 1
            last = self._refs == 0
        if last:
            self._close(self.value)


_VIEW_SERIALS = itertools.count()


@dataclass
class RankView:
    """One ranks generation with its vectors normalised to mean one (``ranking/fusion.py``);
    ``pagerank`` has the host graph's ranks mixed in where the crawl spans several hosts
    (``fusion.site_static``: exactly PageRank times N on one host)."""

    ranks: Ranks
    generation: int
    pagerank: np.ndarray
    opic: np.ndarray
    topics: dict[str, np.ndarray]
    # Unique per view in this process: names its priors for the searcher's caches.
    serial: int = field(default_factory=lambda: next(_VIEW_SERIALS))

    @classmethod
    def load(cls, ranks: Ranks, site_mix: float = DEFAULT_SITE_MIX) -> RankView:
        # a shard ranked by URL scores its part as the whole graph (ranking/rank_by_url.py)
        union = (ranks.manifest.get("stats") or {}).get("union")
        whole = (union or {}).get("topics") or {}
        topics = {name: normalise_mean_one(ranks.topic(name), whole.get(name))
                  for name in ranks.topic_names()}
        return cls(
            ranks=ranks,
            generation=int(ranks.generation),
            pagerank=site_static(ranks.pagerank, ranks.host, ranks.hostrank, site_mix,
                                 union=union),
            opic=normalise_mean_one(ranks.opic, (union or {}).get("opic")),
            topics=topics,
        )


@dataclass
class Snapshot:
    """An index generation and a ranks generation that requests read together."""

    searcher: Shared[Searcher]
    ranks: Shared[RankView] | None
    _leases: int = 0
    _retired: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.searcher.retain()
        if self.ranks is not None:
            self.ranks.retain()

    @property
    def index_generation(self) -> int:
        """The index generation (with shards: their sum, which grows when any of them does)."""
        return int(self.searcher.value.generation)

    @property
    def index_generations(self) -> tuple[int, ...]:
        """The generation of each shard's index (one with a single data directory)."""
        return self.searcher.value.generations

    @property
    def removals_key(self) -> tuple[int, ...]:
        """The removal rules the searcher applies (their IDs): part of a cached answer's key."""
        return self.searcher.value.removals.key

    @property
    def ranks_generation(self) -> int | None:
        return None if self.ranks is None else self.ranks.value.generation

    @property
    def rank_view(self) -> RankView | None:
        return None if self.ranks is None else self.ranks.value

    def _acquire(self) -> bool:
        """Take a lease; False if the snapshot was already retired and let go of its resources."""
        with self._lock:
            if self._retired and self._leases == 0:
                return False
            self._leases += 1
            return True

    def _release(self) -> None:
        with self._lock:
            self._leases -= 1
            done = self._retired and self._leases == 0
        if done:
            self._dispose()

    def _retire(self) -> None:
        with self._lock:
            self._retired = True
            done = self._leases == 0
        if done:
            self._dispose()

    def _dispose(self) -> None:
        self.searcher.release()
        if self.ranks is not None:
            self.ranks.release()


def _open_searcher(shards: Sequence[DataDir], previous: Searcher | None = None,
                   removals: RemovalRules | None = None,
                   manifests: RereadJson | None = None) -> Shared[Searcher]:
    # An index an older analyzer built serves while ``websift index`` rebuilds it (each
    # answer says so: Searcher.outdated), rather than no answer for the rebuild's length.
    if len(shards) == 1:
        return Shared(Searcher.open(shards[0], removals=removals, previous=previous,
                                    manifests=manifests, outdated_ok=True), lambda s: s.close())
    reuse = previous.shards if previous is not None else ()
    opened = Searcher.open_shards([d.index_dir for d in shards], reuse=reuse,
                                  removals=removals, manifests=manifests, outdated_ok=True)
    if previous is not None:
        started = time.perf_counter()
        opened.adopt(previous)
        opened.open_phases["caches"] = time.perf_counter() - started
    return Shared(opened, lambda s: s.close())


def read_removals(data: DataDir) -> RemovalRules:
    """The removal rules in force in ``data``'s crawl store (none without a store)."""
    if not data.store_path.exists():
        return RemovalRules()
    with StoreReader.open(data.store_path) as store:
        return store.removal_rules()


def _index_generations(shards: Sequence[DataDir], manifests: RereadJson | None = None
                       ) -> tuple[int, ...]:
    """Each shard's live index generation (manifest reads only); IndexMissing / IndexCorrupt."""
    return tuple(read_index_manifest(d.index_dir, manifests).generation for d in shards)


def _open_ranks(data: DataDir) -> Shared[RankView] | None:
    try:
        ranks = Ranks.open(data)
    except RanksMissing:
        return None
    return Shared(RankView.load(ranks), lambda _view: None)


class SnapshotHolder:
    """The current snapshot of one data directory, reloaded when a newer generation lands.

    ``shards``: the data directories whose indexes are searched as one (default: ``data``'s);
    ``data`` gives the ranks.
    """

    def __init__(self, data: DataDir, reload_check_ms: int,
                 shards: Sequence[DataDir] = (), settle_heap: bool = False) -> None:
        self.data = data
        self.shards = list(shards) or [data]
        self._interval = reload_check_ms / 1000.0
        self._current: Snapshot | None = None
        self._next_check = 0.0
        self._swap_lock = threading.Lock()
        # The reload thread (started by start()) and what wakes and stops it.
        self._reloader: threading.Thread | None = None
        self._wake = threading.Event()
        self._stopping = False
        self.reloads = 0
        self.reload_cpu_seconds = 0.0  # CPU time the reload thread spent checking and opening
        self.reload_times = ReloadTimes()  # what each swap cost (api/reload_times.py)
        # The manifests the checks poll, parsed again only when their bytes changed (a check
        # that finds nothing new reads two small files); used under the swap lock only.
        self._manifests = RereadJson()
        # Checks that found a manifest or a generation they could not read or open, by error
        # class (IndexCorrupt, IndexNewer, IndexMissing, RanksCorrupt, RanksNewer); the old
        # snapshot keeps serving and the next check tries again.
        self.reload_failures: Counter[str] = Counter()
        # A serving process's reload thread keeps what outlived a swap out of the collector's
        # full passes (api/gc_policy.py); off for a holder inside another program (a test).
        self.heap = HeapSettler() if settle_heap else None

    def _fail(self, exc: WebsiftError, current: Snapshot) -> None:
        """Count a newer generation that cannot be read or opened, by error class; the old
        snapshot keeps serving and the next check (not the next request) tries again."""
        self.reload_failures[type(exc).__name__] += 1
        log.warning("keeping index generation %s, ranks generation %s: %s",
                    current.index_generation, current.ranks_generation, exc)

    def start(self) -> None:
        """Open the live generations now, refusing what exists but cannot be read.

        A server must not start over a corrupt index or ranks, or ones of a newer format: that
        raises ``IndexCorrupt`` / ``RanksCorrupt``.  No index yet is fine: requests get 503 until
        ``websift index`` writes one, which the next check picks up; so is an index an older
        websift analysed, which ``websift index`` rebuilds: it serves meanwhile, each answer
        saying so (``index_outdated``).  Then the reload thread runs the checks (module
        docstring) until :meth:`close`.
        """
        ranks = _open_ranks(self.data)
        try:
            searcher = _open_searcher(self.shards, removals=read_removals(self.data))
        except IndexMissing:
            searcher = None  # the first request that finds one opens it (errors go to it)
        if searcher is not None and searcher.value.outdated:  # websift was upgraded
            log.warning("%s: searches are answered from it, saying so, until websift index "
                        "rebuilds the index (websift up and websift index do it by "
                        "themselves)", searcher.value.outdated)
        if searcher is not None:
            with self._swap_lock:
                self._current = Snapshot(searcher, ranks)
                self._next_check = time.monotonic() + self._interval
        if self._interval > 0:  # with 0 each request checks, and waits for what it opens
            self._reloader = threading.Thread(target=self._reload_forever,
                                              name="websift-reload", daemon=True)
            self._reloader.start()

    def _reload_forever(self) -> None:
        """The reload thread: a check each time a lease finds one due (:meth:`_wake_if_due`).
        A failure that is not the disk's (those :meth:`refresh` counts and survives) is
        counted by class in ``reload_failures`` and logged; the thread goes on."""
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._stopping:
                return
            started = time.thread_time()
            reloads = self.reloads
            try:
                self.refresh(force=True)
            except Exception as exc:  # counted, logged, and the old snapshot serves
                self.reload_failures[type(exc).__name__] += 1
                log.exception("reload check failed; the current snapshot keeps serving")
            if self.heap is not None:
                self.heap.after_check(swapped=self.reloads != reloads)
            self.reload_cpu_seconds += time.thread_time() - started

    def _wake_if_due(self) -> None:
        if time.monotonic() >= self._next_check and not self._wake.is_set():
            self._next_check = time.monotonic() + self._interval
            self._wake.set()

    def check_due(self) -> bool:
        """Whether the next :meth:`refresh` would look at the disk (and maybe open files) in
        the caller's thread: never while the reload thread serves (then it wakes that)."""
        if self._current is None:
            return True
        if self._reloader is not None:
            self._wake_if_due()
            return False
        return time.monotonic() >= self._next_check

    def refresh(self, force: bool = False) -> Snapshot:
        """The current snapshot, first swapping in newer generations if the disk has them.

        The disk is looked at most every ``reload_check_ms``, or now with ``force`` (after this
        process changed a topic).  While a snapshot serves, nothing on disk makes this raise: a
        manifest that is damaged, newer than this websift, or names files that fail their checks
        leaves that part (index or ranks) as it is, counted in ``reload_failures``, and the other
        part still moves on.  With no snapshot yet it raises: ``IndexMissing`` when there is no
        index, the error of a damaged or newer one otherwise.
        """
        now = time.monotonic()
        current = self._current
        if current is not None and not force and self._reloader is not None:
            self._wake_if_due()  # the reload thread looks, no request waits for it
            return current
        if current is not None and not force and now < self._next_check:
            return current
        with self._swap_lock:
            current = self._current
            if current is not None and not force and time.monotonic() < self._next_check:
                return current  # another request checked while we waited for the lock
            # Before anything can fail: a bad file on disk is looked at again next interval,
            # not on every request.
            self._next_check = time.monotonic() + self._interval
            if current is None:
                return self._first()
            return self._check(current)

    def _check(self, current: Snapshot) -> Snapshot:
        """Swap in what changed on disk since ``current`` (:meth:`refresh`, under the swap
        lock); each swap's cost goes to ``reload_times``."""
        started, started_cpu = time.perf_counter(), time.thread_time()
        searcher = current.searcher
        removals = current.searcher.value.removals
        try:
            removals = read_removals(self.data)
        except WebsiftError as exc:  # the store is unreadable now: keep the rules
            self._fail(exc, current)
        try:
            if _index_generations(self.shards, self._manifests) != current.index_generations:
                searcher = _open_searcher(self.shards, current.searcher.value, removals,
                                          self._manifests)
            elif removals.key != current.searcher.value.removals.key:
                searcher = Shared(current.searcher.value.with_removals(removals),
                                  lambda s: s.close())
        except WebsiftError as exc:  # IndexMissing too: the manifest vanished
            self._fail(exc, current)
        ranks = current.ranks
        ranks_started = time.perf_counter()
        try:
            if (ranks_mod.current_generation(self.data, self._manifests)
                    != current.ranks_generation):
                ranks = _open_ranks(self.data)
        except WebsiftError as exc:
            self._fail(exc, current)
        if searcher is current.searcher and ranks is current.ranks:
            return current
        phases = {} if searcher is current.searcher else dict(searcher.value.open_phases)
        if ranks is not current.ranks:
            phases["ranks"] = time.perf_counter() - ranks_started
        fresh = Snapshot(searcher, ranks)
        self._current = fresh  # the atomic swap: one reference assignment
        self.reloads += 1
        current._retire()
        self.reload_times.add(time.perf_counter() - started,
                              time.thread_time() - started_cpu, phases)
        return fresh

    def _first(self) -> Snapshot:
        """Open the first snapshot (there was no index at start-up); errors go to the request."""
        _index_generations(self.shards, self._manifests)  # IndexMissing / IndexCorrupt first
        ranks = _open_ranks(self.data)
        fresh = Snapshot(_open_searcher(self.shards, removals=read_removals(self.data),
                                        manifests=self._manifests), ranks)
        self._current = fresh
        return fresh

    @contextmanager
    def lease(self) -> Iterator[Snapshot]:
        """The current snapshot, kept open until the ``with`` block ends."""
        snap = self.refresh()
        # A swap may retire it between refresh() and _acquire(); then take the newer one.
        while not snap._acquire():
            snap = self.refresh()
        try:
            yield snap
        finally:
            snap._release()

    def close(self) -> None:
        reloader = self._reloader
        if reloader is not None:
            self._stopping = True
            self._wake.set()
            reloader.join()
            self._reloader = None
        with self._swap_lock:
            if self._current is not None:
                self._current._retire()
                self._current = None

