"""What ranking reads from the crawl store, as arrays indexed by URL ID.

Thin I/O: the link graph (nofollow links left out, see :mod:`ranking.graph` for duplicates and
self-links), the OPIC importance the crawler keeps in ``urls.importance``, the seed pages
(depth 0, the default roots of levels), and the pages matching a topic definition.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

import numpy as np

from ranking.graph import LinkGraph, build_graph
from ranking.topic_store import TopicSet
from store.crawl_store import CrawlStore


@dataclass
class StoreArrays:
    graph: LinkGraph
    opic: np.ndarray  # float64 per URL ID
    roots: np.ndarray  # URL IDs of the seeds (depth 0)


def url_ids(store: CrawlStore) -> np.ndarray:
    rows = store.conn.execute("SELECT id FROM urls ORDER BY id").fetchall()
    return np.asarray([r[0] for r in rows], dtype=np.int64)


def load_graph(store: CrawlStore) -> LinkGraph:
    """The link graph over URL IDs 0..max_url_id (node 0 and any unused ID: not present)."""
    n = store.max_url_id() + 1
    present = np.zeros(n, dtype=bool)
    present[url_ids(store)] = True
    src, dst = store.link_arrays(include_nofollow=False)
    return build_graph(src, dst, n, present)


def load_opic(store: CrawlStore, n: int) -> np.ndarray:
    opic = np.zeros(n, dtype=np.float64)
    rows = store.conn.execute("SELECT id, importance FROM urls").fetchall()
    if rows:
        arr = np.asarray(rows, dtype=np.float64)
        opic[arr[:, 0].astype(np.int64)] = arr[:, 1]
    return opic


def load_roots(store: CrawlStore) -> np.ndarray:
    rows = store.conn.execute("SELECT id FROM urls WHERE depth = 0 ORDER BY id").fetchall()
    return np.asarray([r[0] for r in rows], dtype=np.int64)


def load_store_arrays(store: CrawlStore) -> StoreArrays:
    graph = load_graph(store)
    return StoreArrays(graph, load_opic(store, graph.n), load_roots(store))


def _hostname(host: str) -> str:
    """``example.com``, ``https://example.com:8080/`` -> the host[:port] part, lower-cased."""
    text = host.strip().lower()
    if "://" in text:
        text = urlsplit(text).netloc
    return text.rstrip("/")


def topic_page_ids(store: CrawlStore, topic: TopicSet) -> np.ndarray:
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
        for uid, url in store.conn.execute("SELECT id, url FROM urls"):
            if (hosts and urlsplit(url).netloc.lower() in hosts) or any(p.search(url) for p in patterns):
                found.add(int(uid))
    return np.asarray(sorted(found), dtype=np.int64)
