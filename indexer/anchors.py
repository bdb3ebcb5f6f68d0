"""Anchor text: the words of links, indexed as a field of the page they point TO.

Brin & Page 1998, section 2.2: "the text of links is treated in a special way ... we associate
it with the page the link points to", which also makes pages that were never fetched findable.
Rules here: self-links are ignored, nofollow links give no anchor text, links from pages marked
as duplicates give none (their canonical page's links count), identical anchor text from one
source page counts once, and empty anchors are skipped.  Anchor boilerplate is skipped too: a
text that a source host puts on links from a large share of its pages ("Next", "Prev", "Up",
"Home", a menu) describes the site's navigation, not its targets (:func:`anchor_boilerplate`,
measured from the link table at index time, ANCHOR_TEMPLATE_MIN_SHARE; a shard of a
partitioned crawl measures it on the sums of every shard's counts, :func:`summed_boilerplate`).
A link to a URL that redirects (one hop, as the crawl store records it) counts for the
redirect's target, and a link to a rel="canonical" variant for its canonical page.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from websift.core.html import squash
from websift.indexer.settings import (
    ANCHOR_TEMPLATE_MIN_PAGES,
    ANCHOR_TEMPLATE_MIN_SHARE,
    MAX_ANCHOR_CHARS,
    MAX_ANCHORS_PER_PAGE,
)
from websift.store.views import StoreReader


@dataclass
class Anchors:
    texts: list[str]  # one entry per distinct (source, text)
    sources: list[int]  # distinct source IDs
    by: list[int] = field(default_factory=list)  # the source ID of each of ``texts``

    def best(self) -> str:
        """The most common anchor text (the title of a page known only by its anchors)."""
        if not self.texts:
            return ""
        counts = Counter(t.lower() for t in self.texts)
        top = max(counts.values())
        return next(t for t in self.texts if counts[t.lower()] == top)


def redirect_aliases(store: StoreReader) -> dict[int, list[int]]:
    """Target URL ID -> the URL IDs that redirect to it, or that are its same-site
    rel="canonical" variants (crawler/canonical.py): links to those count for it."""
    out: dict[int, list[int]] = {}
    for rid, target in store.redirects():
        out.setdefault(target, []).append(rid)
    for vid, canonical in store.canonical_variants():
        out.setdefault(canonical, []).append(vid)
    return out


def anchor_key(text: str) -> str:
    """An anchor text as boilerplate is counted: whitespace-normalised, case-folded, capped."""
    return squash(text)[:MAX_ANCHOR_CHARS].casefold()


def anchor_boilerplate(store: StoreReader, share: float = ANCHOR_TEMPLATE_MIN_SHARE,
                       min_pages: int = ANCHOR_TEMPLATE_MIN_PAGES) -> set[tuple[int, str]]:
    """(source host ID, :func:`anchor_key`) of the anchor texts a host uses on links from at
    least ``share`` of its pages that have anchored links (hosts with ``min_pages`` of them)."""
    pages, rows = store.anchor_use()
    out: set[tuple[int, str]] = set()
    # The rows come one host at a time: only that host's counts are held (a crawl's distinct
    # anchor texts grow with its pages; one host's are few beside them).
    counts: Counter[str] = Counter()
    current = -1

    def flush() -> None:
        out.update((current, k) for k, n in counts.items() if k and n >= share * pages[current])
        counts.clear()

    for host, anchor, n in rows:
        if host != current:
            flush()
            current = host
        if pages.get(host, 0) >= min_pages:
            counts[anchor_key(anchor)] += n  # raw spellings of one key add up
    flush()
    return out


@dataclass
class HostUse:
    """How one source host uses anchor texts: its pages with a followed anchored link, and per
    :func:`anchor_key` the pages using it (what :func:`anchor_boilerplate` measures)."""

    pages: int = 0
    texts: Counter[str] = field(default_factory=Counter)

    def add(self, other: HostUse) -> None:
        self.pages += other.pages
        self.texts.update(other.texts)


def host_anchor_use(store: StoreReader) -> dict[str, HostUse]:
    """Per source host origin (``scheme://host[:port]``: the same in every store), its
    :class:`HostUse`: what a shard exports so that the shards holding a host's pages between
    them measure its navigation texts as one store holding them all would."""
    origins = store.host_origins()
    pages, rows = store.anchor_use()
    out = {origins[h]: HostUse(n) for h, n in pages.items()}
    for host, anchor, n in rows:
        key = anchor_key(anchor)
        if key:
            out[origins[host]].texts[key] += n  # raw spellings of one key add up
    return out


def summed_boilerplate(store: StoreReader, others: Iterable[Mapping[str, HostUse]],
                       share: float = ANCHOR_TEMPLATE_MIN_SHARE,
                       min_pages: int = ANCHOR_TEMPLATE_MIN_PAGES) -> set[tuple[str, str]]:
    """(source host origin, anchor key) of the navigation texts measured on the sum of
    ``store``'s host anchor use and ``others``' (other shards' exports): the pages of a host
    that several shards fetched count once each, as in one store (:func:`anchor_boilerplate`'s
    rule applied to the sums)."""
    total = host_anchor_use(store)
    for use in others:
        for origin, u in use.items():
            total.setdefault(origin, HostUse()).add(u)
    return {(origin, k) for origin, u in total.items() if u.pages >= min_pages
            for k, n in u.texts.items() if n >= share * u.pages}


def local_boilerplate(store: StoreReader, by_origin: set[tuple[str, str]]
                      ) -> set[tuple[int, str]]:
    """``by_origin`` as (this store's host ID, anchor key), for :func:`in_anchors_many`."""
    ids = {o: h for h, o in store.host_origins().items()}
    return {(ids[o], k) for o, k in by_origin if o in ids}


class SourceHosts:
    """Per source URL ID, its host ID and whether it is a duplicate: what decides whether a
    link's anchor text counts (a duplicate's links do not; a host's boilerplate does not).  Read
    with one scan of the urls table when a run starts (``StoreReader.url_hosts``, 5 bytes per
    URL), so each chunk's link rows are not joined with the wide urls table row by row (at a
    million pages that join was half the anchor query's time).  A source the scan did not see
    (a URL a crawl beside the run added since) is looked up when met; a page marked duplicate
    since the scan still counts in this run, as it would had it been read earlier."""

    def __init__(self, store: StoreReader | None) -> None:
        """The scan of ``store``; with None, an empty table that looks every source up."""
        if store is None:
            self.host, self.dup = np.zeros(0, dtype=np.int32), np.zeros(0, dtype=bool)
        else:
            self.host, self.dup = store.url_hosts()

    def of(self, store: StoreReader, srcs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(host IDs, -1 for a URL that does not exist; duplicate flags) of ``srcs``."""
        inside = srcs < len(self.host)
        host = np.full(len(srcs), -1, dtype=np.int32)
        dup = np.zeros(len(srcs), dtype=bool)
        host[inside] = self.host[srcs[inside]]
        dup[inside] = self.dup[srcs[inside]]
        if not inside.all():
            late = store.url_hosts_of(srcs[~inside].tolist())
            for i in np.flatnonzero(~inside).tolist():
                host[i], dup[i] = late.get(int(srcs[i]), (-1, False))
        return host, dup


def in_anchors_many(store: StoreReader, targets: list[int],
                    aliases: dict[int, list[int]],
                    boilerplate: set[tuple[int, str]] | None = None,
                    sources: SourceHosts | None = None) -> dict[int, Anchors]:
    """The anchor texts of the links pointing at each of ``targets`` or at a URL redirecting
    to it, with one store query (``StoreReader.links_to``: sources in ID order), leaving out
    links from duplicates and ``boilerplate`` ((source host ID, anchor key) pairs).  A run
    passes its ``sources``; without, the sources met are looked up."""
    owner: dict[int, int] = {}  # link dst -> the target it counts for
    for t in targets:
        owner[t] = t
        for r in aliases.get(t, ()):
            owner[r] = t
    if not owner:
        return {}
    seen: dict[int, set[tuple[int, str]]] = {t: set() for t in targets}
    out = {t: Anchors([], []) for t in targets}
    rows = store.links_to(list(owner))
    if not rows:
        return out
    srcs = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    h, d = (sources or SourceHosts(None)).of(store, srcs)
    hosts, dups = h.tolist(), d.tolist()
    # An anchor text as stored -> (squashed, case-folded, lower-cased): a page's title is the
    # anchor of most links to it, so the same text comes many times in one read.
    norm: dict[str, tuple[str, str, str]] = {}
    for (src, dst, anchor), host, dup in zip(rows, hosts, dups, strict=True):
        if dup or host < 0:  # a duplicate's links count for its canonical page, not here
            continue
        t = owner[dst]
        a = out[t]
        if src == t or len(a.texts) >= MAX_ANCHORS_PER_PAGE:
            continue
        got = norm.get(anchor)
        if got is None:
            text = squash(anchor)[:MAX_ANCHOR_CHARS]
            got = norm[anchor] = (text, text.casefold(), text.lower())
        text, folded, lowered = got
        if boilerplate and (host, folded) in boilerplate:
            continue
        key = (src, lowered)
        held = seen[t]
        if not text or key in held:
            continue
        held.add(key)
        a.texts.append(text)
        a.by.append(src)
        if not a.sources or a.sources[-1] != src:
            a.sources.append(src)
    return out

