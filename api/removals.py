"""Taking pages out and putting them back: the work behind ``websift remove`` / ``removed`` and
``/admin/removals``, one function each, over one data directory.

The rules live in the crawl store (store/removals.py), written through a connection of their
own: no data directory lock is taken, so they can be changed while ``websift up`` (or a crawl,
an indexing run and a server) runs on the same ``--data``; SQLite's busy timeout waits out the
crawler's open batch (about a second).  The running parts pick the change up themselves: the
server at its next reload check, the crawl at its next batch commit, the indexer at its next
run (``docs/operating.md``).
"""

from __future__ import annotations

from websift.api.errors import RemovalUndone, UnknownRemoval
from websift.core.datadir import DataDir
from websift.crawler.removals import removal_reason, removal_value
from websift.store.crawl_store import CrawlStore
from websift.store.removals import Removal
from websift.store.views import StoreReader

WHO_CLI = "cli"
WHO_ADMIN = "api:admin"  # the one admin token (WEBSIFT_ADMIN_TOKEN)


def add_removal(data: DataDir, kind: str, value: str, who: str, reason: str = "") -> Removal:
    """Record a rule (``kind``: url, host or pattern); RemovalError if the value is unusable."""
    kept = removal_value(kind, value)
    reason = removal_reason(reason)
    with CrawlStore.open(data.store_path) as store:
        return store.add_removal(kind, kept, who, reason)


def undo_removal(data: DataDir, removal_id: int, who: str) -> tuple[Removal, int]:
    """Put removal ``removal_id`` out of force; (its row, pages to be indexed again)."""
    if not data.store_path.exists():
        raise UnknownRemoval(f"no removal {removal_id}: {data.root} has no crawl store")
    with CrawlStore.open(data.store_path) as store:
        found = store.removal(removal_id)
        if found is None:
            raise UnknownRemoval(f"no removal {removal_id}; 'websift removed' lists them")
        if not found.active:
            raise RemovalUndone(f"removal {removal_id} was already undone")
        return store.undo_removal(removal_id, who)


def list_removals(data: DataDir, active_only: bool = False) -> list[Removal]:
    """Every removal, oldest first (or those in force)."""
    if not data.store_path.exists():
        return []
    with StoreReader.open(data.store_path) as store:
        return store.removals(active_only)
