"""The indexer's "is this HTML" is the crawler's (core/html.py): a page stored without a type is
not indexed, as the crawler took no links from it; any spelling of an HTML type is."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from testkit.corpus import build_data_dir
from websift.indexer.build import build_index
from websift.indexer.searcher import IndexQuery, Searcher

A = "http://a.example"


def page(word: str) -> str:
    return f"<html><head><title>{word}</title></head><body><p>quince {word}</p></body></html>"


def test_only_html_types_are_indexed_and_a_missing_type_is_not_html(tmp_path: Path) -> None:
    pages = {f"{A}/typed": page("typed"), f"{A}/shouting": page("shouting"),
             f"{A}/xhtml": page("xhtml"), f"{A}/untyped": page("untyped"),
             f"{A}/plain": page("plain")}
    d = build_data_dir(tmp_path / "d", pages, content_types={
        f"{A}/shouting": "TEXT/HTML ; Charset=UTF-8", f"{A}/xhtml": "application/xhtml+xml",
        f"{A}/plain": "text/plain"})
    # What the crawler stores when the server names no type and the bytes were not sniffed as
    # HTML (crawler.pipeline.Fetched.content_type): NULL.
    with closing(sqlite3.connect(d.store_path)) as conn, conn:
        conn.execute("UPDATE urls SET content_type = NULL WHERE url = ?", (f"{A}/untyped",))
    report = build_index(d)
    assert report.skipped["not_html"] == 2  # untyped and plain
    found = {h.url for h in Searcher.open(d).search(IndexQuery("quince", k=10)).hits}
    assert found == {f"{A}/typed", f"{A}/shouting", f"{A}/xhtml"}
