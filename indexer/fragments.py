"""A page's fragments in the docstore, and the one a hit links to.

The defining places of a page (indexer/parse.py ``Fragment``: dt terms, anchored headings, keyed
table rows, elements with an id) are indexed as the ``defs`` field (its text chosen by
``WEBSIFT_DEFS``: the keys, or the keys and their defining text), and their (id, key) pairs are
stored with the document, bounded by MAX_STORED_FRAGMENT_CHARS, in the segment's ``frags.bin``
(a segment from before them has none).  At hit assembly, for the top k only,
:func:`best_fragment` picks the fragment whose key matches the query's terms best, and the hit
links to it (``url#id``), so a reader lands on the definition, not the top of a long page.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence

from indexer.errors import IndexCorrupt
from indexer.parse import Fragment
from indexer.settings import (
    DEFS_DEFAULT,
    DEFS_ENV,
    DOCSTORE_LEVEL,
    MAX_STORED_FRAGMENT_CHARS,
    env_switch,
)

_ROW, _COL = "\n", "\t"


def defs_mode() -> str:
    """What the defs field holds (``WEBSIFT_DEFS``): "key", "text" or "0" (nothing)."""
    mode = env_switch(DEFS_ENV, DEFS_DEFAULT)
    return mode if mode in ("key", "text") else "0"


def defs_field(fragments: Sequence[Fragment], mode: str) -> list[str]:
    """The defs field of a page: one text per fragment (kept apart like anchors)."""
    if mode == "key":
        return [f.key for f in fragments]
    if mode == "text":
        return [f.text or f.key for f in fragments]
    return []


def encode_fragments(fragments: Sequence[Fragment], limit: int = MAX_STORED_FRAGMENT_CHARS
                     ) -> bytes:
    """The (id, key) pairs kept with the document, zlib'd; b"" when there are none."""
    rows: list[str] = []
    size = 0
    for f in fragments:
        if _ROW in f.id or _COL in f.id or not f.key:
            continue  # no URL #id reaches an id with a tab or a newline
        row = f"{f.id}{_COL}{' '.join(f.key.split())}"
        size += len(row) + 1
        if size > limit:
            break
        rows.append(row)
    if not rows:
        return b""
    return zlib.compress(_ROW.join(rows).encode("utf-8", "surrogatepass"), DOCSTORE_LEVEL)


def read_fragments(blob: bytes, name: str = "") -> list[tuple[str, str]]:
    """The (id, key) pairs of a document's stored fragments (:func:`encode_fragments`)."""
    if not blob:
        return []
    try:
        raw = zlib.decompress(blob).decode("utf-8", "surrogatepass")
    except (zlib.error, UnicodeError) as exc:
        raise IndexCorrupt(f"stored document {name} has corrupt fragments ({exc})") from None
    out = []
    for row in raw.split(_ROW):
        fid, sep, key = row.partition(_COL)
        if sep:
            out.append((fid, key))
    return out


def needles(terms: Iterable[str], words: Iterable[str] = ()) -> tuple[str, ...]:
    """Lower-case strings of which a key holding a query term contains one: the terms, the
    typed words, and each term less its last letter (a stem's "i" for "y": ``properti``)."""
    out = {t.lower() for t in terms} | {w.lower() for w in words}
    out |= {t[:-1] for t in out if len(t) > 3}
    return tuple(sorted(x for x in out if x))


def best_fragment(fragments: Sequence[tuple[str, str]], terms: Mapping[str, float],
                  analyse: Callable[[str], list[str]], look: Sequence[str]) -> str | None:
    """The id of the fragment whose key holds the most query weight (``terms``: query term ->
    idf); on a tie the one whose key has fewer other words (``ytick`` over ``ytickmode``'s
    longer text), then the first.  None when no key holds a query term.  Only keys that
    contain one of ``look`` (:func:`needles`) are analysed: analysis is most of the cost."""
    best: tuple[float, int] | None = None
    out: str | None = None
    for fid, key in fragments:
        low = key.lower()
        if not any(n in low for n in look):
            continue
        words = set(analyse(key))
        got = words & terms.keys()
        if not got:
            continue
        rank = (sum(terms[t] for t in got), -(len(words) - len(got)))
        if best is None or rank > best:
            best, out = rank, fid
    return out
