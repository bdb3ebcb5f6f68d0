"""The crawl store: the SQLite database of URLs, links and hosts, and the WARC files of raw pages.

The crawler writes it; the indexer, ranking and the API read it, only through the methods of
:class:`store.crawl_store.CrawlStore` (and its read-only views).  No other package writes SQL.
"""
