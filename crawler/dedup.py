"""Duplicate detection: exact (content hash) and near-duplicate (SimHash over word shingles).

The crawling slides (searching-the-web, "Crawling efficiency") list duplicates among the pages a
crawler should discard, found by "fingerprints or k-shingles".  Exact duplicates are caught by a
SHA-256 of the body (:func:`content_hash`).  Near duplicates (the same page with a different date
line, session banner or ad) by Charikar's SimHash: each ``k``-word shingle is hashed to 64 bits,
every bit position sums +1/-1 over the distinct shingles, and the fingerprint keeps the sign of
each sum.
Similar texts get fingerprints a few bits apart (Hamming distance), unrelated ones about 32.

A near duplicate is the same document changed a little, so it has the same title: the
fingerprint the crawler stores (:func:`text_fingerprint`) is the text's SimHash XOR 64 bits of
the page's title (:func:`title_key`: whitespace collapsed, case folded; 0 for no title).  Two
pages of one title are as far apart as their texts' SimHashes; two of different titles about 32
bits, never within the near-duplicate distance but by chance (about 4e-15).  Without it, pages
whose navigation outweighs their own text were taken for copies of each other and left out of
the index: in a crawl of the Rust documentation (29,785 pages; rustdoc and mdBook), 1,036 of the
1,050 near-duplicate pairs had different titles ("Structs - Rust By Example" and "Types - Rust
By Example": short pages under mdBook's full table of contents; ``hash_map::Keys`` and
``hash_map::Iter``: small pages listing the same 75 ``Iterator`` methods), and 14 the same.
A store from before it is upgraded (store/schema.py, version 7): the pages it marked near
duplicates (not exact copies, not canonical variants) are unmarked, to be indexed at the next
run, and their plain fingerprints dropped.

Lookup (:class:`NearDuplicateIndex`) splits the 64 bits into 4 bands of 16: two fingerprints
within Hamming distance 3 agree exactly on at least one band (pigeonhole), so only documents
sharing a band are compared.

SQLite's INTEGER is a signed 64-bit number, so fingerprints are handed out signed
(:func:`to_signed64`); every function here accepts either form.

Short texts: a SimHash of a handful of words says little (two unrelated 5-word pages land a few
bits apart more often than chance suggests, and one changed word moves a large share of the
shingles).  Texts with fewer than :data:`MIN_TOKENS` tokens are therefore never reported as near
duplicates: pass ``tokens=`` to :meth:`NearDuplicateIndex.add` and ``find`` (from
:func:`text_fingerprint`), or store NULL as the simhash of such pages.  Exact copies of short
pages are still caught by the content hash.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import partial
from itertools import repeat
from operator import methodcaller

import numpy as np

SHINGLE_SIZE = 3  # words per shingle
MIN_TOKENS = 8  # fewer tokens: the SimHash is not trusted for near-duplicate detection
NEAR_DUPLICATE_DISTANCE = 3  # max Hamming distance of near duplicates (the banding guarantees it)
BANDS = 4  # NearDuplicateIndex splits fingerprints into this many bands
_BAND_BITS = 64 // BANDS
_BAND_MASK = (1 << _BAND_BITS) - 1
_MASK64 = (1 << 64) - 1
_TOKEN_RE = re.compile(r"\w+")


def to_signed64(value: int) -> int:
    """A 64-bit fingerprint as SQLite stores it (two's complement, -2**63 .. 2**63-1)."""
    value &= _MASK64
    return value - (1 << 64) if value >> 63 else value


def to_unsigned64(value: int) -> int:
    """A 64-bit fingerprint as a non-negative int (0 .. 2**64-1)."""
    return value & _MASK64


def content_hash(body: bytes) -> str:
    """Hex SHA-256 of a response body: equal hashes are exact duplicates."""
    return hashlib.sha256(body).hexdigest()


def text_fingerprint_tokens(text: str) -> list[str]:
    """The lower-case word tokens of a text (Unicode word characters), in order."""
    return _TOKEN_RE.findall(text.lower())


def _shingles(tokens: list[str], shingle: int) -> list[str]:
    """The *set* of ``shingle``-word shingles (Broder), in first-seen order.

    A set, not a bag: weighting by frequency lets a few shingles repeated all over long pages
    ("of the", code prompts) dominate every bit, and on the Python documentation it put unrelated
    pages (ctypes, unittest.mock examples) 3 bits apart; with the set the closest unrelated pair
    is 14 bits apart and edits are caught as often."""
    n = len(tokens)
    if n <= shingle:
        return [" ".join(tokens)] if tokens else []
    # the i-th shingle joins tokens[i], tokens[i + 1], ...: zipped shifted slices, no per-shingle
    # Python frame
    return list(dict.fromkeys(map(" ".join, zip(*(tokens[i : n - shingle + 1 + i]
                                                    for i in range(shingle)), strict=True))))


_blake2b_64 = partial(hashlib.blake2b, digest_size=8)
_digest = methodcaller("digest")


def simhash_tokens(tokens: list[str], shingle: int = SHINGLE_SIZE) -> int:
    """Charikar SimHash (signed 64-bit) of a token list; 0 for no tokens."""
    if shingle < 1:
        raise ValueError(f"shingle size must be at least 1, not {shingle}")
    shingles = _shingles(tokens, shingle)
    if not shingles:
        return 0
    # Each shingle's 64-bit hash (BLAKE2b: stable across processes, unlike hash()), in maps
    # of C functions: no Python frame per shingle.
    digests = b"".join(map(_digest, map(_blake2b_64, map(
        str.encode, shingles, repeat("utf-8"), repeat("surrogatepass")))))
    bits = np.unpackbits(np.frombuffer(digests, dtype=np.uint8).reshape(len(shingles), 8), axis=1)
    # Bit set in more than half of the shingles <=> the +1/-1 sum is positive.
    ones = bits.sum(axis=0, dtype=np.int64)
    packed = np.packbits(ones * 2 > len(shingles))
    return to_signed64(int.from_bytes(packed.tobytes(), "big"))


def simhash(text: str, shingle: int = SHINGLE_SIZE) -> int:
    """64-bit SimHash of a text's word shingles, as a signed int64 (see :func:`to_signed64`)."""
    return simhash_tokens(text_fingerprint_tokens(text), shingle)


@dataclass(frozen=True)
class TextFingerprint:
    simhash: int  # signed 64-bit
    tokens: int  # number of word tokens it was computed from

    @property
    def reliable(self) -> bool:
        """Enough tokens for near-duplicate detection (see the module doc)."""
        return self.tokens >= MIN_TOKENS


def title_key(title: str) -> int:
    """64 bits of a page's title, whitespace collapsed and case folded (BLAKE2b); 0 for an
    empty title."""
    folded = " ".join(title.split()).casefold()
    if not folded:
        return 0
    return int.from_bytes(_blake2b_64(folded.encode("utf-8", "surrogatepass")).digest(), "big")


def text_fingerprint(text: str, shingle: int = SHINGLE_SIZE, *, title: str = ""
                     ) -> TextFingerprint:
    """SimHash (XOR the page's :func:`title_key`: near duplicates have one title, module
    doc) and token count in one pass (what the crawler stores and indexes)."""
    tokens = text_fingerprint_tokens(text)
    return TextFingerprint(to_signed64(simhash_tokens(tokens, shingle) ^ title_key(title)),
                           len(tokens))


def hamming(a: int, b: int) -> int:
    """Number of differing bits of two 64-bit fingerprints (signed or unsigned)."""
    return ((a ^ b) & _MASK64).bit_count()


class NearDuplicateIndex:
    """Fingerprints of documents seen so far, looked up by band (4 x 16 bits).

    ``min_tokens``: documents (and queries) with fewer tokens than this are ignored, so tiny
    pages are never near duplicates of each other.  The token count is given as ``tokens=`` to
    :meth:`add` and :meth:`find`; when it is not given the fingerprint is trusted.
    """

    def __init__(self, min_tokens: int = MIN_TOKENS) -> None:
        self.min_tokens = min_tokens
        self._bands: list[dict[int, list[int]]] = [{} for _ in range(BANDS)]
        self._fingerprints: dict[int, int] = {}  # doc_id -> unsigned fingerprint
        self._order: dict[int, int] = {}  # doc_id -> insertion rank (ties go to the earliest)

    def __len__(self) -> int:
        return len(self._fingerprints)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._fingerprints

    def _too_short(self, tokens: int | None) -> bool:
        return tokens is not None and tokens < self.min_tokens

    def add(self, doc_id: int, fingerprint: int, tokens: int | None = None) -> None:
        """Index a document's fingerprint (ignored when it has fewer than ``min_tokens``);
        re-adding a document replaces its fingerprint."""
        if self._too_short(tokens):
            return
        if doc_id in self._fingerprints:
            self._remove(doc_id)
        fp = to_unsigned64(fingerprint)
        self._fingerprints[doc_id] = fp
        self._order.setdefault(doc_id, len(self._order))
        for band, table in enumerate(self._bands):
            table.setdefault((fp >> (band * _BAND_BITS)) & _BAND_MASK, []).append(doc_id)

    def _remove(self, doc_id: int) -> None:
        fp = self._fingerprints.pop(doc_id)
        for band, table in enumerate(self._bands):
            key = (fp >> (band * _BAND_BITS)) & _BAND_MASK
            bucket = table[key]
            bucket.remove(doc_id)
            if not bucket:
                del table[key]

    def find(
        self,
        fingerprint: int,
        max_distance: int = NEAR_DUPLICATE_DISTANCE,
        tokens: int | None = None,
        exclude: int | None = None,
    ) -> int | None:
        """An indexed document within ``max_distance`` bits (the closest; ties: the earliest
        added), or None.  ``exclude`` skips one document ID (the one being checked, on refetch).

        Up to ``BANDS - 1`` bits the band lookup finds every match; beyond that it scans all."""
        if self._too_short(tokens):
            return None
        fp = to_unsigned64(fingerprint)
        if max_distance < BANDS:
            candidates: set[int] = set()
            for band, table in enumerate(self._bands):
                bucket = table.get((fp >> (band * _BAND_BITS)) & _BAND_MASK)
                if bucket:
                    candidates.update(bucket)
        else:
            candidates = set(self._fingerprints)
        best: tuple[int, int, int] | None = None  # (distance, rank, doc_id)
        for doc_id in candidates:
            if doc_id == exclude:
                continue
            distance = (fp ^ self._fingerprints[doc_id]).bit_count()
            if distance <= max_distance:
                key = (distance, self._order[doc_id], doc_id)
                if best is None or key < best:
                    best = key
        return None if best is None else best[2]
