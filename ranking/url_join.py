"""One global URL ID space over stores that number URLs each their own way, built in columns.

Question: which URLs of several crawl stores are the same URL?  Input: each store's
``(URL ID, URL)`` rows, streamed.  Output: per store an array ``local URL ID -> global ID``
(-1: no such URL) and the number of global IDs; the first store's URLs get the first global IDs
in its ID order, then every URL the next store adds, in its ID order (as a dict keyed by URL
would number them).

How: each URL is read once and reduced to a 128-bit fingerprint (two keyed 64-bit SipHash
values, :func:`fingerprints`); no URL string outlives its chunk.  The fingerprints of all
stores are sorted together (``np.lexsort``, stable), equal neighbours are one URL, and each
group's first row numbers it.
Memory: about 50 bytes per (store, URL) row at the peak of the sort, whatever the URLs' length
(a dict holds every distinct URL string and an entry for it, 150-250 bytes each);
``scripts/benchmarks/bench_url_join.py`` measures both.

Fingerprint collisions: the join keys on the whole 128 bits.  Two URLs whose first 64 bits agree
but whose second 64 differ (about n^2 / 2^65 pairs among n URLs: expected 0.03 at 1e9) are kept
apart and counted in :attr:`UrlJoin.collisions_64`; two different URLs with all 128 bits equal
(about n^2 / 2^129: 1e-21 at 1e9) would be taken as one.  SipHash is keyed with a secret
random key (Python's hash randomisation), so a crawled site cannot craft such a pair (with
``PYTHONHASHSEED`` fixed the key is known, and a pair still costs about 2^64 hashes).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import islice

import numpy as np

from websift.store.views import StoreReader

URL_CHUNK = 1 << 14  # URLs fingerprinted at a time (their strings are dropped after)


def fingerprints(urls: Sequence[str]) -> np.ndarray:
    """128-bit fingerprints of ``urls`` as a (k, 2) uint64 array: Python's keyed string hash
    (SipHash, PEP 456, its key random per process) of the URL and of the URL with a NUL
    appended.  Equal URLs get equal fingerprints within one process only: a join is one."""
    out = np.empty((len(urls), 2), dtype=np.int64)
    out[:, 0] = np.fromiter(map(hash, urls), dtype=np.int64, count=len(urls))
    out[:, 1] = np.fromiter((hash(u + "\0") for u in urls), dtype=np.int64, count=len(urls))
    return out.view(np.uint64)


def stable_fingerprints(urls: Sequence[str]) -> np.ndarray:
    """128-bit fingerprints of ``urls`` as a (k, 2) uint64 array, the same in every process:
    BLAKE2b with a 16-byte digest of the URL's UTF-8 bytes (RFC 7693), the two halves read
    big-endian.  Link exports (ranking/link_export.py) carry these, so exports written by
    different machines join; a join over stores alone uses the faster :func:`fingerprints`.
    Crafting two URLs with one digest costs about 2^64 BLAKE2b evaluations."""
    raw = b"".join([hashlib.blake2b(u.encode("utf-8", "surrogatepass"), digest_size=16).digest()
                    for u in urls])
    return np.frombuffer(raw, dtype=">u8").astype(np.uint64).reshape(len(urls), 2)


@dataclass(frozen=True)
class StoreKeys:
    """A store's URL IDs (ascending) and their fingerprints, row by row."""

    ids: np.ndarray  # int64
    keys: np.ndarray  # (k, 2) uint64
    size: int  # max URL ID + 1: the length of the store's map


def store_keys(rows: Iterable[tuple[int, str]], size: int, *,
               stable: bool = False) -> StoreKeys:
    """Fingerprint ``(URL ID, URL)`` rows, ``URL_CHUNK`` at a time (``stable``: with
    :func:`stable_fingerprints`, to join with link exports)."""
    hashing = stable_fingerprints if stable else fingerprints
    ids: list[np.ndarray] = []
    keys: list[np.ndarray] = []
    it = iter(rows)
    while chunk := list(islice(it, URL_CHUNK)):
        ids.append(np.fromiter((r[0] for r in chunk), dtype=np.int64, count=len(chunk)))
        keys.append(hashing([r[1] for r in chunk]))
        del chunk
    if not ids:
        return StoreKeys(np.zeros(0, dtype=np.int64), np.zeros((0, 2), dtype=np.uint64), size)
    return StoreKeys(np.concatenate(ids), np.concatenate(keys), size)


def read_store_keys(store: StoreReader, *, stable: bool = False) -> StoreKeys:
    return store_keys(store.urls(), store.max_url_id() + 1, stable=stable)


@dataclass(frozen=True)
class UrlJoin:
    """Per store, its URL ID -> the global ID (-1: no such URL); ``n`` global IDs."""

    maps: list[np.ndarray]
    n: int
    collisions_64: int  # neighbouring URLs equal in the first 64 bits only (kept apart)


def join_keys(stores: Iterable[StoreKeys]) -> UrlJoin:
    """Global IDs for the stores' fingerprints (see the module docstring).  ``stores`` is
    consumed one at a time: from a generator, no store's keys outlive their copy here."""
    ids: list[np.ndarray] = []
    his: list[np.ndarray] = []
    los: list[np.ndarray] = []
    sizes: list[int] = []
    for s in stores:
        ids.append(s.ids)
        his.append(np.ascontiguousarray(s.keys[:, 0]))
        los.append(np.ascontiguousarray(s.keys[:, 1]))
        sizes.append(s.size)
        del s
    hi = np.concatenate(his) if his else np.zeros(0, dtype=np.uint64)
    del his
    lo = np.concatenate(los) if los else np.zeros(0, dtype=np.uint64)
    del los
    total = hi.size
    if total == 0:
        return UrlJoin([np.full(size, -1, dtype=np.int64) for size in sizes], 0, 0)
    order = np.lexsort((lo, hi))  # stable: a group's first row is its earliest
    hi = hi[order]
    lo = lo[order]
    new = np.empty(total, dtype=bool)
    new[0] = True
    same_hi = hi[1:] == hi[:-1]
    del hi
    np.logical_or(~same_hi, lo[1:] != lo[:-1], out=new[1:])
    del lo
    collisions = int(np.count_nonzero(new[1:] & same_hi))
    del same_hi
    first = order[new]  # each URL's earliest row, in fingerprint order
    number = np.empty(first.size, dtype=np.int64)
    number[np.argsort(first)] = np.arange(first.size, dtype=np.int64)
    del first
    group = np.cumsum(new, dtype=np.int64)
    del new
    group -= 1
    gid = np.empty(total, dtype=np.int64)
    gid[order] = number[group]
    del order, group
    maps = []
    start = 0
    for local, size in zip(ids, sizes, strict=True):
        m = np.full(size, -1, dtype=np.int64)
        m[local] = gid[start : start + local.size]
        start += local.size
        maps.append(m)
    return UrlJoin(maps, int(number.size), collisions)

