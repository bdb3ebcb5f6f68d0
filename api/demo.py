"""``websift demo`` (what ``make run`` runs): the whole engine on a built-in local corpus.

The corpus is made on the spot, with no network: the HTML that ``pydoc`` writes for a few hundred
modules of the installed standard library (real text, real links between modules), plus a front
page that lists them with their synopses.  It is served on a loopback address that the demo owns
(``http://127.0.0.2:8000/`` unless told otherwise) and handed to ``websift up``, the command a
user runs for real: it crawls the site continuously, indexes what it fetched within seconds,
ranks it, and serves search at ``http://127.0.0.1:8000`` until interrupted, each part its own
``websift`` process, so the demo is also a smoke test of the CLI.

A second ``make run`` reuses the generated site and the data directory: the crawl then resumes,
and indexing is incremental.
"""

from __future__ import annotations

import argparse
import html
import http.server
import json
import re
import subprocess
import sys
import threading
from pathlib import Path

from websift.core.datadir import DataDir, atomic_write_bytes

# The standard-library modules the demo documents first; pages they link to are added after.
SEED_MODULES = (
    "abc argparse array ast asyncio base64 bisect bz2 calendar cmath codecs collections "
    "concurrent.futures configparser contextlib copy csv ctypes dataclasses datetime decimal difflib "
    "dis email enum fileinput fnmatch fractions ftplib functools gc getopt getpass gettext glob gzip "
    "hashlib heapq hmac html html.parser http http.client http.cookies http.server imaplib "
    "importlib inspect io ipaddress itertools json keyword linecache locale logging lzma mailbox "
    "math mimetypes multiprocessing numbers operator optparse os os.path pathlib pickle pkgutil "
    "platform plistlib poplib pprint profile pstats queue random re reprlib sched secrets select "
    "selectors shelve shlex shutil signal smtplib socket socketserver sqlite3 ssl stat statistics "
    "string struct subprocess sys sysconfig tarfile tempfile textwrap threading time timeit token "
    "tokenize trace traceback types typing unicodedata unittest unittest.mock urllib urllib.parse "
    "urllib.request uuid warnings weakref wsgiref xml xml.dom xml.etree.ElementTree xml.sax "
    "zipfile zlib zoneinfo"
).split()
MAX_MODULES = 400
SITE_HOST = "127.0.0.2"
SITE_PORT = 8000
ROBOTS_TXT = "User-agent: *\nDisallow: /private/\n"

# The pydoc writer runs in a child process so that importing modules has no effect on this one.
_PYDOC_WRITER = r"""
import io, json, os, pydoc, re, sys, contextlib
names = json.loads(sys.stdin.read())
out = {}
for name in names:
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            obj, _ = pydoc.resolve(name)
            page = pydoc.html.page(pydoc.describe(obj), pydoc.html.document(obj, name))
    except BaseException as exc:  # report, never stop: some modules refuse to import here
        out[name] = {"error": f"{type(exc).__name__}: {exc}"[:200]}
        continue
    with open(name + ".html", "w", encoding="utf-8") as fh:
        fh.write(page)
    doc = (getattr(obj, "__doc__", None) or "").strip().splitlines()
    out[name] = {"synopsis": doc[0] if doc else ""}
print(json.dumps(out))
"""
_LINK = r'href="([A-Za-z_][A-Za-z0-9_.]*)\.html'
# Test suites and tool internals are not documentation: leave them out of the corpus.
_SKIP = re.compile(r"(^|\.)(tests?|idle_test)(\.|$)|^(idlelib|lib2to3|turtledemo|antigravity|this)\b")


def build_site(site: Path) -> int:
    """Write the pydoc corpus into ``site`` (once); returns the number of module pages."""
    done = site / "modules.json"
    if done.exists():
        return len(json.loads(done.read_text()))
    site.mkdir(parents=True, exist_ok=True)
    modules: dict[str, dict[str, str]] = {}
    wanted = list(SEED_MODULES)
    failed: dict[str, str] = {}
    while wanted and len(modules) < MAX_MODULES:
        batch = [m for m in wanted if m not in modules and m not in failed][: MAX_MODULES - len(modules)]
        wanted = []
        if not batch:
            break
        proc = subprocess.run(
            [sys.executable, "-c", _PYDOC_WRITER],
            input=json.dumps(batch),
            capture_output=True,
            text=True,
            cwd=site,
            timeout=600,
            check=True,
        )
        for name, info in json.loads(proc.stdout.strip().splitlines()[-1]).items():
            if "error" in info:
                failed[name] = info["error"]
            else:
                modules[name] = info
        for name in batch:
            page = site / f"{name}.html"
            if page.exists():
                wanted.extend(re.findall(_LINK, page.read_text(encoding="utf-8", errors="replace")))
        wanted = sorted(n for n in set(wanted) - set(modules) - set(failed) if not _SKIP.search(n))
    items = "\n".join(
        f'<li><a href="{html.escape(n)}.html">{html.escape(n)}</a> — {html.escape(i["synopsis"])}</li>'
        for n, i in sorted(modules.items())
    )
    index = (
        "<!doctype html><html><head><meta charset='utf-8'><title>Python standard library "
        "(pydoc)</title></head><body><h1>Python standard library</h1><p>Documentation written by "
        f"pydoc for {len(modules)} modules of the installed Python.</p><ul>{items}</ul></body></html>"
    )
    (site / "index.html").write_text(index, encoding="utf-8")
    (site / "robots.txt").write_text(ROBOTS_TXT, encoding="utf-8")
    if failed:
        print(f"demo: {len(failed)} modules could not be documented here (skipped)", file=sys.stderr)
    atomic_write_bytes(done, json.dumps(modules).encode())
    return len(modules)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return


def serve_site(site: Path, host: str, port: int) -> http.server.ThreadingHTTPServer:
    """Serve ``site`` on ``host:port`` in a daemon thread."""

    def handler(*args: object, **kwargs: object) -> _QuietHandler:
        return _QuietHandler(*args, directory=str(site), **kwargs)  # type: ignore[arg-type]

    server = http.server.ThreadingHTTPServer((host, port), handler)
    threading.Thread(target=server.serve_forever, name="demo-site", daemon=True).start()
    return server


def _websift(*args: str) -> None:
    cmd = [sys.executable, "-m", "websift.api.cli", *args]
    print("$ websift " + " ".join(args), file=sys.stderr, flush=True)
    child = subprocess.Popen(cmd)
    while True:
        try:
            code = child.wait()
            break
        except KeyboardInterrupt:  # Ctrl-C reached the child too: wait while it stops in order
            continue
    if code != 0:
        raise SystemExit(f"demo: 'websift {args[0]}' failed with exit code {code}")


def run_demo(args: argparse.Namespace) -> int:
    data = DataDir.create(args.data)
    site = data.root / "demo-site"
    count = build_site(site)
    print(f"demo: {count} pydoc pages in {site}", file=sys.stderr)
    server = serve_site(site, args.site_host, args.site_port)
    seed = f"http://{args.site_host}:{args.site_port}/"
    print(f"demo: the site is served at {seed}; search at http://{args.host}:{args.port}/ "
          "once the first pages are indexed (Ctrl-C stops)", file=sys.stderr)
    try:
        _websift("up", seed, "--data", str(data.root), "--allow-private", "--delay", "0",
                 "--concurrency-per-host", "4", "--rank-every", "1m", "--host", args.host,
                 "--port", str(args.port))
    finally:
        server.shutdown()
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``websift demo``."""
    p = sub.add_parser(
        "demo",
        help="crawl, index, rank and serve a built-in local corpus (what 'make run' runs)",
        # Plain text, not the module docstring: that is reStructuredText, for readers of code.
        description="Run the whole engine on a built-in corpus, with no network: the HTML "
        "that pydoc writes for a few hundred standard-library modules is served on a loopback "
        "address (--site-host, --site-port) and handed to 'websift up', which crawls, indexes "
        "and ranks it and serves search at http://HOST:PORT/ until interrupted. The site and "
        "the crawl are kept in the data directory: a second run resumes the crawl and indexes "
        "incrementally.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to serve search on")
    p.add_argument("--port", type=int, default=8000, help="port to serve search on")
    p.add_argument("--site-host", default=SITE_HOST, help="loopback address for the demo site")
    p.add_argument("--site-port", type=int, default=SITE_PORT, help="port for the demo site")
    p.set_defaults(func=run_demo)
