"""The crawl store: the SQLite database of URLs, links and hosts, and the WARC files of raw pages.

The crawler writes it through :class:`store.crawl_store.CrawlStore`; the indexer, ranking and
the API read it through :class:`store.views.StoreReader` (opened read-only).  Both speak in
named methods and plain values (:mod:`store.schema`): no other package sees the connection or
writes SQL (``lint-imports`` and tests/test_layers.py check this).
"""
