"""`websift crawl` against the hostile web (testkit/hostileweb.py): every hazard ends within its
limit, is counted by reason, and the crawl goes on.

One crawl runs for the module.  The download timeout is lowered to ``TIMEOUT`` seconds through
``hostileweb.launch`` (a crawler setting, like the size cap) so the one-byte-per-second server
costs seconds, not minutes; everything else is the crawler's own defaults.  Assertions come from
the store (rows and the crawl summary) and from the servers' side (request log, bytes sent).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from testkit.hostileweb import (
    BOMB_BLOCK,
    BOMB_BLOCKS,
    GROW_SEGMENT,
    HEAD_FLOOD,
    MANY_LINKS,
    TINY_HEADERS,
    HostileWeb,
    Run,
    build_hostile_web,
    run_launched,
)
from testkit.testweb import LogEntry
from websift.core.datadir import DataDir
from websift.crawler import settings as S
from websift.crawler.scope import ScopeConfig
from websift.store.views import StoreReader

pytestmark = pytest.mark.slow  # crawls of the hostile web

TIMEOUT = 3.0  # seconds: crawler.settings.DOWNLOAD_TIMEOUT for this crawl
PER_HOST = 40  # --max-pages-per-host: the calendar trap's limit
MAX_PAGES = 400
SLACK = 3.0  # seconds the server may take to notice that the crawler hung up
# the one-byte-per-second server notices a hang-up only at its second write after it (the
# first one draws the RST): up to two more seconds
TRICKLE_SLACK = SLACK + 2.0
MEMORY_BOUND = 600 * 1024 * 1024  # the crawler's RSS while a 2 GiB bomb goes by


@dataclass
class Crawl:
    web: HostileWeb
    data: Path
    run: Run
    summary: dict[str, Any]
    log: list[LogEntry]

    @property
    def counts(self) -> dict[str, int]:
        return dict(self.summary["counts"])

    def url(self, site: str, path: str) -> str:
        return self.web.sites[site].url(path)

    def row(self, site: str, path: str) -> sqlite3.Row:
        conn = sqlite3.connect(DataDir.open(self.data).store_path)
        conn.row_factory = sqlite3.Row
        found = conn.execute("SELECT * FROM urls WHERE url=?", (self.url(site, path),)).fetchone()
        conn.close()
        assert found is not None, f"{self.url(site, path)} is not in the store"
        return found

    def requests(self, site: str, path: str | None = None) -> list[LogEntry]:
        hp = self.web.sites[site].hostport
        return [e for e in self.log if e.host == hp and (path is None or e.path == path)]

    def anchors_to(self, site: str, path: str) -> list[str]:
        conn = sqlite3.connect(DataDir.open(self.data).store_path)
        rows = conn.execute(
            "SELECT l.anchor FROM links l JOIN urls u ON u.id = l.dst WHERE u.url=?",
            (self.url(site, path),),
        ).fetchall()
        conn.close()
        return [r[0] for r in rows]


@pytest.fixture(scope="module")
def hostile_web() -> Iterator[HostileWeb]:
    with build_hostile_web() as web:
        yield web


@pytest.fixture(scope="module")
def crawl(hostile_web: HostileWeb, tmp_path_factory: pytest.TempPathFactory) -> Crawl:
    data = tmp_path_factory.mktemp("hostile") / "data"
    domains = [a for s in hostile_web.sites.values() for a in ("--allow-domain", s.address)]
    run = run_launched(
        "crawl", hostile_web.sites["hub"].url("/"), "--data", str(data), "--allow-private",
        "--delay", "0", "--max-pages", str(MAX_PAGES), "--max-pages-per-host", str(PER_HOST),
        *domains, settings={"DOWNLOAD_TIMEOUT": TIMEOUT}, timeout=50,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    with StoreReader.open(DataDir.open(data).store_path) as store:
        last = store.last_crawl()
    assert last is not None and last[3] is not None, "the crawl left no summary"
    return Crawl(hostile_web, data, run, json.loads(last[3]), hostile_web.entries())


# ---------------------------------------------------------------------- the crawl as a whole
def test_the_crawl_finishes_cleanly(crawl: Crawl) -> None:
    assert crawl.summary["finish_reason"] == "finished"
    assert "Traceback" not in crawl.run.stderr
    assert not [k for k in crawl.counts if k.startswith("internal_error/")], crawl.counts


def test_every_host_goes_on_after_its_hazard(crawl: Crawl) -> None:
    for site in ("hub", "bomb", "endless", "trickle", "trap"):
        row = crawl.row(site, f"/ok/{site}")
        assert row["status"] == "fetched", (site, row["status"], row["error"])


def test_memory_stays_bounded(crawl: Crawl) -> None:
    assert crawl.run.peak_rss < MEMORY_BOUND, f"peak RSS {crawl.run.peak_rss / 2**20:.0f} MiB"


# ---------------------------------------------------------------------- size, time
def test_decompression_bomb_is_refused_as_too_large(crawl: Crawl) -> None:
    sent = crawl.web.sent[(crawl.web.sites["bomb"].hostport, "/bomb")]
    assert sent < BOMB_BLOCKS * BOMB_BLOCK / 500  # small on the wire ...
    row = crawl.row("bomb", "/bomb")
    assert row["status"] == "error"
    assert row["error"] == "too_large", row["error"]  # ... over the cap once inflated
    assert len(crawl.requests("bomb", "/bomb")) == 1  # a size refusal is not retried


def test_endless_body_is_cut_at_the_size_cap(crawl: Crawl) -> None:
    row = crawl.row("endless", "/endless")
    assert row["status"] == "error" and row["error"] == "too_large", row["error"]
    (entry,) = crawl.requests("endless", "/endless")
    assert entry.end - entry.start < TIMEOUT + SLACK
    sent = crawl.web.sent[(crawl.web.sites["endless"].hostport, "/endless")]
    assert sent < 4 * S.DOWNLOAD_MAXSIZE  # the crawler hung up soon after the cap
    assert crawl.counts.get("failure/too_large", 0) >= 1


def test_endless_response_headers_are_cut_at_the_head_cap(crawl: Crawl) -> None:
    row = crawl.row("hub", "/heads")
    assert row["status"] == "error" and row["error"] == "too_large", row["error"]
    assert len(crawl.requests("hub", "/heads")) == 1  # refused once, never retried
    # the crawler hung up near its cap (what the socket buffers took on top), not at 300 MB
    sent = crawl.web.sent[(crawl.web.sites["hub"].hostport, "/heads")]
    assert sent < HEAD_FLOOD // 10, sent
    assert crawl.counts.get("retry/too_large", 0) == 0


def test_ten_thousand_tiny_headers_are_too_many(crawl: Crawl) -> None:
    assert S.MAX_RESPONSE_HEADERS < TINY_HEADERS
    row = crawl.row("hub", "/tinyheads")
    assert row["status"] == "error" and row["error"] == "too_large", row["error"]
    assert len(crawl.requests("hub", "/tinyheads")) == 1


def test_one_byte_per_second_ends_at_the_timeout(crawl: Crawl) -> None:
    row = crawl.row("trickle", "/trickle")
    assert row["status"] == "error" and row["error"] == "timeout", row["error"]
    # The server logs a try when its handler ends, which is at its next write after the
    # crawler hung up (up to a second later): wait for the log, not for a clock.
    hp = crawl.web.sites["trickle"].hostport
    crawl.web.wait_for(
        lambda log: sum(e.host == hp and e.path == "/trickle" for e in log) >= 1 + S.RETRY_TIMES,
        timeout=TIMEOUT + TRICKLE_SLACK,
    )
    tries = [e for e in crawl.web.entries("trickle") if e.path == "/trickle"]
    assert len(tries) == 1 + S.RETRY_TIMES
    for entry in tries:
        assert entry.end - entry.start < TIMEOUT + TRICKLE_SLACK
    assert crawl.counts.get("failure/timeout") == 1
    assert crawl.counts.get("retry/timeout") == S.RETRY_TIMES


def test_a_body_cut_short_is_data_loss(crawl: Crawl) -> None:
    row = crawl.row("hub", "/short")
    assert row["status"] == "error" and row["error"] == "data_loss", row["error"]
    assert len(crawl.requests("hub", "/short")) == 1 + S.RETRY_TIMES


def test_an_answer_that_is_not_http_has_a_named_reason(crawl: Crawl) -> None:
    row = crawl.row("hub", "/garbage")
    assert row["status"] == "error"
    assert row["error"] and not row["error"].startswith("exception_"), row["error"]


# ---------------------------------------------------------------------- content
@pytest.mark.parametrize("path", ["/enc/mixed", "/enc/bogus", "/enc/bom8", "/enc/bom16", "/enc/meta"])
def test_broken_encodings_are_parsed_for_links(crawl: Crawl, path: str) -> None:
    assert crawl.row("hub", path)["status"] == "fetched"
    target = "/ok/" + path.rsplit("/", 1)[1]
    assert crawl.row("hub", target)["status"] == "fetched", f"the link on {path} was lost"


def test_a_bom_beats_the_header(crawl: Crawl) -> None:
    assert crawl.anchors_to("hub", "/ok/bom8") == ["caf\u00e9"]
    assert crawl.anchors_to("hub", "/ok/bom16") == ["sixteen"]


def test_binary_sent_as_html_is_stored_without_links(crawl: Crawl) -> None:
    row = crawl.row("hub", "/binary")
    assert row["status"] == "fetched" and row["content_type"] == "text/html"
    conn = sqlite3.connect(DataDir.open(crawl.data).store_path)
    (n,) = conn.execute("SELECT COUNT(*) FROM links WHERE src=?", (row["id"],)).fetchone()
    conn.close()
    assert n == 0


def test_deep_and_unterminated_html(crawl: Crawl) -> None:
    assert crawl.row("hub", "/deep")["status"] == "fetched"
    assert crawl.row("hub", "/ok/deep")["status"] == "fetched"
    assert crawl.row("hub", "/unterminated")["status"] == "fetched"
    assert crawl.row("hub", "/ok/unterminated")["status"] == "fetched"


def test_megabyte_line_and_megabyte_url(crawl: Crawl) -> None:
    assert crawl.row("hub", "/longline")["status"] == "fetched"
    assert crawl.row("hub", "/ok/longline")["status"] == "fetched"
    assert crawl.row("hub", "/longurl")["status"] == "fetched"
    assert crawl.row("hub", "/ok/longurl")["status"] == "fetched"
    assert crawl.counts.get("scope/url_too_long", 0) >= 1
    assert not [e for e in crawl.log if len(e.path) > 2048], "a megabyte URL was requested"


def test_an_over_long_url_is_counted_not_stored(crawl: Crawl) -> None:
    # The limit that keeps it from being fetched must also keep it out of the store: else one
    # page of 100 such links is 100 MB of urls rows (and of every index over them).
    conn = sqlite3.connect(DataDir.open(crawl.data).store_path)
    (longest,) = conn.execute("SELECT MAX(LENGTH(url)) FROM urls").fetchone()
    conn.close()
    assert longest <= ScopeConfig().max_url_length


def test_self_redirect_ends(crawl: Crawl) -> None:
    assert len(crawl.requests("hub", "/self")) == 1
    assert crawl.row("hub", "/self")["status"] in ("redirect", "error")


# ---------------------------------------------------------------------- traps
def test_twenty_thousand_links_are_stored_and_bounded(crawl: Crawl) -> None:
    row = crawl.row("hub", "/many")
    conn = sqlite3.connect(DataDir.open(crawl.data).store_path)
    (n,) = conn.execute("SELECT COUNT(*) FROM links WHERE src=?", (row["id"],)).fetchone()
    conn.close()
    assert n == MANY_LINKS
    fetched = [e for e in crawl.requests("many") if e.path.startswith("/m/")]
    assert 0 < len(fetched) <= PER_HOST
    assert crawl.counts.get("skipped/host_page_limit", 0) >= MANY_LINKS - PER_HOST


def test_calendar_trap_stops_at_the_host_limit(crawl: Crawl) -> None:
    days = [e for e in crawl.requests("trap") if e.path.startswith("/day")]
    assert 0 < len(days) <= PER_HOST
    assert len({e.path for e in days}) == len(days)  # no day fetched twice


def test_a_path_that_grows_itself_is_cut(crawl: Crawl) -> None:
    grown = [e.path.count(GROW_SEGMENT) for e in crawl.requests("hub") if e.path.startswith("/grow/")]
    assert grown and max(grown) <= 3  # ScopeConfig.max_repeated_segments
    assert crawl.counts.get("scope/repeated_segments", 0) >= 1
