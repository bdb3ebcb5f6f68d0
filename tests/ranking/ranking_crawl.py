"""A small crawl in a real data directory for ranking tests: the real crawl store, real WARC files."""

from __future__ import annotations

import hashlib
from pathlib import Path

from websift.core.datadir import DataDir
from websift.store.crawl_store import CrawlStore, Link
from websift.store.warc import WarcWriterFile

PY = "http://py.example/"
COOK = "http://cook.example/"


def page_html(title: str, words: str) -> bytes:
    return f"<html><head><title>{title}</title></head><body><h1>{title}</h1><p>{words}</p>" \
        "</body></html>".encode()


# url -> (title, body words, [(target, anchor, nofollow)])
SITE: dict[str, tuple[str, str, list[tuple[str, str, bool]]]] = {
    PY: ("Python home", "python snakes interpreter programming", [
        (PY + "tutorial", "tutorial", False), (PY + "library", "library", False),
        (PY + "tutorial", "tutorial again", False),  # a duplicate link counts once
        (PY, "self", False),  # a self-link is dropped
        (COOK, "cooking", False),
    ]),
    PY + "tutorial": ("Python tutorial", "python programming functions classes", [
        (PY, "home", False), (PY + "library", "the library", False),
    ]),
    PY + "library": ("Python library", "python modules interpreter programming", [
        (PY, "home", False), (PY + "missing", "never fetched", False),
    ]),
    COOK: ("Cooking home", "recipes soup bread oven kitchen", [
        (COOK + "soup", "soup", False), (PY, "a nofollow link", True),
    ]),
    COOK + "soup": ("Soup recipes", "soup recipes onion kitchen", [
        (COOK, "home", False), (COOK + "bread", "bread", False),
    ]),
    COOK + "bread": ("Bread recipes", "bread oven flour recipes", [
        (COOK, "home", False), (PY + "tutorial", "learn python while it bakes", False),
    ]),
}
SEEDS = (PY, COOK)


def build_crawl(root: Path) -> DataDir:
    data = DataDir.create(root)
    writer = WarcWriterFile(data.warc_dir)
    with CrawlStore.open(data.store_path) as store:
        with store.transaction():
            for url in SEEDS:
                store.add_url(url, depth=0)
            for url in SITE:
                store.add_url(url, depth=1)
            for _, (_, _, links) in SITE.items():
                for target, _, _ in links:
                    store.add_url(target, depth=2)
        bodies = {url: page_html(title, words) for url, (title, words, _) in SITE.items()}
        locs = {url: writer.write_response(url, 200, "OK", [("Content-Type", "text/html")], body)
                for url, body in bodies.items()}
        writer.sync()  # once, before the rows that point into the records
        for url, (_, _, links) in SITE.items():
            body, loc = bodies[url], locs[url]
            uid = store.url_id(url)
            assert uid is not None
            with store.transaction():
                store.record_fetched(
                    uid, http_status=200, content_type="text/html",
                    warc=(loc.file, loc.offset, loc.length),
                    content_hash=hashlib.sha256(body).hexdigest(),
                    links=[Link(store.url_id(t) or 0, a, nf) for t, a, nf in links],
                )
                store.update_page(uid, importance=0.1 * len(links))
    writer.close()
    return data


def change_links(store_path: Path) -> None:
    """A later fetch in a partitioned crawl's shard (tests/ranking/test_dask_by_url.py's
    hosts): a1/1 links elsewhere, a1/2 lost its links, a2/new appeared: 3 pages, 4 links."""
    with CrawlStore.open(store_path) as store, store.transaction():
        one = store.add_url("http://a1.example/1", depth=1)[0]
        two = store.add_url("http://a1.example/2", depth=1)[0]
        new = store.add_url("http://a2.example/new", depth=1)[0]
        for uid, targets in ((one, ["http://b2.example/1", "http://a2.example/new"]),
                             (two, []), (new, ["http://a1.example/1", "http://b1.example/4"])):
            links = [Link(store.add_url(t, depth=2)[0], "", False) for t in targets]
            store.record_fetched(uid, http_status=200, content_type="text/html", warc=None,
                                 content_hash=f"changed-{uid}", links=links)
