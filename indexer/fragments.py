"""A page's fragments in the docstore, and the one a hit links to.

The defining places of a page (indexer/fragment_extract.py ``Fragment``: dt terms, anchored
headings, keyed table rows, elements with an id, empty named anchors keyed by their id's words)
are indexed as the ``defs`` field (its text chosen by IndexSettings.defs: the keys, or the keys
and their defining text), and their (id, key) pairs are
stored with the document, bounded by MAX_STORED_FRAGMENT_CHARS, in the segment's ``frags.bin``
(a segment from before them has none).  Each key is analysed at index time and stored
with its terms; at hit assembly, for the top k only and only for a hit whose defs field holds a
query term, :meth:`StoredFragments.best` picks the fragment whose key holds the query best, and the hit
links to it (``url#id``), so a reader lands on the definition, not the top of a long page.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence

from websift.indexer.errors import IndexCorrupt
from websift.indexer.fragment_extract import Fragment
from websift.indexer.settings import (
    DOCSTORE_LEVEL,
    MAX_STORED_FRAGMENT_CHARS,
)

_ROW, _COL = "\n", "\t"


def defs_field(fragments: Sequence[Fragment], mode: str) -> list[str]:
    """The defs field of a page: one text per fragment (kept apart like anchors); ``mode``:
    IndexSettings.defs ("key", "text" or "0": nothing)."""
    if mode == "key":
        return [f.key for f in fragments]
    if mode == "text":
        return [f.text or f.key for f in fragments]
    return []


def encode_fragments(fragments: Sequence[Fragment], analyse: Callable[[str], list[str]],
                     limit: int = MAX_STORED_FRAGMENT_CHARS) -> bytes:
    """The (id, key, key's terms) rows kept with the document, zlib'd; b"" when there are
    none.  The terms are analysed here, once, so a query never analyses a key."""
    rows: list[str] = []
    size = 0
    for f in fragments:
        if _ROW in f.id or _COL in f.id or not f.key:
            continue  # no URL #id reaches an id with a tab or a newline
        key = " ".join(f.key.split())
        row = f"{f.id}{_COL}{key}{_COL}{' '.join(dict.fromkeys(analyse(key)))}"
        size += len(row) + 1
        if size > limit:
            break
        rows.append(row)
    if not rows:
        return b""
    return zlib.compress(_ROW.join(rows).encode("utf-8", "surrogatepass"), DOCSTORE_LEVEL)


class StoredFragments:
    """One document's fragments as the searcher keeps them (cached): ids, keys, and for each
    term the keys that hold it."""

    def __init__(self, rows: Sequence[tuple[str, str, list[str]]]) -> None:
        self.ids = [r[0] for r in rows]
        self.n_terms = [len(r[2]) for r in rows]
        self.where: dict[str, list[int]] = {}
        for i, (_, _, terms) in enumerate(rows):
            for t in terms:
                self.where.setdefault(t, []).append(i)
        self._bytes = 200 + sum(len(r[0]) + 60 + 70 * len(r[2]) for r in rows)

    def size(self) -> int:
        """Estimated bytes (the cache's bound)."""
        return self._bytes

    def best(self, terms: Mapping[str, float]) -> str | None:
        """The id of the fragment whose key holds the most query weight (``terms``: query
        term -> idf); on a tie the one whose key has fewer other terms (``ytick`` over a
        longer ``ytickmode`` key), then the first.  None when no key holds a query term."""
        if len(terms) == 1:  # the common case: the fewest other terms, then the first
            (only,) = terms
            rows = self.where.get(only)
            return self.ids[min(rows, key=self.n_terms.__getitem__)] if rows else None
        weight: dict[int, float] = {}
        held: dict[int, int] = {}
        for t, idf in terms.items():
            for i in self.where.get(t, ()):
                weight[i] = weight.get(i, 0.0) + idf
                held[i] = held.get(i, 0) + 1
        if not weight:
            return None
        i = max(weight, key=lambda j: (weight[j], held[j] - self.n_terms[j], -j))
        return self.ids[i]


def read_fragments(blob: bytes, analyse: Callable[[str], list[str]], name: str = ""
                   ) -> list[tuple[str, str, list[str]]]:
    """The (id, key, key's terms) rows of a document's stored fragments
    (:func:`encode_fragments`; ``analyse`` gives the terms of a row stored without them)."""
    if not blob:
        return []
    try:
        raw = zlib.decompress(blob).decode("utf-8", "surrogatepass")
    except (zlib.error, UnicodeError) as exc:
        raise IndexCorrupt(f"stored document {name} has corrupt fragments ({exc})") from None
    out = []
    for row in raw.split(_ROW):
        parts = row.split(_COL)
        if len(parts) >= 2:
            terms = parts[2].split() if len(parts) > 2 else analyse(parts[1])
            out.append((parts[0], parts[1], terms))
    return out
