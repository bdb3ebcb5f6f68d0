"""What ranking reads from the crawl store, as arrays indexed by URL ID.

Thin I/O: the link graph (nofollow links left out, see :mod:`ranking.graph` for duplicates and
self-links), the OPIC importance the crawler keeps in ``urls.importance``, the seed pages
(depth 0, the default roots of levels), and the pages matching a topic definition.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

import numpy as np

from websift.ranking.graph import LinkGraph, build_graph
from websift.ranking.topic_store import TopicSet
from websift.store.views import StoreReader


@dataclass
class StoreArrays:
    graph: LinkGraph
    opic: np.ndarray  # float64 per URL ID
    roots: np.ndarray  # URL IDs of the seeds (depth 0)


def load_graph(store: StoreReader) -> LinkGraph:
    """The link graph over URL IDs 0..max_url_id (node 0 and any unused ID: not present)."""
    n = store.max_url_id() + 1
    present = np.zeros(n, dtype=bool)
    present[store.url_ids()] = True
    src, dst = store.link_arrays(include_nofollow=False)
    return build_graph(src, dst, n, present)


def load_store_arrays(store: StoreReader) -> StoreArrays:
    graph = load_graph(store)
    return StoreArrays(graph, store.importance_by_id(graph.n), store.ids_at_depth(0))


def _hostname(host: str) -> str:
    """``example.com``, ``https://example.com:8080/`` -> the host[:port] part, lower-cased."""
    text = host.strip().lower()
    if "://" in text:
        text = urlsplit(text).netloc
    return text.rstrip("/")


class UrlSource(Protocol):
    """What :func:`topic_page_ids` reads: a crawl store, or a link export's URL table."""

    def url_id(self, url: str) -> int | None: ...

    def urls(self) -> Iterator[tuple[int, str]]: ...


def topic_page_ids(store: UrlSource, topic: TopicSet) -> np.ndarray:
    """URL IDs of the store's pages in T_k: exact URLs, pages on the hosts, URLs the patterns
    match (``re.search``).  Sorted, unique."""
    found: set[int] = set()
    for url in topic.urls:
        uid = store.url_id(url)
        if uid is not None:
            found.add(uid)
    hosts = {_hostname(h) for h in topic.hosts}
    patterns = [re.compile(p) for p in topic.patterns]
    if hosts or patterns:
        for uid, url in store.urls():
            if (hosts and urlsplit(url).netloc.lower() in hosts) or any(p.search(url) for p in patterns):
                found.add(uid)
    return np.asarray(sorted(found), dtype=np.int64)
