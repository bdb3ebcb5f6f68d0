"""The query-result cache: the answers to recent searches, keyed by everything that decides them.

Search engines cache results because query streams repeat (Baeza-Yates et al., "The impact of
caching on search engines", SIGIR 2007).  The key (``api.retrieval._cache_key``) holds the
index and ranks generations, so a hot reload makes every older entry unreachable at once (they
age out of the LRU); a topic change is a new ranks generation too.  Entries are immutable
``Outcome`` objects shared by readers.

It is websift's one cache (``core.cache.Cache``) bounded by a count of entries: an entry is one
page of results with snippets (tens of KB).  One instance per application (``app.state``),
never module state; size 0 turns it off.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TypeVar

from websift.core.cache import Cache

V = TypeVar("V")

ResultCache = Cache[Hashable, V]  # ResultCache[Outcome](size)

