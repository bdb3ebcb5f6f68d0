"""Site owners' pushes (IndexNow) as OPIC evidence: a pushed URL is fetched within seconds.

Question: a site owner said a URL changed (``POST /indexnow``, api/indexnow.py wrote it to the
store's ``pushes`` table); how does the running crawl act on it without a queue of its own?

As the other signals (crawler/signals.py), in the OPIC paper's terms (seed:
opic-adaptive-online-page-importance.txt, section 3.3, cash "taken from the virtual page"):

- a **read** page's remaining refetch wait is cancelled (``Frontier.hasten`` with share 1: the
  owner's word, unlike a sitemap's lastmod, needs no trust: the key proved the owner) and it
  gets ``PUSH_GRANT`` times a live page's mean cash (``Frontier.grant``), so the Greedy pick
  reaches it within the host's politeness delay;
- an **unknown** URL is discovered (depth 1, as a sitemap names it) and gets the same grant, as
  a feed's new item; a known unread one gets the grant.

The crawl reads the waiting pushes after each batch commit and at each idle tick (about every
``LIVE_EVERY`` seconds), at most ``PUSH_BATCH`` at a time, and marks them taken in the same
transaction as what they did to the frontier.  Every crawl on the embedded frontier takes them,
with or without the other signals (with a shared frontier they wait in the store).
"""

from __future__ import annotations

from collections import Counter

from websift.crawler import settings as S
from websift.crawler.frontier import Frontier
from websift.crawler.pipeline import PageRecorder
from websift.store.crawl_store import CrawlStore


class Pushes:
    """Takes the store's waiting pushes into the frontier."""

    def __init__(self, frontier: Frontier, recorder: PageRecorder, store: CrawlStore,
                 stats: Counter[str]) -> None:
        self.frontier = frontier
        self.recorder = recorder
        self.store = store
        self.stats = stats

    def take(self) -> int:
        """Apply the waiting pushes (module doc); how many were taken."""
        waiting = self.store.waiting_pushes(S.PUSH_BATCH)
        if not waiting:
            return 0
        frontier = self.frontier
        with self.recorder.batch.step():
            for _pid, url in waiting:
                uid, entered = self.recorder.discover(url, 1, follow=True)
                if entered:
                    self.stats["pushes/new"] += 1
                elif frontier.was_read(uid):
                    frontier.hasten(uid, 1.0)
                    self.stats["pushes/refresh"] += 1
                elif frontier.is_known(uid):
                    self.stats["pushes/unread"] += 1
                else:  # out of scope now (a removal came), or its address check pending
                    self.stats["pushes/not_entered"] += 1
                    continue
                frontier.grant(uid, S.PUSH_GRANT)
            self.store.take_pushes([pid for pid, _ in waiting])
        self.stats["pushes/taken"] += len(waiting)
        return len(waiting)
