"""The crawl store: schema, versioning, refusal of foreign files, atomic page records."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from websift.core.errors import StoreError
from websift.store.crawl_store import FETCHED, CrawlStore, Link, origin_of
from websift.store.views import StoreReader


def test_urls_get_one_id_each_and_hosts_are_shared(tmp_path: Path) -> None:
    with CrawlStore.open(tmp_path / "s.sqlite3") as store, store.transaction():
        a, created_a = store.add_url("http://a.example/x")
        again, created_again = store.add_url("http://a.example/x")
        b, _ = store.add_url("http://a.example/y")
        assert (a, created_a) == (again, not created_again)
        assert a != b
        assert store.page(a).host_id == store.page(b).host_id  # type: ignore[union-attr]
    assert origin_of("https://h.example:8443/p?q#f") == "https://h.example:8443"


def test_record_fetched_bumps_seq_replaces_links_and_counts_changes(tmp_path: Path) -> None:
    with CrawlStore.open(tmp_path / "s.sqlite3") as store:
        with store.transaction():
            a, _ = store.add_url("http://a.example/")
            b, _ = store.add_url("http://a.example/b")
            c, _ = store.add_url("http://a.example/c")
        s1 = store.record_fetched(a, http_status=200, content_type="text/html",
                                  warc=("f.warc.gz", 0, 10), content_hash="h1",
                                  links=[Link(b, "bee", False), Link(c, "sea", True)])
        s2 = store.record_fetched(a, http_status=200, content_type="text/html",
                                  warc=("f.warc.gz", 10, 10), content_hash="h2",
                                  links=[Link(c, "sea again", False)])
        page = store.page(a)
        assert page is not None
        assert s2 > s1 and page.seq == s2
        assert page.status == FETCHED and page.fetch_count == 2 and page.change_count == 1
        assert store.out_links(a) == [(c, "sea again", False)]
        assert store.in_links(b) == []
        src, dst = store.link_arrays()
        assert list(zip(src.tolist(), dst.tolist(), strict=True)) == [(a, c)]


def test_readonly_open_of_missing_or_empty_store_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"no crawl store at .* run 'websift crawl' first"):
        StoreReader.open(tmp_path / "absent.sqlite3")
    empty = tmp_path / "empty.sqlite3"
    sqlite3.connect(empty).close()
    with pytest.raises(StoreError, match="is empty; run 'websift crawl' first"):
        StoreReader.open(empty)


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    CrawlStore.open(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value='999' WHERE key='schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="schema version 999"):
        CrawlStore.open(path)


def test_foreign_sqlite_and_garbage_files_are_refused(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.sqlite3"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE t(x)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="not a websift crawl store"):
        CrawlStore.open(foreign)
    garbage = tmp_path / "garbage.sqlite3"
    garbage.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="not a readable SQLite database"):
        CrawlStore.open(garbage)


def test_failed_transaction_leaves_nothing(tmp_path: Path) -> None:
    with CrawlStore.open(tmp_path / "s.sqlite3") as store:
        with pytest.raises(RuntimeError), store.transaction():
            store.add_url("http://a.example/")
            raise RuntimeError("boom")
        assert store.url_count() == 0
