"""DNS off the reactor: a host's address check runs in a thread and never holds other hosts up.

First ``HostVerdicts`` alone (a lookup per host, answers handed over by ``drain``, a TTL on the
clock it is given, a failing resolver counted), then the session without Scrapy, with a resolver
whose answer for one name the test holds back (a ``threading.Event``, so nothing sleeps): while
that host's verdict is pending, the other host's pages keep going out, links to the pending host
are stored but stay out of OPIC, and once the answer comes they enter the frontier, or are
recorded out of scope and never fetched.  Last, a real crawl: a resolver that takes 2 s for one
name, and the servers' logs show the other hosts' pages served during those 2 s.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from testkit.testweb import Site, TestWeb, html, words
from tests.crawler import fake_session
from tests.crawler.fake_session import (
    ALLOW_ALL,
    DELAY,
    HTML,
    FakeClock,
    FakeFactory,
    Sent,
    Sessions,
)
from websift.core.datadir import DataDir
from websift.crawler import settings as S
from websift.crawler.dns import ADDRESS_PENDING, HostVerdicts
from websift.crawler.frontier import Frontier
from websift.crawler.meta import FetchKind
from websift.crawler.pipeline import Fetched
from websift.crawler.scope import Scope, ScopeConfig
from websift.crawler.session import CrawlConfig
from websift.store.crawl_store import CrawlStore

WAIT = 10.0  # seconds a test waits for a DNS thread's answer before it fails


class Resolver:
    """Names -> addresses for the scope; a *held* name answers only once the test releases it
    (a slow DNS server under the test's control).  Records every lookup."""

    def __init__(self, table: dict[str, list[str]], held: tuple[str, ...] = ()) -> None:
        self.table = table
        self.gates = {name: threading.Event() for name in held}
        self.calls: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, host: str, port: int | None) -> list[str]:
        with self.lock:
            self.calls.append(host)
        gate = self.gates.get(host)
        if gate is not None and not gate.wait(WAIT):
            raise TimeoutError(f"the test never released {host}")
        if host not in self.table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self.table[host]

    def release(self, name: str) -> None:
        self.gates[name].set()

    def count(self, name: str) -> int:
        with self.lock:
            return self.calls.count(name)


# ---------------------------------------------------------------------------- HostVerdicts
class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def verdicts(resolver: Resolver, config: ScopeConfig | None = None, **kw: Any) -> HostVerdicts:
    return HostVerdicts(Scope(config or ScopeConfig(), resolver), **kw)


def answer(book: HostVerdicts) -> list[Any]:
    assert book.wait(WAIT), "no answer from the DNS threads"
    return book.drain()


def test_a_name_is_looked_up_once_in_a_thread_and_kept() -> None:
    resolver = Resolver({"public.example": ["93.184.216.34"]}, held=("public.example",))
    book = verdicts(resolver)
    try:
        assert book.reason("public.example", 80) == ADDRESS_PENDING
        assert book.reason("PUBLIC.example") == ADDRESS_PENDING  # asked again: no new lookup
        assert book.busy()
        assert book.drain() == []  # nothing answered yet, and drain does not wait
        resolver.release("public.example")
        answers = answer(book)
        assert [(a.host, a.verdict.reason) for a in answers] == [("public.example", None)]
        assert not book.busy()
        assert book.reason("public.example") is None
        assert resolver.count("public.example") == 1
    finally:
        book.close()


def test_an_ip_literal_is_judged_at_once_without_a_thread() -> None:
    book = verdicts(Resolver({}))
    assert book.reason("127.0.0.1") == "private_address"
    assert book.reason("[::1]") == "private_address"
    assert book.reason("93.184.216.34") is None
    assert not book.busy() and book._threads == []


def test_verdicts_expire_after_their_ttl_and_failures_sooner() -> None:
    clock = Clock()
    resolver = Resolver({"a.example": ["93.184.216.34"]})
    book = verdicts(resolver, ttl=100.0, failure_ttl=10.0, clock=clock)
    try:
        assert book.reason("a.example") == ADDRESS_PENDING
        assert book.reason("gone.example") == ADDRESS_PENDING
        answers = answer(book)
        while len(answers) < 2:
            answers += answer(book)
        assert book.reason("a.example") is None
        assert book.reason("gone.example") == "unresolvable"
        clock.now += 11  # the failure is tried again, the success is still trusted
        assert book.reason("gone.example") == ADDRESS_PENDING
        assert book.reason("a.example") is None
        answer(book)
        clock.now += 90
        resolver.table["a.example"] = ["10.0.0.1"]  # the record changed meanwhile
        assert book.reason("a.example") == ADDRESS_PENDING
        answer(book)
        assert book.reason("a.example") == "private_address"
        assert resolver.count("a.example") == 2 and resolver.count("gone.example") == 2
    finally:
        book.close()


def test_a_resolver_bug_is_counted_and_the_host_refused_not_waited_for() -> None:
    def broken(host: str, port: int | None) -> list[str]:
        raise RuntimeError("resolver bug")

    book = HostVerdicts(Scope(ScopeConfig(), broken))
    try:
        assert book.reason("x.example") == ADDRESS_PENDING
        (only,) = answer(book)
        assert only.error == "RuntimeError"
        assert only.verdict.reason == "unresolvable"
        assert "resolver bug" in only.verdict.detail
    finally:
        book.close()


def test_the_wake_callback_is_called_from_the_dns_thread() -> None:
    woken: list[str] = []
    book = verdicts(Resolver({"w.example": ["93.184.216.34"]}))
    book.wake = lambda: woken.append(threading.current_thread().name)
    try:
        book.reason("w.example")
        answer(book)
        assert woken and woken[0].startswith("websift-dns-")
    finally:
        book.close()


# ---------------------------------------------------------------------------- the session
A = "http://127.0.0.2:8001"
SLOW = "http://slow.example:8003"
EVIL = "http://evil.example:8004"


class Run(fake_session.Run):
    """The spider's side: one answer for a robots.txt or a page."""

    def answer(self, request: Sent, body: bytes = b"<html><body>x</body></html>",
               status: int = 200, headers: list[tuple[str, str]] | None = None) -> None:
        self.session.release(request.meta, 0.01)
        if request.meta.kind is FetchKind.ROBOTS:
            self.session.on_robots(request.meta, 200, ALLOW_ALL)
            return
        self.session.on_response(request.meta, Fetched(
            uid=request.meta.page_id, url=request.url, status=status,
            headers=HTML if headers is None else headers, body=body, depth=request.meta.depth,
            fetched_at=self.clock(),
        ))

    def status(self, url: str) -> tuple[str, str | None]:
        page = self.session.store.page_by_url(url)
        assert page is not None, url
        return page.status, page.error

    def uid(self, url: str) -> int:
        page = self.session.store.page_by_url(url)
        assert page is not None, url
        return int(page.id)

    def robots_ready(self) -> None:
        """Answer the first host's robots.txt (asked for first), then wait out the delay."""
        robots = self.next()
        assert robots is not None and robots.meta.kind is FetchKind.ROBOTS
        self.answer(robots)
        self.clock.now += DELAY


def as_the_next_run_sees(data: DataDir, urls: list[str]) -> dict[str, tuple[str, bool]]:
    """Each URL's status, and whether it is known to OPIC, as the next run loads them."""
    store = CrawlStore.open(data.store_path)
    try:
        frontier = Frontier.load(store)
        out = {}
        for url in urls:
            page = store.page_by_url(url)
            assert page is not None, url
            out[url] = (page.status, frontier.is_known(int(page.id)))
        return out
    finally:
        store.close()


@pytest.fixture
def crawl(sessions: Sessions) -> Iterator[Callable[..., Run]]:
    resolvers: list[Resolver] = []

    def start(seeds: list[str], resolver: Resolver, scope: ScopeConfig | None = None,
              **config: Any) -> Run:
        resolvers.append(resolver)
        clock = FakeClock()
        cfg = CrawlConfig(seeds=seeds, scope=scope or ScopeConfig(allow_private=True),
                          delay=DELAY, **config)
        factory = FakeFactory()
        session, data = sessions.start(cfg, clock, factory, resolve=resolver)
        return Run(session, clock, factory, data)

    yield start
    for resolver in resolvers:  # no DNS thread left waiting on a test that has ended
        for gate in resolver.gates.values():
            gate.set()


def links(*urls: str) -> bytes:
    return ("<html><body>" + " ".join(f'<a href="{u}">{u}</a>' for u in urls)
            + "</body></html>").encode()


def test_a_pending_host_waits_while_other_hosts_keep_going(crawl: Any) -> None:
    resolver = Resolver({"slow.example": ["127.0.0.3"]}, held=("slow.example",))
    run = crawl([A + "/"], resolver)
    run.robots_ready()
    home = run.next()
    assert home is not None and home.url == A + "/"
    run.answer(home, links(SLOW + "/", SLOW + "/x", "/a1", "/a2", "/a3"))
    # the links to slow.example are stored but wait outside OPIC for the host's verdict
    frontier = run.session.frontier
    for url in (SLOW + "/", SLOW + "/x"):
        assert run.status(url) == ("discovered", None)
        assert not frontier.is_known(run.uid(url))
    assert frontier.is_known(run.uid(A + "/a1"))
    assert run.session.stats["dns/parked_links"] == 2
    # A's pages keep going out while the lookup is held
    served = []
    for _ in range(3):
        run.clock.now += DELAY
        request = run.next()
        assert request is not None
        served.append(request.url)
        run.answer(request)
    assert sorted(served) == [A + "/a1", A + "/a2", A + "/a3"]
    run.clock.now += DELAY
    assert run.next() is None
    assert run.session.has_pending() and not run.session.stalled  # waiting is not the end
    resolver.release("slow.example")
    assert run.session.addresses.wait(WAIT)
    robots = run.next()  # the answer is taken: the links enter and the host becomes ready
    assert robots is not None and robots.url == SLOW + "/robots.txt"
    assert frontier.is_known(run.uid(SLOW + "/")) and frontier.is_known(run.uid(SLOW + "/x"))
    run.answer(robots)
    fetched = []
    while run.session.has_pending():
        run.clock.now += DELAY
        request = run.next()
        if request is not None:
            fetched.append(request.url)
            run.answer(request)
    assert sorted(fetched) == [SLOW + "/", SLOW + "/x"]
    assert resolver.count("slow.example") == 1
    assert run.session.stats["dns/lookups"] == 1


def test_links_to_a_refused_host_never_enter_opic_nor_get_fetched(crawl: Any) -> None:
    resolver = Resolver({"evil.example": ["93.184.216.34", "10.9.8.7"]}, held=("evil.example",))
    scope = ScopeConfig(allow_private=True, deny_ip=("10.0.0.0/8",))
    run = crawl([A + "/"], resolver, scope=scope)
    run.robots_ready()
    home = run.next()
    assert home is not None
    body = links(EVIL + "/1", EVIL + "/2", EVIL + "/3", "/next")
    run.answer(home, body.replace(b"<a ", b'<a rel="nofollow" ', 1))  # /1 is not followed
    assert run.session.stats["dns/parked_links"] == 3  # judged when the answer comes
    resolver.release("evil.example")
    assert run.session.addresses.wait(WAIT)
    while run.session.has_pending():
        run.clock.now += DELAY
        request = run.next()
        if request is not None:
            run.answer(request)
    for path in ("/1", "/2", "/3"):
        assert run.status(EVIL + path) == ("out_of_scope", "ip_denied")
        assert not run.session.frontier.is_known(run.uid(EVIL + path))
    assert not any("evil.example" in url for url in run.factory.urls())
    assert run.session.stats["scope/ip_denied"] == 3  # each URL counted once


def test_a_redirect_to_a_pending_host_keeps_its_hop_count(crawl: Any) -> None:
    resolver = Resolver({"slow.example": ["127.0.0.3"]}, held=("slow.example",))
    run = crawl([A + "/r0"], resolver, max_redirects=3)
    run.robots_ready()
    r0 = run.next()
    assert r0 is not None
    run.answer(r0, b"", status=301, headers=[("Location", SLOW + "/r1")])
    resolver.release("slow.example")
    assert run.session.addresses.wait(WAIT)
    robots = run.next()
    assert robots is not None and robots.url == SLOW + "/robots.txt"
    run.answer(robots)
    run.clock.now += DELAY
    r1 = run.next()
    assert r1 is not None and r1.url == SLOW + "/r1"
    assert r1.meta.hops == 1


def test_links_still_waiting_at_the_end_are_counted_and_stay_out_of_opic(
    crawl: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(S, "DNS_CLOSE_WAIT", 0.05)
    resolver = Resolver({"slow.example": ["127.0.0.3"]}, held=("slow.example",))
    run = crawl([A + "/"], resolver)
    run.robots_ready()
    home = run.next()
    assert home is not None
    run.answer(home, links(SLOW + "/", SLOW + "/y"))
    summary = run.session.close("finished")
    resolver.release("slow.example")  # the answer comes after the end: dropped, no error
    assert summary["counts"]["skipped/address_pending"] == 2
    # stored, out of OPIC: a later link naming them brings them in
    assert as_the_next_run_sees(run.data, [SLOW + "/", SLOW + "/y"]) == {
        SLOW + "/": ("discovered", False), SLOW + "/y": ("discovered", False)
    }


def test_links_whose_lookup_ends_by_the_close_enter_the_frontier_for_the_next_run(
    crawl: Any
) -> None:
    resolver = Resolver({"slow.example": ["127.0.0.3"]}, held=("slow.example",))
    run = crawl([A + "/"], resolver, max_pages=1)
    run.robots_ready()
    home = run.next()
    assert home is not None
    run.answer(home, links(SLOW + "/"))
    assert not run.session.has_pending()  # the budget is spent
    resolver.release("slow.example")
    summary = run.session.close("finished")
    assert "skipped/address_pending" not in summary["counts"]
    # pending: the next run starts with it
    assert as_the_next_run_sees(run.data, [SLOW + "/"]) == {SLOW + "/": ("discovered", True)}


# ---------------------------------------------------------------------------- a real crawl
SLOW_DNS_SECONDS = 2.0
SLOW_NAME = "slow.example"
SLOW_ENV = "WEBSIFT_TEST_SLOW_DNS"  # as SLOW_LAUNCH reads it
# The child: `websift` with one name that the system resolver answers only after a delay (the
# slow DNS server being simulated: the sleep is the server's, the test waits on the process).
# Both lookups of the name are mapped to the slow site's loopback address; only the scope's
# (getaddrinfo) is slow.  Each slow lookup prints when it started and when it answered.
SLOW_LAUNCH = textwrap.dedent("""
    import json, os, socket, sys, time
    slow = json.loads(os.environ["WEBSIFT_TEST_SLOW_DNS"])
    name, address, seconds = slow["name"], slow["address"], slow["seconds"]
    real_gai, real_ghbn = socket.getaddrinfo, socket.gethostbyname

    def getaddrinfo(host, port, *args, **kwargs):
        if isinstance(host, str) and host.lower() == name:
            print(f"slow-dns start {time.time():.6f}", file=sys.stderr, flush=True)
            time.sleep(seconds)
            print(f"slow-dns answer {time.time():.6f}", file=sys.stderr, flush=True)
            host = address
        return real_gai(host, port, *args, **kwargs)

    def gethostbyname(host):
        return real_ghbn(address if host.lower() == name else host)

    socket.getaddrinfo = getaddrinfo
    socket.gethostbyname = gethostbyname
    from websift.api.cli import main
    sys.exit(main(sys.argv[1:]))
""")
FAST_PAGES = 30  # per fast host: at the crawl's delay, more than the slow lookup lasts


@dataclass
class Web:
    web: TestWeb
    fast: list[Site]
    slow: Site

    def served(self, site: Site) -> list[Any]:
        return [e for e in self.web.entries() if e.host == site.hostport]


@pytest.fixture(scope="module")
def three_sites() -> Iterator[Web]:
    web = TestWeb()
    robots = "User-agent: *\nDisallow:\n"
    fast = [web.add_site(f"fast{i}", f"127.0.0.{50 + i}", robots) for i in range(2)]
    slow = web.add_site("slow", "127.0.0.52", robots)
    with web:
        port = slow.url("/").rsplit(":", 1)[1].rstrip("/")
        for i, site in enumerate(fast):
            pages = "".join(f"<a href='/p{n}'>p{n}</a> " for n in range(FAST_PAGES))
            extra = f"<a href='http://{SLOW_NAME}:{port}/'>slow</a>" if i == 0 else ""
            site.page("/", html(f"fast {i}", f"<p>{words(100 + i)}</p>{extra}{pages}"))
            site.prefix("/p", lambda p, h, n, i=i: _page(f"fast {i} {p}"))
        slow.page("/", html("slow", f"<p>{words(120)}</p><a href='/s1'>s1</a>"))
        slow.page("/s1", html("slow 1", f"<p>{words(121)}</p>"))
        yield Web(web, fast, slow)


def _page(title: str) -> Any:
    from testkit.testweb import Answer

    return Answer(body=html(title, f"<p>{words(len(title))} {title}</p>"))


@pytest.mark.slow
def test_a_slow_lookup_does_not_stop_other_hosts_downloading(
    three_sites: Web, tmp_path: Path
) -> None:
    web = three_sites
    web.web.clear()
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(repo),
           SLOW_ENV: json.dumps({"name": SLOW_NAME, "address": web.slow.address,
                                 "seconds": SLOW_DNS_SECONDS})}
    argv = [sys.executable, "-c", SLOW_LAUNCH, "crawl", web.fast[0].url("/"),
            web.fast[1].url("/"), "--data", str(tmp_path / "data"), "--any-domain",
            "--allow-private", "--delay", "0.1", "--quiet", "--max-pages", "200",
            "--no-signals"]  # no /sitemap.xml asked: each host's log is exact
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=repo,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    starts = [float(t) for t in re.findall(r"slow-dns start ([\d.]+)", done.stderr)]
    answers = [float(t) for t in re.findall(r"slow-dns answer ([\d.]+)", done.stderr)]
    assert len(starts) == 1 and len(answers) == 1, done.stderr  # one lookup of the slow name
    began, answered = starts[0], answers[0]
    assert answered - began >= SLOW_DNS_SECONDS
    # while the slow name's lookup ran, the fast hosts' pages were being served
    during = [e for site in web.fast for e in web.served(site) if began < e.start < answered]
    assert len(during) >= 10, (len(during), [len(web.served(s)) for s in web.fast])
    assert {e.host for e in during} == {site.hostport for site in web.fast}
    # and the slow host was crawled once its verdict came back, not before
    slow = web.served(web.slow)
    assert sorted(e.path for e in slow) == ["/", "/robots.txt", "/s1"]
    assert min(e.start for e in slow) > answered
    assert all(len(web.served(site)) == FAST_PAGES + 2 for site in web.fast)
