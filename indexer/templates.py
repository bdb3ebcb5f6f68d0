"""Boilerplate by template detection: the blocks a host repeats on many of its pages.

A site's pages share a template (navigation, "Next: X, Previous: Y, Up: Z", headers, footers); its
text describes the site, not the page, and counted as content it makes a page match a word that
only its navigation carries, and shows that navigation as the snippet.  Websift measures the
template per host at index time, from the pages themselves, not from a word list: up to
TEMPLATE_SAMPLE_PAGES HTML pages of each host (the ones whose URL ID hashes lowest, so the sample
is spread over the host and the same in every run) are parsed first, and a block template key
(indexer/template_keys.py ``Block.key``: the block's text, or the words outside its links for a
block of links with words between them; a navigation-shaped block, links with short labels between
them, is split into its items first, so "Next: X, Up: Z" on a page where most have "Next: X,
Previous: Y, Up: Z" is template by the items it shares) found on at least TEMPLATE_MIN_SHARE of a
host's sampled pages is template there.  A host with fewer than TEMPLATE_MIN_PAGES sampled pages
has no template, and a block repeated on another host counts nothing here.  A host whose pages
are split over the shards of a partitioned crawl is measured on the sample one store holding
them all would take: each shard's anchor export carries its sampled pages' keys
(indexer/anchor_exchange.py), and the reader takes the lowest of its own and theirs
(:func:`merged_sample`).  Template blocks are
left out of the body field and of the stored snippet text (indexer/docbatch.py).

The result is kept in ``DATA/index/templates.json`` (a checked file, core/checked.py: versioned,
checksummed, written atomically): an incremental run measures only hosts it has not measured, a
full run or ``--rebuild`` measures every host again; an unreadable file is measured again.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from hashlib import blake2b
from pathlib import Path
from typing import Generic, TypeVar

from websift.core import checked
from websift.core.errors import CheckedFileCorrupt, CheckedFileMissing
from websift.indexer.settings import (
    MAX_TEMPLATE_KEYS_PER_HOST,
    TEMPLATE_MIN_PAGES,
    TEMPLATE_MIN_SHARE,
    TEMPLATE_SAMPLE_PAGES,
    TEMPLATES_VERSION,
)

TEMPLATES_FILE = "templates.json"
T = TypeVar("T")
FORMAT = checked.Format("websift-templates", TEMPLATES_VERSION, "index templates.json")


@dataclass(frozen=True)
class HostTemplate:
    sampled: int  # pages of the host that were parsed to measure it
    keys: frozenset[int]  # template keys (Block.key) of its template blocks


@dataclass
class Templates:
    """Per host, its template; hosts never measured have none."""

    hosts: dict[str, HostTemplate] = field(default_factory=dict)
    share: float = TEMPLATE_MIN_SHARE

    def keys(self) -> dict[str, frozenset[int]]:
        """host -> template keys, for hosts that have any (what the analysers need)."""
        return {h: t.keys for h, t in self.hosts.items() if t.keys}


def host_template(pages: Iterable[Iterable[int]], share: float = TEMPLATE_MIN_SHARE,
                  min_pages: int = TEMPLATE_MIN_PAGES) -> HostTemplate:
    """The template of one host from the template keys of its sampled pages."""
    counts: Counter[int] = Counter()
    n = 0
    for keys in pages:
        counts.update(set(keys))
        n += 1
    if n < min_pages:
        return HostTemplate(n, frozenset())
    need = max(2, math.ceil(share * n))
    common = [k for k, c in counts.most_common(MAX_TEMPLATE_KEYS_PER_HOST) if c >= need]
    return HostTemplate(n, frozenset(common))


def merged_sample(own: Iterable[tuple[str, Iterable[int]]],
                  others: Iterable[tuple[str, Iterable[int]]],
                  size: int = TEMPLATE_SAMPLE_PAGES) -> list[Iterable[int]]:
    """The template keys of the ``size`` pages of lowest :func:`sample_rank` among a host's
    sampled pages here (``own``: (URL, keys)) and other shards' (``others``): each shard
    sends its own ``size`` lowest, so these are the sample of one store holding the host's
    pages of every shard (a page two shards fetched counts once)."""
    pages: dict[str, Iterable[int]] = {}
    for url, keys in (*own, *others):
        pages.setdefault(url, keys)
    return [pages[u] for u in sorted(pages, key=sample_rank)[:size]]


def sample_rank(url: str) -> int:
    """The order in which a host's pages enter its sample: a stable hash of the URL (not of
    its ID: stores numbering URLs their own way, a partitioned crawl's shards, sample a host
    alike)."""
    return int.from_bytes(blake2b(url.encode("utf-8", "surrogatepass"),
                                  digest_size=8).digest(), "little")


class HostSampler(Generic[T]):
    """Keeps, per host, the TEMPLATE_SAMPLE_PAGES items of lowest :func:`sample_rank`
    (bounded memory whatever the number of pages)."""

    def __init__(self, size: int = TEMPLATE_SAMPLE_PAGES) -> None:
        self.size = size
        self._heaps: dict[str, list[tuple[int, int]]] = {}  # (-rank, URL ID): a max-heap
        self._items: dict[int, T] = {}

    def offer(self, host: str, url_id: int, item: T, url: str) -> None:
        heap = self._heaps.setdefault(host, [])
        entry = (-sample_rank(url), url_id)
        if len(heap) < self.size:
            heapq.heappush(heap, entry)
        elif entry > heap[0]:
            del self._items[heapq.heapreplace(heap, entry)[1]]
        else:
            return
        self._items[url_id] = item

    def samples(self) -> dict[str, list[T]]:
        """host -> its sampled items, in URL ID order."""
        return {h: [self._items[i] for _, i in sorted(heap, key=lambda e: e[1])]
                for h, heap in self._heaps.items()}


def write_templates(index_dir: Path, templates: Templates) -> None:
    body = {"share": templates.share,
            "hosts": {h: {"sampled": t.sampled, "keys": sorted(f"{k:016x}" for k in t.keys)}
                      for h, t in sorted(templates.hosts.items())}}
    checked.write_json(index_dir / TEMPLATES_FILE, FORMAT, body)


def read_templates(index_dir: Path) -> Templates | None:
    """The stored templates; None when there is no file or an older version's (its keys are
    another scheme's: measured again).  Raises CheckedFileCorrupt / CheckedFileNewer
    (core/checked.py) for a damaged or newer one."""
    path = index_dir / TEMPLATES_FILE
    try:
        got = checked.read_json(path, FORMAT)
    except CheckedFileMissing:
        return None
    if got.version < TEMPLATES_VERSION:
        return None
    body = got.body
    try:
        hosts = {str(h): HostTemplate(int(v["sampled"]), frozenset(int(k, 16) for k in v["keys"]))
                 for h, v in body["hosts"].items()}
        return Templates(hosts, float(body["share"]))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CheckedFileCorrupt(f"{path}: bad template entry ({exc})", path,
                                         "body") from None
