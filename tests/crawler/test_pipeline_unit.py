"""PageRecorder on its own: what each outcome of a fetch leaves in the store, WARC and OPIC.

Real parts in ``tmp_path`` (crawl store, WARC writer, frontier, group commit); the responses
are plain ``Fetched`` values, as the spider would hand them over.  What another connection can
read is checked after the batch commits, so "stored" means committed, not merely written.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from websift.crawler.dedup import NearDuplicateIndex
from websift.crawler.frontier import Frontier
from websift.crawler.groupcommit import GroupCommit
from websift.crawler.pipeline import Fetched, PageRecorder
from websift.crawler.robots import RobotsPolicy
from websift.crawler.scope import Scope, ScopeConfig
from websift.crawler.urls import host_of, port_of
from websift.store.crawl_store import CrawlStore, Page, StoreReader
from websift.store.warc import WarcLocation, WarcWriterFile, read_response

A = "http://127.0.0.2:8001"
T = 1_700_000_000.0
HTML = [("Content-Type", "text/html; charset=utf-8")]


@dataclass
class Parts:
    store: CrawlStore
    warc: WarcWriterFile
    frontier: Frontier
    batch: GroupCommit
    recorder: PageRecorder
    stats: Counter[str]
    path: Path
    warc_dir: Path

    def seed(self, url: str) -> int:
        """A URL in the frontier with cash (as a crawl's seeds get it)."""
        with self.store.transaction():
            uid, entered = self.recorder.discover(url, 0, follow=True)
            assert entered
            self.frontier.distribute_virtual()
            self.frontier.persist(self.store)
        return uid

    def fetched(
        self, uid: int, url: str, body: bytes, *, status: int = 200,
        headers: list[tuple[str, str]] | None = None,
    ) -> Fetched:
        return Fetched(
            uid=uid, url=url, status=status, headers=HTML if headers is None else headers,
            body=body, fetched_at=T,
        )

    def total_cash(self) -> float:
        return self.frontier.opic.total_cash()

    # What another connection sees: only what has been committed.
    def row(self, url: str) -> Page:
        with StoreReader.open(self.path) as reader:
            page = reader.page_by_url(url)
        assert page is not None, f"{url} is not committed"
        return page

    def stored(self, url: str) -> bool:
        with StoreReader.open(self.path) as reader:
            return reader.page_by_url(url) is not None

    def links(self, src: int) -> list[tuple[str, str, bool]]:
        """(target URL, anchor, nofollow) of a page's committed out-links, sorted."""
        with StoreReader.open(self.path) as reader:
            urls = dict(reader.urls())
            return sorted((urls[dst], a, n) for dst, a, n in reader.out_links(src))

    def committed_cash(self) -> float:
        with StoreReader.open(self.path) as reader:  # bases + pending dividends + virtual
            return reader.opic_cash_total()


@pytest.fixture
def parts(tmp_path: Path) -> Iterator[Parts]:
    path = tmp_path / "crawl.sqlite3"
    store = CrawlStore.open(path)
    warc = WarcWriterFile(tmp_path / "warc")
    frontier = Frontier()
    scope = Scope(ScopeConfig(allow_private=True, fences=(r"/fenced",), max_url_length=200))

    def judge(url: str, depth: int) -> str | None:
        return scope.check(url, depth) or scope.check_address(host_of(url), port_of(url))

    stats: Counter[str] = Counter()
    batch = GroupCommit(store, warc, max_steps=1000, max_age=3600.0)
    recorder = PageRecorder(
        store, warc, frontier, judge, stats, near=NearDuplicateIndex(), batch=batch,
        max_url_length=200,
    )
    yield Parts(store, warc, frontier, batch, recorder, stats, path, tmp_path / "warc")
    batch.commit()
    warc.close()
    store.close()


def test_a_page_is_stored_with_its_links_and_its_cash_goes_to_its_children(parts: Parts) -> None:
    uid = parts.seed(A + "/")
    cash = float(parts.frontier.cash(uid))
    assert cash > 0 and parts.total_cash() == pytest.approx(1.0)
    body = (
        b"<html><head><title>home</title></head><body>"
        b'<a href="/a">first</a> <a href="b">second</a> <a href="/a">again</a>'
        b' <a rel="nofollow" href="/c">nofollow</a> <a href="/fenced/x">fenced</a>'
        b' <a href="/' + b"y" * 300 + b'">too long</a> <a href="/">self</a>'
        b"</body></html>"
    )
    parts.recorder.page(parts.fetched(uid, A + "/", body))
    # nothing is visible to another connection before the batch commits
    assert parts.row(A + "/").status == "discovered"
    parts.batch.commit()
    page = parts.row(A + "/")
    assert (page.status, page.http_status, page.content_type) == ("fetched", 200, "text/html")
    assert page.warc_file is not None and page.warc_offset is not None
    assert page.warc_length is not None
    location = WarcLocation(page.warc_file, page.warc_offset, page.warc_length)
    record = read_response(parts.warc_dir, location)
    assert record.body == body and record.url == A + "/"
    assert parts.links(uid) == [
        (A + "/", "self", False),
        (A + "/a", "again", False),
        (A + "/a", "first", False),
        (A + "/b", "second", False),
        (A + "/c", "nofollow", True),
        (A + "/fenced/x", "fenced", False),
    ]
    fenced = parts.row(A + "/fenced/x")
    assert (fenced.status, fenced.error) == ("out_of_scope", "fence")
    assert not parts.stored(A + "/" + "y" * 300)
    assert parts.stats["links/too_long_not_stored"] == 1
    # followed, in-scope children: /a and /b (once each; the self-link carries nothing)
    frontier = parts.frontier
    ids = {url: parts.row(A + url).id for url in ("/a", "/b", "/c")}
    assert frontier.url(ids["/a"]) == A + "/a" and frontier.url(ids["/b"]) == A + "/b"
    assert frontier.url(ids["/c"]) is None
    assert frontier.cash(ids["/a"]) == pytest.approx(cash / 3)
    assert frontier.cash(uid) == 0.0
    assert parts.total_cash() == pytest.approx(1.0)
    assert parts.committed_cash() == pytest.approx(1.0)
    assert parts.stats["outcome/fetched"] == 1


def test_exact_copies_are_marked_duplicates_of_the_first(parts: Parts) -> None:
    body = b"<html><body><p>" + b"the same words on two pages " * 5 + b"</p></body></html>"
    first, second = parts.seed(A + "/one"), parts.seed(A + "/two")
    parts.recorder.page(parts.fetched(first, A + "/one", body))
    parts.recorder.page(parts.fetched(second, A + "/two", body))
    parts.batch.commit()
    assert parts.row(A + "/one").duplicate_of is None
    assert parts.row(A + "/two").duplicate_of == first
    assert parts.stats["outcome/duplicate_exact"] == 1


def test_near_copies_are_duplicates_only_under_one_title(parts: Parts) -> None:
    # A site's navigation (mdBook's table of contents) outweighs each page's own few words:
    # the texts are near copies, but pages of other titles are other documents.
    nav = "".join(f'<li><a href="/ch{i}.html">Chapter {i}: {w} and more {w}</a></li>'
                  for i, w in enumerate(["structs", "types", "traits", "generics", "closures",
                                         "iterators", "modules", "crates", "macros", "tests"]
                                        * 30))

    def page(title: str, words: str) -> bytes:
        return (f"<html><head><title>{title}</title></head><body><nav><ol>{nav}</ol></nav>"
                f"<main><h1>{title}</h1><p>{words}</p></main></body></html>").encode()

    pages = {"/structs": page("Structs", "Structs hold named fields."),
             "/types": page("Types", "Types name kinds of values."),
             "/types-again": page("Types", "Types name kinds of values!")}  # other bytes
    ids = {path: parts.seed(A + path) for path in pages}
    for path, body in pages.items():
        parts.recorder.page(parts.fetched(ids[path], A + path, body))
    parts.batch.commit()
    assert parts.row(A + "/structs").duplicate_of is None
    assert parts.row(A + "/types").duplicate_of is None
    assert parts.row(A + "/types-again").duplicate_of == ids["/types"]
    assert parts.stats["outcome/duplicate_near"] == 1


def test_other_types_are_archived_not_parsed_and_x_robots_tag_applies(parts: Parts) -> None:
    uid = parts.seed(A + "/doc.pdf")
    body = b'%PDF-1.4 <a href="/hidden">not a link</a>'
    headers = [("Content-Type", "application/pdf"), ("X-Robots-Tag", "noindex")]
    parts.recorder.page(parts.fetched(uid, A + "/doc.pdf", body, headers=headers))
    parts.batch.commit()
    row = parts.row(A + "/doc.pdf")
    assert (row.status, row.content_type, row.noindex) == ("fetched", "application/pdf", 1)
    assert row.warc_file is not None
    assert parts.links(uid) == []
    assert not parts.stored(A + "/hidden")
    assert parts.stats["outcome/non_html"] == 1 and parts.stats["outcome/noindex"] == 1


def test_a_final_failure_counts_its_reason_and_hands_the_cash_to_the_virtual_page(
    parts: Parts,
) -> None:
    uid = parts.seed(A + "/broken")
    cash = float(parts.frontier.cash(uid))
    virtual = parts.frontier.opic.virtual_cash
    parts.recorder.failed(uid, "http_500", 500, T)
    parts.batch.commit()
    row = parts.row(A + "/broken")
    assert (row.status, row.error, row.http_status) == ("error", "http_500", 500)
    assert parts.frontier.cash(uid) == 0.0
    assert parts.frontier.opic.virtual_cash == pytest.approx(virtual + cash)
    assert bool(parts.frontier.dead[uid])
    assert parts.stats["failure/http_500"] == 1
    assert parts.total_cash() == pytest.approx(1.0)


def test_a_disallowed_page_records_the_robots_line(parts: Parts) -> None:
    uid = parts.seed(A + "/private/x")
    decision = RobotsPolicy.from_response(200, b"User-agent: *\nDisallow: /private\n").decide(
        "websift", A + "/private/x"
    )
    parts.recorder.disallowed(uid, decision)
    parts.batch.commit()
    row = parts.row(A + "/private/x")
    assert (row.status, row.error) == ("disallowed", "robots.txt line 2: Disallow: /private")
    assert parts.stats["outcome/disallowed"] == 1


def test_a_redirect_frontiers_its_target_within_the_hop_limit(parts: Parts) -> None:
    uid = parts.seed(A + "/old")
    f = parts.fetched(uid, A + "/old", b"", status=301, headers=[("Location", "/new")])
    target = parts.recorder.redirect(f, "/new", hops=1, max_hops=2)
    assert target is not None
    tid, url = target
    assert url == A + "/new" and parts.frontier.url(tid) == url
    over = parts.seed(A + "/loop")
    g = parts.fetched(over, A + "/loop", b"", status=302, headers=[("Location", "/further")])
    assert parts.recorder.redirect(g, "/further", hops=3, max_hops=2) is None
    bad = parts.seed(A + "/bad")
    h = parts.fetched(bad, A + "/bad", b"", status=301)
    assert parts.recorder.redirect(h, "http://[broken/", hops=1, max_hops=2) is None
    parts.batch.commit()
    old = parts.row(A + "/old")
    assert (old.status, old.redirect_to, old.fetch_count) == ("redirect", tid, 1)
    assert parts.row(A + "/loop").error == "too_many_redirects"
    assert not parts.stored(A + "/further")
    assert parts.row(A + "/bad").error == "bad_redirect"
    assert parts.stats["outcome/redirect"] == 1
    assert parts.stats["failure/too_many_redirects"] == 1
    assert parts.stats["failure/bad_redirect"] == 1


def test_304_and_identical_bytes_move_fetch_count_not_seq(parts: Parts) -> None:
    uid = parts.seed(A + "/")
    body = b"<html><body>stable</body></html>"
    parts.recorder.page(parts.fetched(uid, A + "/", body))
    parts.batch.commit()
    seq = parts.row(A + "/").seq
    parts.recorder.not_modified(parts.fetched(uid, A + "/", b"", status=304))
    parts.recorder.page(parts.fetched(uid, A + "/", body))
    parts.batch.commit()
    row = parts.row(A + "/")
    assert (row.seq, row.fetch_count, row.status) == (seq, 3, "fetched")
    assert parts.stats["outcome/not_modified"] == 1 and parts.stats["outcome/unchanged"] == 1
    parts.recorder.page(parts.fetched(uid, A + "/", b"<html><body>changed</body></html>"))
    parts.batch.commit()
    assert parts.row(A + "/").seq > seq
