"""Anchor text: the words of links, indexed as a field of the page they point TO.

Brin & Page 1998, section 2.2: "the text of links is treated in a special way ... we associate
it with the page the link points to", which also makes pages that were never fetched findable.
Rules here: self-links are ignored, nofollow links give no anchor text, links from pages marked
as duplicates give none (their canonical page's links count), identical anchor text from one
source page counts once, and empty anchors are skipped.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from crawler.store import CrawlStore
from indexer.parse import squash
from indexer.settings import MAX_ANCHOR_CHARS, MAX_ANCHORS_PER_PAGE

_IN_ANCHORS_SQL = (
    "SELECT l.src, l.anchor FROM links l JOIN urls s ON s.id = l.src "
    "WHERE l.dst = ? AND l.src != l.dst AND l.nofollow = 0 AND l.anchor != '' "
    "AND s.duplicate_of IS NULL ORDER BY l.src, l.rowid"
)


@dataclass
class Anchors:
    texts: list[str]  # one entry per distinct (source, text)
    sources: list[int]  # distinct source IDs

    def best(self) -> str:
        """The most common anchor text (the title of a page known only by its anchors)."""
        if not self.texts:
            return ""
        counts = Counter(t.lower() for t in self.texts)
        top = max(counts.values())
        return next(t for t in self.texts if counts[t.lower()] == top)


def in_anchors(store: CrawlStore, dst: int) -> Anchors:
    """The anchor texts of the links pointing at ``dst``."""
    seen: set[tuple[int, str]] = set()
    texts: list[str] = []
    sources: list[int] = []
    for src, anchor in store.conn.execute(_IN_ANCHORS_SQL, (dst,)):
        text = squash(str(anchor))[:MAX_ANCHOR_CHARS]
        if not text or (src, text.lower()) in seen:
            continue
        seen.add((src, text.lower()))
        texts.append(text)
        if not sources or sources[-1] != src:
            sources.append(int(src))
        if len(texts) >= MAX_ANCHORS_PER_PAGE:
            break
    return Anchors(texts, sources)
