"""One global URL ID space over stores that number URLs each their own way, built in columns.

Question: which URLs of several crawl stores are the same URL?  Input: each store's
``(URL ID, URL)`` rows, streamed.  Output: per store an array ``local URL ID -> global ID``
(-1: no such URL) and the number of global IDs; the first store's URLs get the first global IDs
in its ID order, then every URL the next store adds, in its ID order (as a dict keyed by URL
would number them).

How: each URL is read once and reduced to a 128-bit BLAKE2b fingerprint (two uint64 columns);
no URL string outlives its chunk.  The fingerprints of all stores are sorted together
(``np.lexsort``, stable), equal neighbours are one URL, and each group's first row numbers it.
Memory: about 64 bytes per (store, URL) row at the peak of the sort, whatever the URLs' length
(a dict holds every distinct URL string and an entry for it, 150-250 bytes each);
``scripts/benchmarks/bench_url_join.py`` measures both.

Fingerprint collisions: the join keys on the whole 128 bits.  Two URLs whose first 64 bits agree
but whose second 64 differ (about n^2 / 2^65 pairs among n URLs: expected 0.03 at 1e9) are kept
apart and counted in :attr:`UrlJoin.collisions_64`; two different URLs with all 128 bits equal
(about n^2 / 2^129: 1e-21 at 1e9) would be taken as one; BLAKE2b is a cryptographic hash, so
a crawled site cannot craft such a pair.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import islice

import numpy as np

from websift.store.views import StoreReader

FINGERPRINT_BYTES = 16  # two uint64 columns per URL
URL_CHUNK = 1 << 16  # URLs fingerprinted at a time (their strings are dropped after)


def fingerprints(urls: Sequence[str]) -> np.ndarray:
    """The 128-bit BLAKE2b fingerprints of ``urls`` (UTF-8) as a (k, 2) uint64 array."""
    blake = hashlib.blake2b
    raw = b"".join([blake(u.encode("utf-8", "surrogatepass"),
                          digest_size=FINGERPRINT_BYTES).digest() for u in urls])
    return np.frombuffer(raw, dtype="<u8").reshape(-1, 2)


@dataclass(frozen=True)
class StoreKeys:
    """A store's URL IDs (ascending) and their fingerprints, row by row."""

    ids: np.ndarray  # int64
    keys: np.ndarray  # (k, 2) uint64
    size: int  # max URL ID + 1: the length of the store's map


def store_keys(rows: Iterable[tuple[int, str]], size: int) -> StoreKeys:
    """Fingerprint ``(URL ID, URL)`` rows, ``URL_CHUNK`` at a time."""
    ids: list[np.ndarray] = []
    keys: list[np.ndarray] = []
    it = iter(rows)
    while chunk := list(islice(it, URL_CHUNK)):
        ids.append(np.fromiter((r[0] for r in chunk), dtype=np.int64, count=len(chunk)))
        keys.append(fingerprints([r[1] for r in chunk]))
        del chunk
    if not ids:
        return StoreKeys(np.zeros(0, dtype=np.int64), np.zeros((0, 2), dtype=np.uint64), size)
    return StoreKeys(np.concatenate(ids), np.concatenate(keys), size)


def read_store_keys(store: StoreReader) -> StoreKeys:
    return store_keys(store.urls(), store.max_url_id() + 1)


@dataclass(frozen=True)
class UrlJoin:
    """Per store, its URL ID -> the global ID (-1: no such URL); ``n`` global IDs."""

    maps: list[np.ndarray]
    n: int
    collisions_64: int  # neighbouring URLs equal in the first 64 bits only (kept apart)


def join_keys(stores: Sequence[StoreKeys]) -> UrlJoin:
    """Global IDs for the stores' fingerprints (see the module docstring)."""
    keys = np.concatenate([s.keys for s in stores]) if stores else np.zeros((0, 2), np.uint64)
    total = keys.shape[0]
    if total == 0:
        return UrlJoin([np.full(s.size, -1, dtype=np.int64) for s in stores], 0, 0)
    order = np.lexsort((keys[:, 1], keys[:, 0]))  # stable: a group's first row is its earliest
    hi = keys[order, 0]
    lo = keys[order, 1]
    del keys
    new = np.empty(total, dtype=bool)
    new[0] = True
    same_hi = hi[1:] == hi[:-1]
    np.logical_or(~same_hi, lo[1:] != lo[:-1], out=new[1:])
    collisions = int(np.count_nonzero(new[1:] & same_hi))
    del hi, lo, same_hi
    first = order[new]  # each URL's earliest row, in fingerprint order
    number = np.empty(first.size, dtype=np.int64)
    number[np.argsort(first, kind="stable")] = np.arange(first.size, dtype=np.int64)
    del first
    group = np.cumsum(new, dtype=np.int64)
    group -= 1
    del new
    gid = np.empty(total, dtype=np.int64)
    gid[order] = number[group]
    del order, group, number
    maps = []
    start = 0
    for s in stores:
        m = np.full(s.size, -1, dtype=np.int64)
        m[s.ids] = gid[start : start + s.ids.size]
        start += s.ids.size
        maps.append(m)
    return UrlJoin(maps, int(gid.max()) + 1, collisions)


def join_stores(stores: Sequence[StoreReader]) -> UrlJoin:
    """:func:`join_keys` over the stores' URLs (read one store at a time)."""
    return join_keys([read_store_keys(s) for s in stores])
