"""Operator removals: which pages are out of search and out of the crawl's scope.

Question: the operator took pages out (``websift remove``, ``POST /admin/removals``); does this
URL fall under one of the rules still in force?

A removal is a row of the ``removals`` table (store/schema.py): a *kind* and a *value* --
``url`` (one canonical URL), ``host`` (a host name and its subdomains, any port) or ``pattern``
(a regular expression searched in the canonical URL, Python ``re`` syntax) -- with who made it,
when and why.  Undoing one keeps its row (``active`` 0, who undid it and when): the list is the
operator's log.

:class:`RemovalRules` is the active rules compiled once, for three readers that each reload them
when they change: the crawler's scope (crawler/scope.py, at each batch commit), the server's
searcher (indexer/removal_masks.py, at each reload check) and the indexing run
(indexer/build.py, which drops removed pages so they do not come back).  ``key`` identifies a
set of rules (rows never change but for ``active``, so the active IDs are enough).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from websift.core.errors import StoreError

URL, HOST, PATTERN = "url", "host", "pattern"
KINDS = (URL, HOST, PATTERN)


@dataclass(frozen=True)
class Removal:
    """One row of ``removals``."""

    id: int
    kind: str
    value: str
    who: str
    created: float
    reason: str
    active: bool
    undone: float | None = None
    undone_by: str | None = None


REMOVAL_COLUMNS = "id, kind, value, who, created, reason, active, undone, undone_by"


def removal_of(row: Sequence[Any]) -> Removal:
    """A ``removals`` row (columns :data:`REMOVAL_COLUMNS`) as a :class:`Removal`."""
    uid, kind, value, who, created, reason, active, undone, undone_by = row
    return Removal(int(uid), str(kind), str(value), str(who), float(created), str(reason),
                   bool(active), None if undone is None else float(undone),
                   None if undone_by is None else str(undone_by))


def url_host(url: str) -> str:
    """The lower-case host of a URL, without port (as ``site:`` and the segments spell it)."""
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


class RemovalRules:
    """The active removals, compiled: ``matches(url)`` in a set lookup, a few suffix tests and
    one search per pattern.  ``url_ids``: the store's IDs of the removed URLs it knows."""

    def __init__(self, removals: Iterable[Removal] = (), url_ids: Iterable[int] = ()) -> None:
        active = [r for r in removals if r.active]
        self.removals = active
        self.key: tuple[int, ...] = tuple(sorted(r.id for r in active))
        self.urls = frozenset(r.value for r in active if r.kind == URL)
        self.hosts = frozenset(r.value for r in active if r.kind == HOST)
        self._suffixes = tuple("." + h for h in self.hosts)
        patterns = []
        for r in active:
            if r.kind == PATTERN:
                try:
                    patterns.append(re.compile(r.value))
                except re.error as exc:
                    raise StoreError(f"removal {r.id}: bad regular expression {r.value!r}: "
                                     f"{exc}") from None
        self.patterns = tuple(patterns)
        self.url_ids = np.unique(np.fromiter(url_ids, dtype=np.int64))

    def __bool__(self) -> bool:
        return bool(self.removals)

    def host_removed(self, host: str) -> bool:
        """Is this (lower-case, portless) host, or a domain it is under, removed?"""
        return host in self.hosts or (bool(self._suffixes) and host.endswith(self._suffixes))

    def pattern_removed(self, url: str) -> bool:
        return any(p.search(url) for p in self.patterns)

    def matches(self, url: str) -> bool:
        """Does a rule in force take this canonical URL out?"""
        if not self.removals:
            return False
        if url in self.urls or self.pattern_removed(url):
            return True
        return bool(self.hosts) and self.host_removed(url_host(url))


def matching_ids(rule: Removal, urls: Iterable[tuple[int, str]]) -> list[int]:
    """The IDs of ``urls`` (ID, URL) that ``rule`` covers (whether or not it is active)."""
    one = RemovalRules([Removal(**{**rule.__dict__, "active": True})])
    return [uid for uid, url in urls if one.matches(url)]
