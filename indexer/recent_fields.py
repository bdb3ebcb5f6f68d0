"""The fields of the pages an analyser read last, for ``websift index --follow``: a page indexed
again because only its anchor texts changed is not read, parsed and identified again.

The follower indexes the targets of new links in cuts of their own (indexer/follow.py
``TargetsLane``): a fetched page that new pages link to is indexed again whole, its anchor field
changed and nothing else (its WARC record is the one its last version was made from: a page the
store changed since is left to the fetched pages' cuts).  Reading its record, parsing it,
leaving its template out and identifying its language is most of what a page costs
(docs/operating.md); :class:`RecentFields` keeps, per URL ID, what that made (every field but
the anchors, the stored text and fragments, the language) for the pages analysed last, up to a
budget of characters, and gives it back only for the same WARC record and the same template.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple


class PageFields(NamedTuple):
    """What a full document's analysis made of its WARC record, anchors aside."""

    title: str  # the page's own title ('' when it has none: its best anchor stands in)
    text: str  # the stored snippet text
    fields: list[str | list[str]]  # in FIELDS order, the anchor field empty
    frags: bytes  # stored fragments (indexer/fragments.py)
    lang: str | None


def fields_chars(got: PageFields) -> int:
    """Characters (and bytes of fragments) ``got`` holds: what the budget counts."""
    n = len(got.title) + len(got.text) + len(got.frags)
    for v in got.fields:
        n += len(v) if isinstance(v, str) else sum(map(len, v))
    return n


class RecentFields:
    """The last analysed pages' :class:`PageFields` by URL ID, least recently used out first,
    at most ``chars`` characters in all (0: none kept)."""

    def __init__(self, chars: int) -> None:
        self.chars = chars
        self.held = 0
        self.hits = 0  # pages given back (their analysis not done again)
        self._items: OrderedDict[int, tuple[object, object, PageFields, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, url_id: int, warc: object, template: object) -> PageFields | None:
        """The page's fields if they were made from this WARC record with this template."""
        got = self._items.get(url_id)
        if got is None or got[0] != warc or got[1] != template:
            return None
        self._items.move_to_end(url_id)
        self.hits += 1
        return got[2]

    def put(self, url_id: int, warc: object, template: object, got: PageFields) -> None:
        old = self._items.pop(url_id, None)
        if old is not None:
            self.held -= old[3]
        size = fields_chars(got)
        if size > self.chars:
            return
        self._items[url_id] = (warc, template, got, size)
        self.held += size
        while self.held > self.chars:
            _, (_, _, _, gone) = self._items.popitem(last=False)
            self.held -= gone
