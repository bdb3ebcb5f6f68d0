"""Anchor text read with the run's source table (indexer/anchors.SourceHosts) is what it is
without it, on a real SQLite store; a source added after the table was read still counts."""

from __future__ import annotations

from pathlib import Path

from websift.indexer.anchors import Anchors, SourceHosts, in_anchors_many, redirect_aliases
from websift.store.crawl_store import CrawlStore
from websift.store.schema import REDIRECT, Link
from websift.store.views import StoreReader


def _fetch(store: CrawlStore, uid: int, links: list[Link], **kw: object) -> None:
    store.record_fetched(uid, http_status=200, content_type="text/html",
                         warc=("f.warc.gz", uid * 10, 10), content_hash=f"h{uid}", links=links,
                         **kw)  # type: ignore[arg-type]


def _texts(got: dict[int, Anchors]) -> dict[int, tuple[list[str], list[int]]]:
    return {t: (a.texts, a.sources) for t, a in got.items()}


def test_source_table_gives_the_same_anchors_and_sees_late_sources(tmp_path: Path) -> None:
    path = tmp_path / "crawl.sqlite3"
    with CrawlStore.open(path) as store:
        with store.transaction():
            t, r, s1, s2, dup = (store.add_url(f"http://a.example/{x}")[0]
                                 for x in ("t", "r", "s1", "s2", "dup"))
            other = store.add_url("http://b.example/o")[0]
            store.update_page(r, status=REDIRECT, redirect_to=t)
        _fetch(store, s2, [Link(t, "Second", False), Link(r, "via redirect", False)])
        _fetch(store, s1, [Link(t, "one", False), Link(t, "nf", True), Link(t, "Menu", False)])
        _fetch(store, other, [Link(t, "Menu", False), Link(s1, "first", False)])
        _fetch(store, dup, [Link(t, "copy", False)], duplicate_of=s1)
    with StoreReader.open(path) as reader:
        host_a = int(reader.url_hosts()[0][s1])
        boiler = {(host_a, "menu")}  # a.example's navigation, not b.example's
        table = SourceHosts(reader)
        aliases = redirect_aliases(reader)
        plain = _texts(in_anchors_many(reader, [t, s1], aliases, boiler))
        tabled = _texts(in_anchors_many(reader, [t, s1], aliases, boiler, table))
    assert plain == tabled
    # no duplicate's "copy", no nofollow, a.example's "Menu" left out, b.example's kept
    assert plain[t] == (["one", "Second", "via redirect", "Menu"], [s1, s2, other])
    assert plain[s1] == (["first"], [other])
    # A page fetched after the table was read (a crawl beside the run): looked up when met.
    with CrawlStore.open(path) as store:
        with store.transaction():
            late = store.add_url("http://c.example/late")[0]
        _fetch(store, late, [Link(t, "late one", False)])
    with StoreReader.open(path) as reader:
        assert late >= len(table.host)
        got = _texts(in_anchors_many(reader, [t], aliases, boiler, table))
    assert got[t] == (["one", "Second", "via redirect", "Menu", "late one"],
                      [s1, s2, other, late])
