"""Group commit: several crawl steps per SQLite transaction, one WARC fsync per commit.

Question: how do we keep "a row never points at a WARC record that is not on disk" and "a killed
crawl loses nothing it committed" without paying an fsync and a commit per page?

Each step (one page's row, links and OPIC state) runs as a savepoint inside a batch
transaction (``CrawlStore.transaction`` nests as a savepoint), so a failing step undoes only
itself.  The batch commits after ``max_steps`` steps or ``max_age`` seconds, whichever comes
first, and always on close; the WARC file is fsynced just before each commit.  A crash loses at
most the open batch: those URLs are still ``discovered`` in the store and are fetched again by
the next run, and the WARC records they wrote are simply never referenced.

A write error can make SQLite roll the whole open transaction back by itself (a full disk while
it writes the journal does).  The batch is then lost: its steps and the OPIC state written for
them are gone while the frontier in memory still counts them.  From then on every step and
commit raises :class:`BatchLost`: a step run as a transaction of its own would store pages'
cash apart from the virtual page's, whose cash the batch's commit writes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from websift.crawler import settings as S
from websift.store.crawl_store import CrawlStore
from websift.store.errors import BatchLost
from websift.store.warc import WarcWriterFile


class GroupCommit:
    def __init__(
        self,
        store: CrawlStore,
        warc: WarcWriterFile,
        max_steps: int = S.COMMIT_EVERY_STEPS,
        max_age: float = S.COMMIT_EVERY_SECONDS,
    ) -> None:
        self.store = store
        self.warc = warc
        self.max_steps = max(1, max_steps)
        self.max_age = max_age
        self.steps = 0
        self.opened = 0.0
        self.commits = 0
        # writes that belong to the whole batch (the OPIC state its steps changed), run inside
        # the batch transaction just before it commits
        self.before_commit: list[Callable[[], None]] = []
        # what must wait until the batch is durable (a shared frontier's acknowledgements)
        self.after_commit: list[Callable[[], None]] = []
        self.lost = False

    def _check_open(self) -> None:
        """Raise :class:`BatchLost` once the open batch's transaction is gone."""
        if not self.lost and self.steps > 0 and not self.store.in_transaction:
            self.lost = True
        if self.lost:
            raise BatchLost("the open batch was rolled back after a write error")

    @contextmanager
    def step(self) -> Iterator[None]:
        """One crawl step, atomic on its own, committed with its batch."""
        self._check_open()
        if self.steps == 0:
            self.store.begin()
            self.opened = time.monotonic()
        with self.store.transaction():
            yield
        self.steps += 1
        if self.steps >= self.max_steps:
            self.commit()

    def due(self) -> bool:
        return self.steps > 0 and time.monotonic() - self.opened >= self.max_age

    def commit(self) -> None:
        """fsync the WARC records the batch points at, then commit the batch."""
        if self.steps == 0 and not self.store.in_transaction and not self.lost:
            return
        self._check_open()
        self.store.begin()
        for hook in self.before_commit:
            hook()
        self.warc.sync()
        self.store.commit()
        self.steps = 0
        self.commits += 1
        for hook in self.after_commit:
            hook()
