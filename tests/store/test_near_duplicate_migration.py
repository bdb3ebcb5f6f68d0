"""Schema version 7: near duplicates must have one title (crawler/dedup.py).  A store marked by
the SimHash alone is upgraded in place: its near duplicates are unmarked (each with a new seq,
so the next index run indexes them) and their plain fingerprints dropped; exact copies and
rel="canonical" variants stay marked."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from websift.store.crawl_store import CrawlStore
from websift.store.schema import FETCHED, SCHEMA_VERSION
from websift.store.views import StoreReader


def _version_6_store(path: Path) -> dict[str, int]:
    """Pages as a crawler before version 7 marked them."""
    with CrawlStore.open(path) as store, store.transaction():
        ids = {name: store.add_url(f"http://a.example/{name}")[0]
               for name in ("first", "near", "exact", "variant", "alone")}
        for name, uid in ids.items():
            store.update_page(uid, status=FETCHED, fetch_count=1, seq=store.next_seq(),
                              content_hash=f"hash-{name}", simhash=1000 + uid)
        store.update_page(ids["near"], duplicate_of=ids["first"])  # other bytes, close SimHash
        store.update_page(ids["exact"], duplicate_of=ids["first"], content_hash="hash-first")
        store.update_page(ids["variant"], duplicate_of=ids["first"])
        store.set_canonical(ids["variant"], ids["first"])  # it names "first" its canonical
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value='6' WHERE key='schema_version'")
    conn.commit()
    conn.close()
    return ids


def test_near_duplicates_by_the_simhash_alone_are_unmarked_and_indexed_again(
        tmp_path: Path) -> None:
    path = tmp_path / "crawl.sqlite3"
    ids = _version_6_store(path)
    with StoreReader.open(path) as reader:
        assert reader.schema_version == 6
        before = {name: reader.page(uid) for name, uid in ids.items()}
        seq = int(reader.get_meta("seq") or 0)
    with CrawlStore.open(path) as store:
        assert store.schema_version == SCHEMA_VERSION == 7
        after = {name: store.page(uid) for name, uid in ids.items()}
        assert int(store.get_meta("seq") or 0) == seq + 1  # one page unmarked
    near = after["near"]
    assert near is not None and near.duplicate_of is None and near.simhash is None
    assert near.seq == seq + 1  # after every seq an index run has seen: indexed next
    for name in ("exact", "variant"):  # still copies of "first"
        page = after[name]
        assert page is not None and page.duplicate_of == ids["first"]
        assert page.simhash == before[name].simhash and page.seq == before[name].seq  # type: ignore[union-attr]
    for name in ("first", "alone"):
        assert after[name] == before[name]
