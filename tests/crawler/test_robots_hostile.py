"""robots.txt at its worst, end to end through `websift crawl`, judged from the servers' logs.

Each site on 127.0.0.20-29 has one kind of robots.txt (unreachable, 5xx, 404, redirected,
oversized, BOM, CRLF and odd case, ``*``/``$`` patterns, groups naming several agents, groups
to merge) and a home page linking to every path the test asks about.  One crawl visits them all;
each test compares what the site served with RFC 9309's answer for the agent ``websift``:
a disallowed URL is never requested, an allowed one is requested exactly once.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from testkit.hostileweb import HostileWeb, Run, Stream, hang_up, run_launched
from testkit.testweb import Answer, LogEntry, Site, html, words
from websift.core.datadir import DataDir
from websift.crawler.robots import MAX_ROBOTS_BYTES
from websift.store.views import StoreReader

pytestmark = pytest.mark.slow  # crawls of hostile robots.txt servers

# RFC 9309 section 5.1's example, with websift added to the group that names two agents: that
# group is websift's, so the "*" group (no *.gif, no /example/) does not apply to it.
RFC_EXAMPLE = """User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: websift
Disallow: /example/page.html

User-Agent: quxbot
"""

# RFC 9309 2.2.3's special characters and 2.2.2's longest match
PATTERNS = """User-agent: websift
Disallow: /*.php$
Disallow: /fish*
Allow: /fish/open$
Disallow: /*/secret/
Disallow: /a%3cd.html
"""

MERGED = """User-agent: websift
Disallow: /one

User-agent: otherbot
Disallow: /

User-agent: WEBSIFT
Disallow: /two
"""

FILLER_LINE = "# " + "x" * 97 + "\n"  # 100 bytes


def oversized() -> str:
    filler = FILLER_LINE * (MAX_ROBOTS_BYTES // len(FILLER_LINE) + 100)  # ~10 KB past the cap
    return f"User-agent: *\nDisallow: /early\n{filler}Disallow: /late\n"


@dataclass(frozen=True)
class Case:
    robots: str | None  # None: robots.txt answers 404
    allowed: tuple[str, ...]
    disallowed: tuple[str, ...] = ()


CASES: dict[str, Case] = {
    "missing": Case(None, ("/", "/private/x", "/anything")),
    "oversized": Case(oversized(), ("/", "/late", "/later"), ("/early", "/early/2")),
    "bom": Case("\ufeffUser-agent: websift\nDisallow: /bom-blocked\n", ("/", "/bom-open"),
                ("/bom-blocked",)),
    "crlf": Case("USER-AGENT: WebSift\r\nDISALLOW: /Crlf-Blocked\r\nallow: /Crlf-Blocked/but\r\n",
                 ("/", "/crlf-blocked", "/Crlf-Blocked/but"), ("/Crlf-Blocked", "/Crlf-Blocked/x")),
    "patterns": Case(PATTERNS,
                     ("/", "/index.php?x=1", "/index.php5", "/Fish.asp", "/fish/open",
                      "/catfish", "/a/public/"),
                     ("/index.php", "/dir/page.php", "/fish", "/fish.html", "/fishheads/x",
                      "/fish/open/more", "/a/secret/", "/b/c/secret/d", "/a%3Cd.html")),
    "agents": Case(RFC_EXAMPLE,
                   ("/", "/example/other.html", "/image.gif", "/publications/x"),
                   ("/example/page.html",)),
    "merged": Case(MERGED, ("/", "/three"), ("/one", "/two")),
}


@dataclass
class Crawl:
    web: HostileWeb
    run: Run
    summary: dict[str, Any]
    log: list[LogEntry]
    refused_origin: str
    data: Path

    def paths(self, site: str) -> list[str]:
        hp = self.web.sites[site].hostport
        return [e.path for e in self.log if e.host == hp]


def _home(site: Site, paths: tuple[str, ...]) -> None:
    links = "".join(f"<a href='{p}'>{p}</a> " for p in paths)
    site.page("/", html(site.address, f"<p>{words(sum(site.address.encode()))}</p>{links}"))
    site.prefix("/", lambda path, headers, n: Answer(body=html(path, f"<p>{words(len(path))}</p>")))


def _free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


def build_robots_web() -> HostileWeb:
    web = HostileWeb()
    for i, (name, case) in enumerate(CASES.items()):
        site = web.add_stream_site(name, f"127.0.0.{20 + i}", case.robots)
        _home(site, case.allowed + case.disallowed)
    # robots.txt answers 500: the site is off limits
    err = web.add_stream_site("err500", "127.0.0.27", "User-agent: *\nDisallow:\n")
    err.robots_status = 500
    _home(err, ("/a", "/b"))
    # robots.txt request: the connection closes without an answer (unreachable)
    dropped = web.add_stream_site("dropped", "127.0.0.28")
    dropped.stream("/robots.txt", Stream(hang_up, raw=True))
    _home(dropped, ("/a", "/b"))
    # robots.txt redirects: same host, then on to another host's file
    moved = web.add_stream_site("moved", "127.0.0.29")
    moved.stream("/robots.txt", Stream(lambda wfile, stop: 0, 301, [
        ("Location", "/robots-moved.txt"), ("Content-Length", "0")]))
    _home(moved, ("/moved-open", "/moved-blocked", "/elsewhere-blocked"))
    # the other host's file (on the "agents" site's host): served only as a redirect target
    elsewhere = web.sites["agents"]
    elsewhere.page("/robots-elsewhere.txt", Answer(
        body=b"User-agent: websift\nDisallow: /elsewhere-blocked\n", content_type="text/plain"))

    def moved_robots(path: str, headers: dict[str, str], n: int) -> Answer:
        return Answer(302, b"", {"Location": elsewhere.url("/robots-elsewhere.txt")})

    moved.page("/robots-moved.txt", moved_robots)
    return web


MOVED_ALLOWED = ("/", "/moved-open", "/moved-blocked")
MOVED_DISALLOWED = ("/elsewhere-blocked",)


@pytest.fixture(scope="module")
def robots_web() -> Iterator[HostileWeb]:
    with build_robots_web() as web:
        yield web


@pytest.fixture(scope="module")
def crawl(robots_web: HostileWeb, tmp_path_factory: pytest.TempPathFactory) -> Crawl:
    data = tmp_path_factory.mktemp("robots") / "data"
    refused = f"http://127.0.0.26:{_free_port('127.0.0.26')}"  # nothing listens there
    seeds = [s.url("/") for s in robots_web.sites.values()] + [refused + "/"]
    domains = [a for s in robots_web.sites.values() for a in ("--allow-domain", s.address)]
    run = run_launched("crawl", *seeds, "--data", str(data), "--allow-private", "--delay", "0",
                       "--allow-domain", "127.0.0.26", *domains, timeout=60)
    assert run.returncode == 0, run.stderr[-3000:]
    with StoreReader.open(DataDir.open(data).store_path) as store:
        last = store.last_crawl()
    assert last is not None and last[3] is not None
    return Crawl(robots_web, run, json.loads(last[3]), robots_web.entries(), refused, data)


@pytest.mark.parametrize("name", list(CASES))
def test_only_allowed_paths_are_fetched(crawl: Crawl, name: str) -> None:
    case = CASES[name]
    served = crawl.paths(name)
    assert served.count("/robots.txt") == 1
    for path in case.disallowed:
        assert path not in served, f"{name}: {path} is disallowed but was fetched"
    for path in case.allowed:
        assert served.count(path) == 1, f"{name}: {path} is allowed, fetched {served.count(path)}x"


@pytest.mark.parametrize("name", ["err500", "dropped"])
def test_unavailable_robots_txt_keeps_the_whole_site_out(crawl: Crawl, name: str) -> None:
    assert crawl.paths(name) == ["/robots.txt"]


def test_unreachable_host_is_counted_and_left_for_later(crawl: Crawl) -> None:
    with StoreReader.open(DataDir.open(crawl.data).store_path) as store:
        page = store.page_by_url(crawl.refused_origin + "/")
    assert page is not None and page.status == "discovered" and page.fetch_count == 0
    counts = crawl.summary["counts"]
    assert counts.get("robots/connection_refused", 0) >= 1
    assert counts.get("failure/robots_unavailable", 0) >= 3  # refused, dropped, 500


def test_redirected_robots_txt_is_followed_across_hosts(crawl: Crawl) -> None:
    served = crawl.paths("moved")
    assert served[:2] == ["/robots.txt", "/robots-moved.txt"]
    for path in MOVED_DISALLOWED:
        assert path not in served
    for path in MOVED_ALLOWED:
        assert served.count(path) == 1
    assert "/robots-elsewhere.txt" in crawl.paths("agents")


def test_the_rules_past_500_kib_have_no_effect(crawl: Crawl) -> None:
    assert len(CASES["oversized"].robots or "") > MAX_ROBOTS_BYTES
    served = crawl.paths("oversized")
    assert "/late" in served and "/early" not in served
