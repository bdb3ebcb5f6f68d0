"""The local test web: several small sites on loopback addresses, each with its own robots.txt.

Every site is a ``ThreadingHTTPServer`` on its own address (127.0.0.2, 127.0.0.3, ...) and
port, in a thread.  Every request is logged with the wall-clock time its handling started and
ended, so tests can assert politeness from the server's side: no fetch of a disallowed URL, no two
request starts to one host closer than the delay, at most K requests in flight per host.

The main site ("www") holds the hazards a crawler meets: a robots.txt with disallowed paths, error
pages (404, 500, 503), a 429 with Retry-After, a spider trap (a calendar that goes on forever), a
redirect loop and an endless redirect chain, a page over the size cap, non-HTML files, nofollow
links, meta and header noindex/nofollow, exact and near duplicate pages, broken HTML and odd
encodings, and pages that answer conditional requests with 304.

``StaticSite`` serves a directory (the benchmark serves the Python manual with it).
"""

from __future__ import annotations

import hashlib
import itertools
import mimetypes
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

HUGE_BYTES = 9 * 1024 * 1024  # over crawler.settings.DOWNLOAD_MAXSIZE (8 MiB)
LAST_MODIFIED = formatdate(1_700_000_000, usegmt=True)


@dataclass(frozen=True)
class LogEntry:
    host: str  # "127.0.0.2:PORT"
    path: str  # path and query as requested
    start: float
    end: float
    status: int
    headers: dict[str, str]


@dataclass
class Answer:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "text/html; charset=utf-8"


Handler = Callable[[str, dict[str, str], int], Answer]  # (path, request headers, hit count)


def html(title: str, body: str, head: str = "") -> bytes:
    return (
        f"<!DOCTYPE html><html><head><title>{title}</title>{head}</head>"
        f"<body>{body}</body></html>"
    ).encode()


def words(seed: int, n: int = 60) -> str:
    """Deterministic filler text (distinct per seed) so pages are not near-duplicates."""
    vocab = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
             "november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee "
             "zulu crawl index rank search robot page link anchor graph cash history").split()
    out = []
    x = seed * 2654435761 % 2**32 or 1
    for _ in range(n):
        x = (1103515245 * x + 12345) % 2**31
        out.append(vocab[x % len(vocab)])
    return " ".join(out)


class Site:
    """One host: a robots.txt, a table of exact paths and a list of prefix handlers."""

    def __init__(self, web: TestWeb, address: str, robots: str | None, latency: float = 0.0):
        self.web = web
        self.address = address
        self.robots = robots  # None: robots.txt answers 404
        self.robots_status = 200
        self.latency = latency
        self.exact: dict[str, Handler] = {}
        self.prefixes: list[tuple[str, Handler]] = []
        self.hits: dict[str, int] = {}
        self.server: ThreadingHTTPServer | None = None  # a _Server once started
        self.thread: threading.Thread | None = None

    @property
    def origin(self) -> str:
        assert self.server is not None
        return f"http://{self.address}:{self.server.server_address[1]}"

    @property
    def hostport(self) -> str:
        return self.origin.removeprefix("http://")

    def url(self, path: str) -> str:
        return self.origin + path

    def page(self, path: str, handler: Handler | Answer | bytes) -> None:
        if isinstance(handler, bytes):
            answer = Answer(body=handler)
            self.exact[path] = lambda p, h, n: answer
        elif isinstance(handler, Answer):
            fixed = handler
            self.exact[path] = lambda p, h, n: fixed
        else:
            self.exact[path] = handler

    def prefix(self, prefix: str, handler: Handler) -> None:
        self.prefixes.append((prefix, handler))

    def answer(self, path: str, headers: dict[str, str]) -> Answer:
        with self.web.lock:
            self.hits[path] = self.hits.get(path, 0) + 1
            count = self.hits[path]
        if path == "/robots.txt":
            if self.robots is None:
                return Answer(404, b"not found", content_type="text/plain")
            return Answer(self.robots_status, self.robots.encode(), content_type="text/plain")
        bare = path.split("?", 1)[0]
        handler = self.exact.get(path) or self.exact.get(bare)
        if handler is None:
            for prefix, h in self.prefixes:
                if bare.startswith(prefix):
                    handler = h
                    break
        if handler is None:
            return Answer(404, html("Not found", "<p>no such page</p>"))
        return handler(path, headers, count)


def _make_handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms ACK stalls

        def do_GET(self) -> None:
            start = time.time()
            end: float | None = None
            status = 0
            try:
                if site.latency:
                    site.web.pause(site.latency)
                headers = {k.lower(): v for k, v in self.headers.items()}
                ans = site.answer(self.path, headers)
                status = ans.status
                self.send_response(ans.status)
                if ans.content_type:
                    self.send_header("Content-Type", ans.content_type)
                for k, v in ans.headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(ans.body)))
                # The request counts as in flight until its answer starts to leave: a client
                # cannot have the answer (and start its next request) before that moment, so
                # an overlap in the log is an overlap the client caused.
                end = time.time()
                self.end_headers()
                self.wfile.write(ans.body)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the crawler hung up (size cap): logged below like any request
            finally:
                site.web.record(
                    LogEntry(site.hostport, self.path, start, end or time.time(), status,
                             {k.lower(): v for k, v in self.headers.items()})
                )

        def log_message(self, format: str, *args: object) -> None:
            return

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        # a crawler killed mid-request (the SIGKILL test) resets its connections: not an error
        # of the test web, and not worth a traceback on stderr
        return


class TestWeb:
    """A set of sites on 127.0.0.x with one shared request log."""

    __test__ = False  # not a pytest class

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.log: list[LogEntry] = []
        self.sites: dict[str, Site] = {}
        self._stop = threading.Event()

    def pause(self, seconds: float) -> None:
        """Server-side latency (an Event wait, so stop() interrupts it)."""
        self._stop.wait(seconds)

    def add_site(self, name: str, address: str, robots: str | None, latency: float = 0.0) -> Site:
        site = Site(self, address, robots, latency)
        self.sites[name] = site
        return site

    def record(self, entry: LogEntry) -> None:
        with self.changed:
            self.log.append(entry)
            self.changed.notify_all()

    def start(self) -> TestWeb:
        for site in self.sites.values():
            server = _Server((site.address, 0), _make_handler(site))
            site.server = server
            site.thread = threading.Thread(target=server.serve_forever, daemon=True)
            site.thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for site in self.sites.values():
            if site.server is not None:
                site.server.shutdown()
                site.server.server_close()

    def __enter__(self) -> TestWeb:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ reading the log
    def entries(self, site: str | None = None) -> list[LogEntry]:
        with self.lock:
            log = list(self.log)
        if site is None:
            return log
        hp = self.sites[site].hostport
        return [e for e in log if e.host == hp]

    def wait_for(self, predicate: Callable[[list[LogEntry]], bool], timeout: float) -> bool:
        """Block until ``predicate(log)`` holds (re-checked at every logged request)."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while not predicate(self.log):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.changed.wait(left)
            return True

    def clear(self) -> None:
        with self.lock:
            self.log.clear()
            for site in self.sites.values():
                site.hits.clear()


def gated_chain(site: Site, prefix: str, *, title: str, pages: int, gate_at: int,
                seed: int) -> tuple[threading.Event, threading.Event]:
    """Pages ``{prefix}0`` .. ``{prefix}{pages - 1}`` on ``site``, each linking to the next; the
    answer of page ``gate_at`` sets ``arrived`` and then waits (up to 60 s) for ``gate``: a
    crawl held mid-run, its earlier pages committed, until the test sets the gate.  Returns
    (gate, arrived)."""
    gate, arrived = threading.Event(), threading.Event()
    for i in range(pages):
        body = html(f"{title} {i}", f"<p>{words(seed + i)}</p><a href='{prefix}{i + 1}'>next</a>")

        def answer(path: str, headers: dict[str, str], n: int, body: bytes = body,
                   i: int = i) -> Answer:
            if i == gate_at:
                arrived.set()
                gate.wait(60)
            return Answer(body=body)

        site.page(f"{prefix}{i}", answer)
    return gate, arrived


def max_in_flight(entries: list[LogEntry]) -> int:
    events = sorted([(e.start, 1) for e in entries] + [(e.end, -1) for e in entries],
                    key=lambda t: (t[0], t[1]))
    now = best = 0
    for _, step in events:
        now += step
        best = max(best, now)
    return best


def min_start_gap(entries: list[LogEntry]) -> float:
    starts = sorted(e.start for e in entries)
    return min((b - a for a, b in itertools.pairwise(starts)), default=float("inf"))


# ---------------------------------------------------------------------- the standard test web
WWW_ROBOTS = """# the test web's main site
User-agent: otherbot
Disallow: /

User-agent: websift
Disallow: /private/
Disallow: /*.secret$
Allow: /private/open.html
"""

SLOW_ROBOTS = """User-agent: *
Crawl-delay: 0.5
Disallow: /hidden
"""


def _calendar(path: str, headers: dict[str, str], n: int) -> Answer:
    # /calendar/YYYY/MM -> links to the month before and after, for ever
    parts = path.strip("/").split("/")
    year, month = int(parts[1]), int(parts[2])
    nxt = (year + (month == 12), month % 12 + 1)
    prv = (year - (month == 1), (month - 2) % 12 + 1)
    body = (f"<h1>{year}-{month:02d}</h1><p>{words(year * 12 + month)}</p>"
            f'<a href="/calendar/{nxt[0]}/{nxt[1]:02d}">next</a> '
            f'<a href="/calendar/{prv[0]}/{prv[1]:02d}">previous</a>')
    return Answer(body=html(f"calendar {year}-{month}", body))


def _chain(path: str, headers: dict[str, str], n: int) -> Answer:
    k = int(path.rsplit("/", 1)[1])
    return Answer(302, b"", {"Location": f"/chain/{k + 1}"})


def _busy(path: str, headers: dict[str, str], n: int) -> Answer:
    if n == 1:
        return Answer(429, b"slow down", {"Retry-After": "1"}, "text/plain")
    return Answer(body=html("busy", f"<p>{words(77)}</p>"))


def _conditional(tag: str, text: str) -> Handler:
    etag = f'"{tag}"'

    def handler(path: str, headers: dict[str, str], n: int) -> Answer:
        if headers.get("if-none-match") == etag or headers.get("if-modified-since") == LAST_MODIFIED:
            return Answer(304, b"", {"ETag": etag, "Last-Modified": LAST_MODIFIED}, "")
        return Answer(body=html(tag, f"<p>{text}</p>"),
                      headers={"ETag": etag, "Last-Modified": LAST_MODIFIED})

    return handler


def _changing(path: str, headers: dict[str, str], n: int) -> Answer:
    return Answer(body=html("news", f"<p>edition {n}: {words(500 + n)}</p>"))


def build_standard_web() -> TestWeb:
    """The test web the crawler tests use (call ``start()``)."""
    web = TestWeb()
    www = web.add_site("www", "127.0.0.2", WWW_ROBOTS)
    slow = web.add_site("slow", "127.0.0.3", SLOW_ROBOTS)
    down = web.add_site("down", "127.0.0.4", "")
    down.robots_status = 503  # robots.txt 5xx: the whole site is off limits for now
    norobots = web.add_site("norobots", "127.0.0.5", None)  # robots.txt 404: all allowed
    norobots.page("/", html("no robots", f"<p>{words(95)}</p><a href='/private/x'>x</a>"))
    norobots.page("/private/x", html("x", f"<p>{words(96)}</p>"))
    _fill_www(web, www)
    _fill_slow(web, slow)
    down.page("/", html("down", "<p>never fetched</p>"))
    return web


def _fill_www(web: TestWeb, www: Site) -> None:
    links = [
        ("/page/1", "First page"), ("/page/2", "Second   page\n here"), ("/page/3", "Third"),
        ("/private/a.html", "private"), ("/private/open.html", "open private"),
        ("/doc.secret", "secret"), ("/calendar/2024/06", "calendar"),
        ("/loop/a", "loop"), ("/chain/1", "chain"), ("/huge", "huge"), ("/to-outside", "out"),
        ("/file.pdf", "pdf"), ("/data.json", "json"), ("/missing", "missing"),
        ("/error", "error"), ("/unavailable", "unavailable"), ("/busy", "busy"),
        ("/noindex", "noindex"), ("/header-nofollow", "header nofollow"),
        ("/dup/a", "dup a"), ("/dup/b", "dup b"), ("/near/a", "near a"), ("/near/b", "near b"),
        ("/latin1", "latin1"), ("/sjis", "sjis"), ("/broken", "broken"), ("/empty", "empty"),
        ("/etag", "etag"), ("/lastmod", "lastmod"), ("/news", "news"),
        ("/page/1#section", "fragment"), ("HTTP://127.0.0.2:{port}/./page/2", "odd spelling"),
        ("mailto:someone@example.org", "mail"), ("javascript:void(0)", "js"),
        ("http://10.1.2.3/intranet", "private address"),
        ("{slow}/", "the slow site"), ("{down}/", "the down site"),
        ("{norobots}/", "the no-robots site"),
    ]

    def home(path: str, headers: dict[str, str], n: int) -> Answer:
        port = www.server.server_address[1] if www.server else 0
        subst = {"port": port, "slow": web.sites["slow"].origin, "down": web.sites["down"].origin,
                 "norobots": web.sites["norobots"].origin}
        items = "".join(f'<li><a href="{h.format(**subst)}">{t}</a></li>' for h, t in links)
        items += '<li><a rel="nofollow" href="/nofollowed">do not follow</a></li>'
        items += '<li><a rel="external nofollow" href="/page/3">nofollow to a followed page</a></li>'
        return Answer(body=html("Home of the test web", f"<p>{words(1)}</p><ul>{items}</ul>"))

    www.page("/", home)
    for i in (1, 2, 3):
        www.page(f"/page/{i}", html(f"Page {i}", f"<p>{words(10 + i)}</p><a href='/'>home</a>"
                                    f"<a href='/page/{i % 3 + 1}'>next</a>"))
    www.page("/private/a.html", html("private", "<p>must never be fetched</p>"))
    www.page("/private/open.html", html("open", f"<p>{words(20)}</p>"))
    www.page("/doc.secret", html("secret", "<p>must never be fetched</p>"))
    www.page("/nofollowed", html("nofollowed", "<p>only a nofollow link names me</p>"))
    www.prefix("/calendar/", _calendar)
    www.page("/loop/a", Answer(301, b"", {"Location": "/loop/b"}))
    www.page("/loop/b", Answer(302, b"", {"Location": "/loop/a"}))
    www.prefix("/chain/", _chain)
    www.page("/to-outside", Answer(302, b"", {"Location": "http://10.1.2.3/secret"}))
    huge = Answer(body=b"<html><body>" + b"x" * HUGE_BYTES + b"</body></html>")
    www.page("/huge", huge)
    www.page("/file.pdf", Answer(body=b"%PDF-1.4\n" + bytes(range(256)) * 40,
                                 headers={"X-Robots-Tag": "noindex"},
                                 content_type="application/pdf"))
    www.page("/data.json", Answer(body=b'{"a": "<a href=/page/9>not a link</a>"}',
                                  content_type="application/json"))
    www.page("/error", Answer(500, html("error", "<p>oops</p>")))
    www.page("/unavailable", Answer(503, html("unavailable", "<p>later</p>"), {"Retry-After": "0"}))
    www.page("/busy", _busy)
    www.page("/noindex", html("noindex", f"<p>{words(30)}</p><a href='/from-noindex'>x</a>",
                              head='<meta name="ROBOTS" content="noindex">'))
    www.page("/from-noindex", html("from noindex", f"<p>{words(31)}</p>"))
    www.page("/header-nofollow", Answer(
        body=html("hn", f"<p>{words(32)}</p><a href='/behind-header-nofollow'>x</a>"),
        headers={"X-Robots-Tag": "otherbot: noindex, websift: nofollow"}))
    www.page("/behind-header-nofollow", html("behind", "<p>never followed</p>"))
    dup = html("dup", f"<p>{words(40)}</p>")
    www.page("/dup/a", dup)
    www.page("/dup/b", dup)
    near = words(50, 200)
    www.page("/near/a", html("near", f"<p>{near}</p>"))
    www.page("/near/b", html("near", f"<p>{near} extra</p>"))
    www.page("/latin1", Answer(body="<html><head><title>caf\xe9</title></head><body>"
                               "<p>Cr\xe8me br\xfbl\xe9e \u20ac</p><a href='/page/1'>caf\xe9 "
                               "link</a></body></html>".encode("cp1252"),
                               content_type="text/html; charset=windows-1252"))
    www.page("/sjis", Answer(body="<html><head><meta charset='shift_jis'><title>日本</title>"
                             "</head><body><p>日本語のページ</p><a href='/page/2'>次へ</a>"
                             "</body></html>".encode("shift_jis"), content_type="text/html"))
    www.page("/broken", Answer(body=b"<html><body><p>unclosed <b><a href='/page/3'>bro\xff\xfeken"
                               b"</div></table><<<>>><a href=\"/page/1\">again",
                               content_type="text/html; charset=bogus-charset"))
    www.page("/empty", Answer(body=b"", content_type="text/html"))
    www.page("/etag", _conditional("etag-v1", words(60)))
    www.page("/lastmod", _conditional("lastmod-v1", words(61)))
    www.page("/news", _changing)


def _fill_slow(web: TestWeb, slow: Site) -> None:
    pages = "".join(f"<a href='/s/{i}'>s{i}</a> " for i in range(4))
    slow.page("/", html("slow home", f"<p>{words(90)}</p>{pages}<a href='/hidden'>hidden</a>"))
    for i in range(4):
        slow.page(f"/s/{i}", html(f"s{i}", f"<p>{words(91 + i)}</p><a href='/'>home</a>"))
    slow.page("/hidden", html("hidden", "<p>disallowed for *</p>"))


# ---------------------------------------------------------------------- a directory as a site
class StaticSite:
    """Serve a directory on one loopback address with a given robots.txt (benchmarks)."""

    def __init__(self, root: Path, address: str, robots: str) -> None:
        self.web = TestWeb()
        self.root = root.resolve()
        site = self.web.add_site("static", address, robots)
        site.prefix("/", self._file)
        self.site = site

    def _file(self, path: str, headers: dict[str, str], n: int) -> Answer:
        rel = urlsplit(path).path.lstrip("/")
        target = (self.root / rel).resolve()
        if target.is_dir():
            target = target / "index.html"
        if not str(target).startswith(str(self.root)) or not target.is_file():
            return Answer(404, b"not found", content_type="text/plain")
        ctype = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        if ctype.startswith("text/"):
            ctype += "; charset=utf-8"
        body = target.read_bytes()
        return Answer(body=body, content_type=ctype,
                      headers={"ETag": '"' + hashlib.sha1(body).hexdigest()[:16] + '"'})

    def __enter__(self) -> StaticSite:
        self.web.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.web.stop()

    @property
    def origin(self) -> str:
        return self.site.origin
