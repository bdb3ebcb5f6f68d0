"""The hostile test web: servers that misbehave on purpose, on 127.0.0.20-29.

``testkit/testweb.py`` holds the well-behaved web (and a few classic hazards); this module adds
what a crawler of the open web meets on a bad day, each on raw bytes where http.server would
be too polite:

- a decompression bomb: a ~2 MiB gzip body that inflates to 2 GiB of zeros, generated while it is
  sent (one compressed 1 MiB block repeated, the CRC computed on the way), never held in memory;
- an endless body (chunked transfer encoding that never sends its last chunk);
- a server that sends one byte per second (a slow-loris answer);
- a body shorter than its Content-Length, and an answer that is not HTTP at all;
- endless response headers (1 KiB lines, up to ``HEAD_FLOOD`` bytes) and ten thousand tiny
  ones: ``DOWNLOAD_MAXSIZE`` caps a body only;
- invalid and mixed encodings, binary sent as text/html, 100,000-level nesting, unterminated
  markup, a megabyte-long line and a megabyte-long URL, a self-redirect, 20,000 links on one
  page, a day-by-day calendar and a relative link that grows its own path for ever.

Every streamed answer is logged like any request (``LogEntry``; its ``end`` is when the client
hung up or the answer finished) and its byte count is kept in ``HostileWeb.sent``, so a test
can tell from the server's side how long a crawler held on and how much it read.

``launch()`` runs the ``websift`` command line with two test-only adjustments read from the
environment (see its doc): crawler settings (a short download timeout keeps the slow-loris
case inside the test's time budget) and host name -> loopback address mappings (there is no DNS
here: ``socket.getaddrinfo`` is the boundary, so it is what the SSRF tests replace).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import random
import socket
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, BinaryIO

from testkit.testweb import Answer, LogEntry, Site, TestWeb, _make_handler, html, words

# ---------------------------------------------------------------------- sizes of the hazards
BOMB_BLOCK = 1 << 20  # bytes of zeros per compressed block
BOMB_BLOCKS = 2048  # 2 GiB inflated
ENDLESS_CHUNK = 64 * 1024
TRICKLE_BYTES = 100  # the slow answer's Content-Length (one byte per second)
NESTING = 100_000
LONG_LINE = 1 << 20
LONG_URL = 1 << 20
MANY_LINKS = 20_000
GROW_SEGMENT = "again"
HEAD_FLOOD = 300 * 1024 * 1024  # bytes of header lines the flooding answer sends at most
HEAD_LINE = 1024
TINY_HEADERS = 10_000

ENV_SETTINGS = "WEBSIFT_TEST_SETTINGS"  # JSON {"DOWNLOAD_TIMEOUT": 3, ...} for crawler.settings
HostTable = dict[str, "str | dict[str, str]"]
ENV_HOSTS = "WEBSIFT_TEST_HOSTS"  # JSON {"public.example": "127.0.0.1", ...}

OPEN_ROBOTS = "User-agent: *\nDisallow:\n"

# (path, wfile, stop) -> bytes written; raises OSError when the client hangs up
Writer = Callable[[BinaryIO, threading.Event], int]


@dataclass
class Stream:
    """An answer written by a function, byte by byte if it likes (no Content-Length unless
    given in ``headers``)."""

    write: Writer
    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)
    raw: bool = False  # the writer sends the status line and headers itself (or nothing)


class StreamSite(Site):
    """A :class:`testweb.Site` that can also stream answers of its own making."""

    def __init__(self, web: TestWeb, address: str, robots: str | None) -> None:
        super().__init__(web, address, robots)
        self.streams: dict[str, Stream] = {}

    def stream(self, path: str, stream: Stream) -> None:
        self.streams[path] = stream


class HostileWeb(TestWeb):
    """A :class:`testweb.TestWeb` whose sites may stream (``StreamSite``)."""

    __test__ = False

    def __init__(self) -> None:
        super().__init__()
        self.sent: dict[tuple[str, str], int] = {}  # (hostport, path) -> bytes of the last answer

    def add_stream_site(self, name: str, address: str, robots: str | None = OPEN_ROBOTS) -> StreamSite:
        site = StreamSite(self, address, robots)
        self.sites[name] = site
        return site

    def start(self) -> HostileWeb:
        for site in self.sites.values():
            handler = _stream_handler(self, site) if isinstance(site, StreamSite) else _make_handler(site)
            server = ThreadingHTTPServer((site.address, 0), handler)
            server.daemon_threads = True
            site.server = server
            site.thread = threading.Thread(target=server.serve_forever, daemon=True)
            site.thread.start()
        return self

    def __enter__(self) -> HostileWeb:
        return self.start()


def _stream_handler(web: HostileWeb, site: StreamSite) -> type[BaseHTTPRequestHandler]:
    base = _make_handler(site)

    class Handler(base):  # type: ignore[valid-type,misc]
        def do_GET(self) -> None:
            stream = site.streams.get(self.path)
            if stream is None:
                super().do_GET()
                return
            start = time.time()
            sent = 0
            try:
                if not stream.raw:
                    self.send_response(stream.status)
                    for key, value in stream.headers:
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.flush()
                sent = stream.write(self.wfile, web._stop)
            except OSError:  # BrokenPipe / ConnectionReset: the crawler hung up
                pass
            finally:
                self.close_connection = True
                with web.lock:
                    web.sent[(site.hostport, self.path)] = sent
                web.record(LogEntry(site.hostport, self.path, start, time.time(), stream.status,
                                    {k.lower(): v for k, v in self.headers.items()}))

    return Handler


# ---------------------------------------------------------------------- streamed hazards
def _counting(wfile: BinaryIO) -> Callable[[bytes], int]:
    def put(data: bytes) -> int:
        wfile.write(data)
        wfile.flush()
        return len(data)

    return put


def _gf2_times(matrix: list[int], vector: int) -> int:
    out, i = 0, 0
    while vector:
        if vector & 1:
            out ^= matrix[i]
        vector >>= 1
        i += 1
    return out


def crc32_of_zeros(n: int) -> int:
    """``zlib.crc32(bytes(n))`` without the bytes: the register's step for one zero bit is
    linear over GF(2), so 8n steps are a matrix power (zlib's crc32_combine does the same)."""
    step = [0xEDB88320] + [1 << (i - 1) for i in range(1, 32)]  # one zero bit
    register, bits = 0xFFFFFFFF, 8 * n
    while bits:
        if bits & 1:
            register = _gf2_times(step, register)
        step = [_gf2_times(step, column) for column in step]  # the step for twice the bits
        bits >>= 1
    return register ^ 0xFFFFFFFF


def gzip_bomb(blocks: int = BOMB_BLOCKS, block: int = BOMB_BLOCK) -> Iterator[bytes]:
    """A valid gzip stream of ``blocks * block`` zero bytes, produced piece by piece.

    After a full flush deflate's state is reset, so every further block of the same input
    compresses to the same bytes: compress three, send the first, then the second again and
    again, then the final empty block and a trailer computed without the zeros.
    """
    zeros = bytes(block)
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: gzip header and trailer
    first = comp.compress(zeros) + comp.flush(zlib.Z_FULL_FLUSH)
    steady = comp.compress(zeros) + comp.flush(zlib.Z_FULL_FLUSH)
    assert comp.compress(zeros) + comp.flush(zlib.Z_FULL_FLUSH) == steady
    tail = comp.flush(zlib.Z_FINISH)[:-8]  # the last block without its trailer (3 blocks')
    total = blocks * block
    yield first
    for _ in range(blocks - 1):
        yield steady
    yield tail + crc32_of_zeros(total).to_bytes(4, "little") + (total % 2**32).to_bytes(4, "little")


def _bomb(wfile: BinaryIO, stop: threading.Event) -> int:
    put, sent = _counting(wfile), 0
    for piece in gzip_bomb():
        if stop.is_set():
            break
        sent += put(piece)
    return sent


def _endless(wfile: BinaryIO, stop: threading.Event) -> int:
    """Chunked transfer encoding whose last chunk never comes."""
    line = b"<p>" + words(7, 12).encode() + b"</p>\n"
    data = (line * (ENDLESS_CHUNK // len(line) + 1))[:ENDLESS_CHUNK]
    chunk = f"{len(data):x}\r\n".encode() + data + b"\r\n"
    put, sent = _counting(wfile), 0
    sent += put(f"{len(b'<html><body>'):x}\r\n<html><body>\r\n".encode())
    while not stop.is_set():
        sent += put(chunk)
    return sent


def _trickle(wfile: BinaryIO, stop: threading.Event) -> int:
    """One byte per second, for as long as the client listens (a slow-loris answer)."""
    put, sent = _counting(wfile), 0
    body = (b"<html><body><p>" + b"s" * TRICKLE_BYTES)[:TRICKLE_BYTES]
    for i in range(len(body)):
        sent += put(body[i : i + 1])
        if stop.wait(1.0):
            break
    return sent


def _short(wfile: BinaryIO, stop: threading.Event) -> int:
    """Fewer bytes than the Content-Length promised, then the connection closes."""
    return _counting(wfile)(b"<html><body><p>cut sh")


def _garbage(wfile: BinaryIO, stop: threading.Event) -> int:
    """Not HTTP at all (with ``Stream(raw=True)``)."""
    return _counting(wfile)(b"HELLO THERE\r\nthis is not a status line\r\n\r\n<html>")


def head_flood(wfile: BinaryIO, stop: threading.Event) -> int:
    """A status line, then 1 KiB header lines until ``HEAD_FLOOD`` bytes or the client hangs
    up (with ``Stream(raw=True)``)."""
    put = _counting(wfile)
    sent = put(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n")
    lines = b"".join(b"X-Pad-%05d: " % i + b"a" * (HEAD_LINE - 15) + b"\r\n" for i in range(64))
    while sent < HEAD_FLOOD and not stop.is_set():
        sent += put(lines)
    return sent


def tiny_headers(wfile: BinaryIO, stop: threading.Event) -> int:
    """``TINY_HEADERS`` header lines of a few bytes each, then a small page (raw)."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 13\r\n"
    head += b"".join(b"X%d: 1\r\n" % i for i in range(TINY_HEADERS))
    return _counting(wfile)(head + b"\r\n<html></html>")


def hang_up(wfile: BinaryIO, stop: threading.Event) -> int:
    """Close the connection without a byte of answer (with ``Stream(raw=True)``)."""
    return 0


# ---------------------------------------------------------------------- pages
def deep_nesting(depth: int = NESTING) -> bytes:
    return (b"<html><head><title>deep</title></head><body><a href='/ok/deep'>before</a>"
            + b"<div>" * depth + b"<a href='/ok/deep-inside'>inside</a>" + b"</div>" * depth
            + b"<a href='/ok/deep-after'>after</a></body></html>")


def unterminated() -> bytes:
    return (b"<html><head><title>unterminated</title><body><p>text <b><i><table><tr><td>"
            b"<a href='/ok/unterminated'>first</a> <!-- a comment that never closes "
            b"<a href=\"/ok/never")


def long_line(n: int = LONG_LINE) -> bytes:
    text = (words(3, 200) + " ").encode()
    line = (text * (n // len(text) + 1))[:n]
    return b"<html><body><p>" + line + b"</p><a href='/ok/longline'>after the line</a></body></html>"


def long_url(n: int = LONG_URL) -> bytes:
    href = "/long?" + "q" * n
    return html("long url", f"<p>{words(4)}</p><a href='{href}'>far</a> "
                "<a href='/ok/longurl'>near</a>")


def binary_as_html(n: int = 200_000) -> bytes:
    return random.Random(5).randbytes(n)


def many_links(origin: str, n: int = MANY_LINKS) -> bytes:
    items = "".join(f"<a href='{origin}/m/{i}'>m{i}</a>\n" for i in range(n))
    return html("many links", f"<p>{words(6)}</p>{items}")


def _day(path: str, headers: dict[str, str], n: int) -> Answer:
    """/day?d=YYYY-MM-DD -> the day before and after, the month and the year after: for ever."""
    stamp = path.partition("d=")[2] or "2024-01-01"
    t = time.strptime(stamp, "%Y-%m-%d")
    day = time.mktime(t) + 12 * 3600
    links = [time.strftime("%Y-%m-%d", time.localtime(day + k * 86400)) for k in (1, -1, 31, 366)]
    body = f"<h1>{stamp}</h1><p>{words(t.tm_yday + 1000 * t.tm_year)}</p>" + "".join(
        f"<a href='/day?d={d}'>{d}</a> " for d in links)
    return Answer(body=html(f"day {stamp}", body))


def _grow(path: str, headers: dict[str, str], n: int) -> Answer:
    depth = path.count(GROW_SEGMENT)
    return Answer(body=html(f"grow {depth}", f"<p>{words(2000 + depth)}</p>"
                            f"<a href='{GROW_SEGMENT}/'>deeper</a>"))


def _ok(path: str, headers: dict[str, str], n: int) -> Answer:
    seed = sum(path.encode()) * 31 + len(path)
    return Answer(body=html(f"ok {path}", f"<p>{words(seed)}</p>"))


ENCODINGS: dict[str, Answer] = {
    # declared UTF-8, Latin-1 bytes inside
    "/enc/mixed": Answer(body="<html><head><title>caf\xe9 cr\xe8me</title></head><body><p>d\xe9j\xe0"
                         " vu</p><a href='/ok/mixed'>caf\xe9</a></body></html>".encode("latin-1"),
                         content_type="text/html; charset=utf-8"),
    # a charset name no codec has
    "/enc/bogus": Answer(body="<html><body><p>na\u00efve</p><a href='/ok/bogus'>na\u00efve</a>"
                         "</body></html>".encode(), content_type="text/html; charset=x-no-such-1"),
    # header says Latin-1, a UTF-8 BOM says UTF-8 (the BOM wins, as in browsers)
    "/enc/bom8": Answer(body=b"\xef\xbb\xbf" + "<html><body><a href='/ok/bom8'>caf\u00e9</a>"
                        "</body></html>".encode(), content_type="text/html; charset=iso-8859-1"),
    # header says UTF-8, a UTF-16LE BOM says otherwise: the links exist only if the BOM is read
    "/enc/bom16": Answer(body="\ufeff<html><body><a href='/ok/bom16'>sixteen</a></body></html>"
                         .encode("utf-16-le"), content_type="text/html; charset=utf-8"),
    # a <meta charset> that contradicts the bytes' own BOM-less UTF-8 and the header's absence
    "/enc/meta": Answer(body="<html><head><meta charset='no-such-codec'></head><body>"
                        "<a href='/ok/meta'>\u65e5\u672c</a></body></html>".encode(),
                        content_type="text/html"),
}


# ---------------------------------------------------------------------- the hostile web
def build_hostile_web() -> HostileWeb:
    """Sites: hub (the pages), bomb, endless, trickle, trap, many (the 20,000 link targets).

    Every site but ``many`` has a plain ``/ok/...`` page linked from the hub, so a test can see
    that each host kept being crawled after (or while) its hazard struck.
    """
    web = HostileWeb()
    hub = web.add_stream_site("hub", "127.0.0.20")
    bomb = web.add_stream_site("bomb", "127.0.0.21")
    endless = web.add_stream_site("endless", "127.0.0.22")
    trickle = web.add_stream_site("trickle", "127.0.0.23")
    trap = web.add_stream_site("trap", "127.0.0.24")
    many = web.add_stream_site("many", "127.0.0.25")
    for site in (hub, bomb, endless, trickle, trap, many):
        site.prefix("/ok/", _ok)
    bomb.stream("/bomb", Stream(_bomb, headers=[("Content-Type", "text/html; charset=utf-8"),
                                                ("Content-Encoding", "gzip"),
                                                ("Connection", "close")]))
    endless.stream("/endless", Stream(_endless, headers=[("Content-Type", "text/html"),
                                                         ("Transfer-Encoding", "chunked")]))
    trickle.stream("/trickle", Stream(_trickle, headers=[("Content-Type", "text/html"),
                                                         ("Content-Length", str(TRICKLE_BYTES))]))
    trap.prefix("/day", _day)
    many.prefix("/m/", _ok)
    for path, answer in ENCODINGS.items():
        hub.page(path, answer)
    hub.page("/binary", Answer(body=binary_as_html(), content_type="text/html"))
    hub.page("/deep", deep_nesting())
    hub.page("/unterminated", unterminated())
    hub.page("/longline", long_line())
    hub.page("/longurl", long_url())
    hub.page("/self", Answer(301, b"", {"Location": "/self"}))
    hub.prefix("/grow/", _grow)
    hub.stream("/short", Stream(_short, headers=[("Content-Type", "text/html"),
                                                 ("Content-Length", "1000")]))
    hub.stream("/garbage", Stream(_garbage, raw=True))
    hub.stream("/heads", Stream(head_flood, raw=True))
    hub.stream("/tinyheads", Stream(tiny_headers, raw=True))

    def home(path: str, headers: dict[str, str], n: int) -> Answer:
        targets = [*ENCODINGS, "/binary", "/deep", "/unterminated", "/longline", "/longurl",
                   "/self", "/grow/", "/many", "/short", "/garbage", "/heads", "/tinyheads",
                   "/ok/hub"]
        others = [bomb.url("/bomb"), bomb.url("/ok/bomb"), endless.url("/endless"),
                  endless.url("/ok/endless"), trickle.url("/trickle"), trickle.url("/ok/trickle"),
                  trap.url("/day?d=2024-01-01"), trap.url("/ok/trap")]
        items = "".join(f"<li><a href='{t}'>{t.rsplit('/', 1)[-1] or t}</a></li>"
                        for t in [*targets, *others])
        return Answer(body=html("hostile hub", f"<p>{words(8)}</p><ul>{items}</ul>"))

    hub.page("/", home)
    many_page: list[bytes] = []

    def many_handler(path: str, headers: dict[str, str], n: int) -> Answer:
        if not many_page:
            many_page.append(many_links(many.origin))
        return Answer(body=many_page[0])

    hub.page("/many", many_handler)
    return web


# ---------------------------------------------------------------------- running websift
def launch_env(settings: dict[str, Any] | None = None, hosts: HostTable | None = None) -> dict[str, str]:
    """Environment variables for :func:`launch` (merge into a child's environment)."""
    env: dict[str, str] = {}
    if settings:
        env[ENV_SETTINGS] = json.dumps(settings)
    if hosts:
        env[ENV_HOSTS] = json.dumps(hosts)
    return env


LAUNCH = "import sys; from testkit import hostileweb; sys.exit(hostileweb.launch(sys.argv[1:]))"


def launch(argv: list[str]) -> int:
    """Run ``websift`` (``api.cli.main``) after two test-only adjustments from the environment.

    ``WEBSIFT_TEST_SETTINGS``: names of ``crawler.settings`` and their values (read by the
    crawler when a crawl starts, so setting the module attribute is enough).

    ``WEBSIFT_TEST_HOSTS``: host names and the addresses they resolve to (see
    :func:`_map_hosts`).  There is no DNS here, and name resolution is exactly the boundary the
    SSRF guard defends, so the resolver functions of ``socket`` are what is replaced, for those
    names and nothing else: a name that "resolves" to 127.0.0.1 behaves as a public name that
    points into private space would.  Connections may only go to loopback addresses, so a
    wrong decision can never send traffic off this machine.
    """
    raw_settings = os.environ.get(ENV_SETTINGS)
    if raw_settings:
        from websift.crawler import settings as crawler_settings

        for key, value in json.loads(raw_settings).items():
            if not hasattr(crawler_settings, key):
                raise SystemExit(f"hostileweb.launch: crawler.settings has no {key}")
            setattr(crawler_settings, key, value)
    raw_hosts = os.environ.get(ENV_HOSTS)
    if raw_hosts:
        _map_hosts(json.loads(raw_hosts))
    from websift.api.cli import main

    return main(argv)


def _loopback(address: str) -> bool:
    import ipaddress

    ip = ipaddress.ip_address(address.partition("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def _map_hosts(table: HostTable) -> None:  # noqa: C901 - a test resolver: one branch per kind of hostile answer
    """Host names for this process only; see :func:`launch`.  A value is one of:

    - an address: both resolvers (``getaddrinfo``, which the crawler's scope check calls, and
      ``gethostbyname``, which Scrapy's resolver calls to connect) answer it;
    - ``{"address": A, "served_by": B}``: both resolvers answer A (say a public address), and a
      connection to A is routed to the loopback server B, so a public-looking site runs here;
    - ``{"check": A, "connect": B}``: the two lookups disagree (DNS rebinding): the check hears
      A, the connection hears B.

    Whatever the mapping, every outgoing connection of the process to an address outside
    127.0.0.0/8 and ::1 (after routing) is refused here and reported on stderr ("hostileweb:
    blocked ..."), so a crawler that failed to refuse 10.x could not reach a real 10.x host.
    """
    check: dict[str, str] = {}
    connect: dict[str, str] = {}
    routes: dict[str, str] = {}
    for name, value in table.items():
        key = name.lower().rstrip(".")
        if isinstance(value, str):
            check[key] = connect[key] = value
        elif "address" in value:
            check[key] = connect[key] = value["address"]
            routes[value["address"]] = value["served_by"]
        else:
            check[key], connect[key] = value["check"], value["connect"]
    for target in routes.values():
        if not _loopback(target):
            raise SystemExit(f"hostileweb.launch: {target} is not a loopback address")
    real_gai, real_ghbn = socket.getaddrinfo, socket.gethostbyname

    def mapped(table: dict[str, str], host: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if isinstance(name, str):
            return table.get(name.lower().rstrip("."), host)
        return host

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        return real_gai(mapped(check, host), port, *args, **kwargs)

    def gethostbyname(host: str) -> str:
        return real_ghbn(mapped(connect, host))

    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]
    socket.gethostbyname = gethostbyname
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def allowed(sock: socket.socket, address: Any) -> bool:
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            return True
        if _loopback(str(address[0])):
            return True
        print(f"hostileweb: blocked a connection to {address[0]}", file=sys.stderr, flush=True)
        return False

    def routed(address: Any) -> Any:
        if isinstance(address, tuple) and str(address[0]) in routes:
            return (routes[str(address[0])], *address[1:])
        return address

    def guarded_connect(sock: socket.socket, address: Any) -> None:
        address = routed(address)
        if not allowed(sock, address):
            raise ConnectionRefusedError(f"hostileweb: {address[0]} is not loopback")
        real_connect(sock, address)

    def guarded_connect_ex(sock: socket.socket, address: Any) -> int:
        address = routed(address)
        if not allowed(sock, address):
            return errno.ECONNREFUSED
        return real_connect_ex(sock, address)

    socket.socket.connect = guarded_connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = guarded_connect_ex  # type: ignore[method-assign,assignment]


def websift_argv(*args: str) -> list[str]:
    """The child command line: ``python -c LAUNCH websift-args...``."""
    return [sys.executable, "-c", LAUNCH, *args]


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    peak_rss: int  # bytes, the child's largest resident set seen (sampled)


def run_launched(*args: str, settings: dict[str, Any] | None = None,
                 hosts: HostTable | None = None, timeout: float = 60.0,
                 sample: float = 0.05) -> Run:
    """Run ``websift args...`` through :func:`launch` in a child process, sampling its RSS.

    The sampling waits on the process (``Popen.wait`` with a timeout), not on a clock; a child
    still running at ``timeout`` is killed and the run fails the caller's assertions.
    """
    import subprocess
    import tempfile
    from pathlib import Path

    import psutil

    repo = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(repo),
           **launch_env(settings, hosts)}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        child = subprocess.Popen(websift_argv(*args), stdout=out, stderr=err, env=env, cwd=repo)
        proc = psutil.Process(child.pid)
        peak = 0
        while True:
            with contextlib.suppress(psutil.Error):  # the child just ended: nothing to sample
                peak = max(peak, proc.memory_info().rss)
            try:
                child.wait(timeout=sample)
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() - t0 > timeout:
                    child.kill()
                    child.wait()
                    break
        seconds = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        return Run(child.returncode, out.read().decode(errors="replace"),
                   err.read().decode(errors="replace"), seconds, peak)
