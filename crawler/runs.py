"""What a run was started with, and how it is going: the JSON of its ``crawls`` row.

Question: under which scope was this data directory crawled (so that ``websift recrawl`` and a
resumed crawl apply it), and what is the running crawl doing now (so that ``websift serve`` can
show an operator a crawl that runs for weeks)?

Each run (crawl, recrawl) keeps one JSON object in its ``crawls`` row (``CrawlStore.start_crawl``
/ ``update_crawl`` / ``finish_crawl``)::

    {"scope": {...}, "settings": {...}}                  as it starts
    {"scope": ..., "settings": ..., "live": {...}}       at each batch commit while it runs
    {summary..., "scope": ..., "settings": ..., "live"}  when it ends (crawler/session.py)

``scope`` is the run's :class:`crawler.scope.ScopeConfig`, field by field; ``live`` the figures
of :meth:`crawler.session.CrawlSession.live` (:data:`LIVE_KEYS`).  A killed run's row keeps its
last figures and no ``finished`` time: :func:`read_live` tells it from a running one by their age.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any

from websift.crawler import settings as S
from websift.crawler.errors import ScopeError
from websift.crawler.scope import ScopeConfig
from websift.store.views import StoreReader

FORCED_STOP = "forced_stop"  # finish reason of a run stopped by a second signal

# What ``live`` holds (every figure a number unless said): process ID, run kind, whether it runs
# until stopped, its state ("running", "waiting": nothing due yet, "stopping", or at the end the
# finish reason), start / last update (unix time), pages done, first fetches of pages never read
# (discovery) and refetches of read ones (refresh), pages per second over the run and over the
# last ``RATE_WINDOW`` seconds, requests in flight, failures by reason (dict), the frontier's
# figures (dict, ``Frontier.stats``), the virtual page's cash, the removal rules in force, the
# sites' signals (dict) and the crawling process's garbage collector (dict: its thresholds, and
# its collections by generation with their count, seconds and longest_ms: core/gc_pauses.py).
LIVE_KEYS = (
    "pid", "kind", "continuous", "state", "started", "updated", "pages", "discovery_fetches",
    "refresh_fetches", "pages_per_second", "recent_pages_per_second", "in_flight", "errors",
    "frontier", "virtual_cash", "removals", "signals", "gc",
)


def scope_to_json(scope: ScopeConfig) -> dict[str, Any]:
    """The scope as plain JSON values (tuples become lists)."""
    out: dict[str, Any] = {}
    for f in fields(scope):
        value = getattr(scope, f.name)
        out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


def scope_from_json(value: Any) -> ScopeConfig:
    """The scope a run stored.  A field this websift does not know is refused rather than
    ignored: dropping it could widen the scope (a newer websift's deny list, say)."""
    if not isinstance(value, dict):
        raise ScopeError("the stored crawl scope is not a JSON object")
    known = {f.name: f for f in fields(ScopeConfig)}
    unknown = sorted(set(value) - set(known))
    if unknown:
        raise ScopeError(
            f"the stored crawl scope has settings this websift does not know ({', '.join(unknown)}); "
            "upgrade websift"
        )
    defaults = ScopeConfig()
    kwargs: dict[str, Any] = {}
    for name, item in value.items():
        # JSON has lists only; a field held as a tuple gets its tuple back
        as_tuple = isinstance(item, list) and isinstance(getattr(defaults, name), tuple)
        kwargs[name] = tuple(item) if as_tuple else item
    return ScopeConfig(**kwargs)


def run_record(scope: ScopeConfig, settings: dict[str, Any]) -> dict[str, Any]:
    """The JSON a run starts with."""
    return {"scope": scope_to_json(scope), "settings": settings}


def stored_scope(store: StoreReader) -> ScopeConfig | None:
    """The scope of the newest run that kept one (None: no run did, e.g. an import only)."""
    for _cid, _kind, text in store.crawl_records():
        try:
            record = json.loads(text)
        except ValueError:
            continue  # a summary written before runs kept their scope, or damaged: not a scope
        if isinstance(record, dict) and "scope" in record:
            return scope_from_json(record["scope"])
    return None


@dataclass(frozen=True)
class LiveRun:
    """The newest run's figures as ``websift serve`` reports them."""

    kind: str
    started: float
    finished: float | None
    running: bool  # not finished, and its figures are fresh (a killed run's grow old)
    age: float  # seconds since the figures were written
    figures: dict[str, Any]  # the ``live`` object (LIVE_KEYS); empty before the first commit


def read_live(store: StoreReader, now: float) -> LiveRun | None:
    """The newest run and its live figures, or None when no run was ever recorded."""
    row = store.last_crawl()
    if row is None:
        return None
    kind, started, finished, text = row
    figures: dict[str, Any] = {}
    if text:
        try:
            record = json.loads(text)
        except ValueError:
            record = None
        if isinstance(record, dict) and isinstance(record.get("live"), dict):
            figures = record["live"]
    updated = figures.get("updated")
    age = now - float(updated) if isinstance(updated, int | float) else now - float(started)
    running = finished is None and age <= S.LIVE_STALE_AFTER
    return LiveRun(str(kind), float(started), None if finished is None else float(finished),
                   running, max(0.0, age), figures)
