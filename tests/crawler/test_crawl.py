"""`websift crawl` against the local test web: what the store holds and what the servers saw.

One crawl of the standard test web (testkit/testweb.py) runs once for the module, with a 0.2 s
delay and one request in flight per host; each test checks one property of its result, from the
store or from the servers' request log.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from testkit.testweb import LogEntry, TestWeb, max_in_flight, min_start_gap
from websift.core.datadir import DataDir
from websift.crawler.settings import DEFAULT_MAX_PAGES
from websift.store.schema import FETCHED, META_VIRTUAL
from websift.store.views import StoreReader
from websift.store.warc import WarcLocation, read_response

pytestmark = pytest.mark.slow  # one crawl over HTTP with politeness delays

DELAY = 0.2
CRAWL_DELAY = 0.5  # the slow site's robots.txt
# With one request in flight the crawler spaces a start from the previous answer's arrival, and
# the test web stamps a request's end before its answer leaves, so the logged gaps are at least
# the delay whatever the scheduling of the server's threads; this only allows for rounding.
JITTER = 0.002
MAX_DEPTH = 4


@dataclass
class Crawl:
    data: Path
    log: list[LogEntry]
    stdout: str
    stderr: str
    summary: dict[str, Any]
    web: TestWeb

    def store(self) -> StoreReader:
        return StoreReader.open(DataDir.open(self.data).store_path)

    def row(self, url: str) -> sqlite3.Row:
        conn = sqlite3.connect(DataDir.open(self.data).store_path)
        conn.row_factory = sqlite3.Row
        found = conn.execute("SELECT * FROM urls WHERE url=?", (url,)).fetchone()
        conn.close()
        assert found is not None, f"{url} is not in the store"
        return found

    def url(self, site: str, path: str) -> str:
        return self.web.sites[site].url(path)

    def fetches(self, site: str, path: str) -> list[LogEntry]:
        return [e for e in self.web_log(site) if e.path == path]

    def web_log(self, site: str) -> list[LogEntry]:
        hp = self.web.sites[site].hostport
        return [e for e in self.log if e.host == hp]


def crawl_args(web: TestWeb, data: Path, *extra: str) -> list[str]:
    domains = [a for s in web.sites.values() for a in ("--allow-domain", s.address)]
    return ["crawl", web.sites["www"].url("/"), "--data", str(data), "--allow-private",
            "--delay", str(DELAY), "--max-depth", str(MAX_DEPTH), *domains, *extra]


@pytest.fixture(scope="module")
def crawl(test_web: TestWeb, run_websift: Callable[..., Any], tmp_path_factory: pytest.TempPathFactory) -> Crawl:
    data = tmp_path_factory.mktemp("crawl") / "data"
    test_web.clear()
    done = run_websift(*crawl_args(test_web, data))
    assert done.returncode == 0, done.stderr
    with StoreReader.open(DataDir.open(data).store_path) as store:
        last = store.last_crawl()
    assert last is not None and last[3] is not None
    return Crawl(data, test_web.entries(), done.stdout, done.stderr, json.loads(last[3]), test_web)


# ---------------------------------------------------------------------- what the store holds
def test_pages_land_with_type_warc_record_and_anchored_links(crawl: Crawl) -> None:
    home = crawl.row(crawl.url("www", "/"))
    assert home["status"] == "fetched" and home["http_status"] == 200
    assert home["content_type"] == "text/html"
    assert home["seq"] > 0 and home["fetch_count"] == 1
    record = read_response(
        DataDir.open(crawl.data).warc_dir,
        WarcLocation(home["warc_file"], home["warc_offset"], home["warc_length"]),
    )
    assert record.url == crawl.url("www", "/")
    assert b"Home of the test web" in record.body
    with crawl.store() as store:
        links = store.out_links(home["id"])
        anchors = {anchor for _, anchor, _ in links}
        page2 = store.url_id(crawl.url("www", "/page/2"))
    assert "Second page here" in anchors  # whitespace collapsed
    assert (page2, "odd spelling", False) in links  # HTTP://host/./page/2 canonicalised
    assert (page2, "fragment", False) not in links  # '#section' dropped: it is /page/1
    assert len(links) >= 35


def test_every_link_is_stored_even_out_of_scope(crawl: Crawl) -> None:
    intranet = crawl.row("http://10.1.2.3/intranet")
    assert intranet["status"] == "out_of_scope" and intranet["error"] == "domain"
    beyond = crawl.row(crawl.url("www", f"/calendar/2024/{6 + MAX_DEPTH:02d}"))
    assert beyond["status"] == "out_of_scope" and beyond["error"] == "depth"


def test_robots_txt_is_obeyed_from_the_servers_side(crawl: Crawl) -> None:
    for path in ("/private/a.html", "/doc.secret"):
        assert crawl.fetches("www", path) == []
        assert crawl.row(crawl.url("www", path))["status"] == "disallowed"
    assert crawl.row(crawl.url("www", "/doc.secret"))["error"].startswith("robots.txt line 7")
    assert len(crawl.fetches("www", "/private/open.html")) == 1  # Allow beats the Disallow
    assert crawl.fetches("slow", "/hidden") == []
    # robots.txt answering 503: nothing but robots.txt is asked of that site, its URL waits
    assert [e.path for e in crawl.web_log("down")] == ["/robots.txt"]
    assert crawl.row(crawl.url("down", "/"))["status"] == "discovered"
    # robots.txt answering 404: everything allowed
    assert len(crawl.fetches("norobots", "/private/x")) == 1


def test_robots_txt_comes_first_and_is_kept_with_its_age(crawl: Crawl) -> None:
    for site in crawl.web.sites:
        assert crawl.web_log(site)[0].path == "/robots.txt"
        assert len(crawl.fetches(site, "/robots.txt")) == 1
    with crawl.store() as store:
        slow = store.host(crawl.web.sites["slow"].origin)
        down = store.host(crawl.web.sites["down"].origin)
    assert slow is not None and slow.robots_status == 200 and slow.crawl_delay == CRAWL_DELAY
    assert slow.robots_body is not None and b"Crawl-delay" in slow.robots_body
    assert slow.robots_fetched is not None and slow.delay == CRAWL_DELAY
    assert down is not None and down.robots_status == 503


def test_nofollow_links_are_stored_but_not_followed(crawl: Crawl) -> None:
    assert crawl.fetches("www", "/nofollowed") == []
    assert crawl.fetches("www", "/behind-header-nofollow") == []  # X-Robots-Tag: websift: nofollow
    assert len(crawl.fetches("www", "/from-noindex")) == 1  # noindex does not mean nofollow
    with crawl.store() as store:
        home = store.url_id(crawl.url("www", "/"))
        nofollowed = store.url_id(crawl.url("www", "/nofollowed"))
        hn = store.url_id(crawl.url("www", "/header-nofollow"))
        assert home is not None and nofollowed is not None and hn is not None
        assert (nofollowed, "do not follow", True) in store.out_links(home)
        assert all(nf for _, _, nf in store.out_links(hn))
        nofollow_cash = store.page(nofollowed)
    assert nofollow_cash is not None and nofollow_cash.cash == 0 and nofollow_cash.g_last is None
    assert crawl.row(crawl.url("www", "/header-nofollow"))["nofollow"] == 1
    assert crawl.row(crawl.url("www", "/header-nofollow"))["noindex"] == 0  # otherbot's only
    assert crawl.row(crawl.url("www", "/noindex"))["noindex"] == 1


def test_duplicates_are_marked(crawl: Crawl) -> None:
    a, b = crawl.row(crawl.url("www", "/dup/a")), crawl.row(crawl.url("www", "/dup/b"))
    first, second = sorted((a, b), key=lambda r: r["id"])
    assert first["duplicate_of"] is None and second["duplicate_of"] == first["id"]
    assert a["content_hash"] == b["content_hash"]
    na, nb = crawl.row(crawl.url("www", "/near/a")), crawl.row(crawl.url("www", "/near/b"))
    assert na["content_hash"] != nb["content_hash"]
    near_first, near_second = sorted((na, nb), key=lambda r: r["id"])
    assert near_second["duplicate_of"] == near_first["id"]
    assert crawl.row(crawl.url("www", "/page/1"))["duplicate_of"] is None


def test_non_html_is_recorded_not_parsed(crawl: Crawl) -> None:
    pdf = crawl.row(crawl.url("www", "/file.pdf"))
    assert pdf["status"] == "fetched" and pdf["content_type"] == "application/pdf"
    assert pdf["noindex"] == 1  # X-Robots-Tag holds for any type
    assert pdf["warc_file"] and pdf["content_hash"]
    js = crawl.row(crawl.url("www", "/data.json"))
    with crawl.store() as store:
        assert store.out_links(js["id"]) == []
    assert crawl.fetches("www", "/page/9") == []


def test_odd_encodings_and_broken_html_are_parsed(crawl: Crawl) -> None:
    with crawl.store() as store:
        latin = store.out_links(crawl.row(crawl.url("www", "/latin1"))["id"])
        sjis = store.out_links(crawl.row(crawl.url("www", "/sjis"))["id"])
        broken = store.out_links(crawl.row(crawl.url("www", "/broken"))["id"])
    assert [a for _, a, _ in latin] == ["café link"]
    assert [a for _, a, _ in sjis] == ["次へ"]
    assert len(broken) == 2 and broken[1][1] == "again"
    assert crawl.row(crawl.url("www", "/empty"))["status"] == "fetched"


def test_failures_are_counted_by_reason(crawl: Crawl) -> None:
    counts = crawl.summary["counts"]
    assert counts["failure/http_404"] == 1  # /missing (the no-robots site has a home page)
    assert counts["failure/http_500"] == 1
    assert counts["failure/http_503"] == 1  # after its retries
    assert counts["retry/http_503"] == 2
    assert counts["failure/too_large"] == 1
    assert counts["failure/too_many_redirects"] == 1
    assert counts["failure/robots_unavailable"] == 1
    assert counts["outcome/disallowed"] == 3
    assert counts["scope/domain"] == 2  # the intranet link and the redirect to it
    assert crawl.row(crawl.url("www", "/huge"))["error"] == "too_large"
    assert crawl.row(crawl.url("www", "/error"))["http_status"] == 500
    assert "internal_error" not in " ".join(counts)


def test_redirects_are_followed_with_a_limit(crawl: Crawl) -> None:
    a, b = crawl.row(crawl.url("www", "/loop/a")), crawl.row(crawl.url("www", "/loop/b"))
    assert a["status"] == b["status"] == "redirect"
    assert a["redirect_to"] == b["id"] and b["redirect_to"] == a["id"]
    assert len(crawl.fetches("www", "/loop/a")) == 1 and len(crawl.fetches("www", "/loop/b")) == 1
    out = crawl.row(crawl.url("www", "/to-outside"))
    target = crawl.row("http://10.1.2.3/secret")
    assert out["status"] == "redirect" and out["redirect_to"] == target["id"]
    assert target["status"] == "out_of_scope" and target["error"] == "domain"
    chain = [e.path for e in crawl.web_log("www") if e.path.startswith("/chain/")]
    assert chain == [f"/chain/{i}" for i in range(1, 7)]  # 5 redirects followed, the 6th refused


def test_spider_trap_is_bounded_by_depth(crawl: Crawl) -> None:
    months = {e.path for e in crawl.web_log("www") if e.path.startswith("/calendar/")}
    assert len(months) == 2 * MAX_DEPTH - 1  # June, then +-1 .. +-(MAX_DEPTH-1) months


# ---------------------------------------------------------------------- politeness, from the log
def test_request_starts_per_host_are_spaced_by_the_delay(crawl: Crawl) -> None:
    www = crawl.web_log("www")
    assert len(www) > 40
    assert min_start_gap(www) >= DELAY - JITTER
    assert min_start_gap(crawl.web_log("slow")) >= CRAWL_DELAY - JITTER  # Crawl-delay raises it


def test_at_most_one_request_in_flight_per_host(crawl: Crawl) -> None:
    for site in crawl.web.sites:
        assert max_in_flight(crawl.web_log(site)) == 1


def test_retry_after_is_honoured_for_the_whole_host(crawl: Crawl) -> None:
    busy = crawl.fetches("www", "/busy")
    assert [e.status for e in busy] == [429, 200]
    after = [e for e in crawl.web_log("www") if e.start > busy[0].start]
    assert after[0].start - busy[0].end >= 1.0 - JITTER  # Retry-After: 1
    assert crawl.row(crawl.url("www", "/busy"))["status"] == "fetched"


# ---------------------------------------------------------------------- OPIC state and reporting
def test_opic_state_is_stored_and_cash_is_conserved(crawl: Crawl) -> None:
    with crawl.store() as store:
        total = sum(p.cash for p in store.pages())
        virtual = float(store.get_meta(META_VIRTUAL) or "nan")
        fetched = list(store.pages(FETCHED))
        best = max(fetched, key=lambda p: p.importance).url
        unknown = sum(1 for p in fetched if p.g_last is None or p.importance <= 0)
    assert total + virtual == pytest.approx(1.0, abs=1e-9)  # Lemma 2.2
    assert best == crawl.url("www", "/")  # every page links home
    assert unknown == 0


def test_progress_line_and_summary_table(crawl: Crawl) -> None:
    assert "pages " in crawl.stderr and "errors " in crawl.stderr
    # bounded by the default --max-pages: how far, and about how long is left
    assert re.search(rf"^pages \d+ of {DEFAULT_MAX_PAGES} .* about \S+ left ", crawl.stderr,
                     re.M), crawl.stderr
    assert "websift crawl: finished" in crawl.stdout
    assert "failure/too_large" in crawl.stdout
    assert crawl.summary["pages"] == crawl.summary["counts"]["outcome/fetched"] + sum(
        v for k, v in crawl.summary["counts"].items()
        if k in ("outcome/redirect",) or (k.startswith("failure/") and k != "failure/robots_unavailable")
    )


# ---------------------------------------------------------------------- seeds and the next crawl
def test_private_seed_is_refused_with_a_clear_error(
    crawl: Crawl, run_websift: Callable[..., Any], tmp_path: Path
) -> None:
    before = len(crawl.web.entries())
    done = run_websift("crawl", crawl.url("www", "/"), "--data", str(tmp_path / "d"))
    assert done.returncode == 2
    assert "--allow-private" in done.stderr and "loopback" in done.stderr
    assert len(crawl.web.entries()) == before


def test_next_crawl_reuses_robots_and_fetches_nothing_twice(
    crawl: Crawl, run_websift: Callable[..., Any]
) -> None:
    crawl.web.clear()
    done = run_websift(*crawl_args(crawl.web, crawl.data))
    assert done.returncode == 0, done.stderr
    log = crawl.web.entries()
    www = crawl.web.sites["www"].hostport
    assert [e for e in log if e.host == www] == []  # fresh robots.txt, nothing left to fetch
    down = crawl.web.sites["down"].hostport
    assert [e.path for e in log if e.host == down] == ["/robots.txt"]  # a 5xx is asked again
