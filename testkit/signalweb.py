"""A generated web (testkit/genweb.py) that changes while it is crawled, and says so or lies.

    web = ensure_web(root, WebParams(pages=600, hosts=6, port=8093))
    world = SignalWeb(web)          # sitemaps, feeds and canonical variants added to its files
    world.step(now)                 # the next change, at a known time (returns the event)

Host roles, by host number h:
- ``h % 3 == 0``: a *truthful* sitemap (``/sitemap.xml``, every regular page with its lastmod:
  the time it last changed);
- ``h % 3 == 1``: a *lying* sitemap: every rewrite gives every page lastmod = now, though
  none changed;
- ``h % 3 == 2``: no sitemap;
- ``h % 2 == 0``: a feed (``/feed.xml``, linked from the home page with ``<link
  rel="alternate">``) listing the host's news articles, newest first.
Every host has ``VARIANTS`` canonical variants: ``/p/<k>.v.html``, the page ``/p/<k>.html``
with a block of other words (so neither the content hash nor SimHash calls it a duplicate)
and ``<link rel="canonical" href="/p/<k>.html">``, linked from the home page.

Changes (:meth:`SignalWeb.step`), in turn: a page of a truthful-sitemap host changes (its
lastmod follows); a page of a host with neither sitemap nor feed changes; a feed host publishes
a news article (a new file, linked from its home page and listed in its feed); the lying hosts'
sitemaps are rewritten.  Files are replaced atomically (temp + rename), so the server never
serves half a file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from testkit.genweb import Web, vocabulary

VARIANTS = 10  # canonical variants per host
TRUTHFUL, LYING, NEITHER, FEED = "truthful_sitemap", "lying_sitemap", "neither", "feed"
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


@dataclass(frozen=True)
class Change:
    kind: str  # TRUTHFUL, NEITHER or FEED (a lying rewrite changes no page: not returned)
    host: int
    path: str
    at: float


def _write(path: Path, data: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(data)
    os.replace(tmp, path)


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


class SignalWeb:
    def __init__(self, web: Web, seed: int = 7) -> None:
        self.web = web
        self.hosts = web.params.hosts
        self.rng = np.random.default_rng(seed)
        self.words = vocabulary(2000)
        self.pages = {h: sorted(int(p.stem) for p in (web.host_dir(h) / "p").glob("*.html")
                                if p.stem.isdigit()) for h in range(self.hosts)}
        self.changed_at: dict[tuple[int, str], float] = {}
        self.news: dict[int, list[str]] = {h: [] for h in range(self.hosts)}
        self.turn = 0
        self.edits = 0
        now = 0.0  # lastmod of pages never changed: long ago
        for h in range(self.hosts):
            self._variants(h)
            if h % 2 == 0:
                self._feed(h)
            self._home(h)
            if h % 3 != 2:
                self._sitemap(h, now)

    # ------------------------------------------------------------------ roles
    def role(self, h: int) -> str:
        return (TRUTHFUL, LYING, NEITHER)[h % 3]

    def _text(self, n: int) -> str:
        return " ".join(self.words[i] for i in self.rng.integers(0, len(self.words), n))

    def _variants(self, h: int) -> None:
        d = self.web.host_dir(h) / "p"
        for k in self.pages[h][:VARIANTS]:
            page = (d / f"{k}.html").read_text()
            canon = f'<link rel="canonical" href="/p/{k}.html">'
            _write(d / f"{k}.html", page.replace("</head>", canon + "</head>", 1))
            variant = page.replace("</head>", canon + "</head>", 1).replace(
                "</body>", f"<aside>{self._text(200)}</aside></body>", 1)
            _write(d / f"{k}.v.html", variant)

    def _home(self, h: int) -> None:
        home = self.web.host_dir(h) / "index.html"
        base = home.with_name("index.base.html")
        if not base.exists():
            base.write_text(home.read_text())
        page = base.read_text()
        if h % 2 == 0:
            page = page.replace("</head>", '<link rel="alternate" type="application/rss+xml" '
                                'href="/feed.xml"></head>', 1)
        extra = "".join(f'<a href="/p/{k}.v.html">variant {k}</a> '
                        for k in self.pages[h][:VARIANTS])
        extra += "".join(f'<a href="{n}">news</a> ' for n in reversed(self.news[h]))
        _write(home, page.replace("</body>", f"<p>{extra}</p></body>", 1))

    def _sitemap(self, h: int, now: float) -> None:
        origin = self.web.origin(h)
        rows = []
        for k in self.pages[h]:
            path = f"/p/{k}.html"
            mod = now if h % 3 == 1 else self.changed_at.get((h, path), 0.0)
            rows.append(f"<url><loc>{origin}{path}</loc><lastmod>{iso(mod)}</lastmod></url>")
        _write(self.web.host_dir(h) / "sitemap.xml", f"<urlset {NS}>{''.join(rows)}</urlset>")

    def _feed(self, h: int) -> None:
        origin = self.web.origin(h)
        items = "".join(f"<item><link>{origin}{n}</link></item>" for n in reversed(self.news[h]))
        _write(self.web.host_dir(h) / "feed.xml",
               f"<rss version='2.0'><channel><title>news</title>{items}</channel></rss>")

    # ------------------------------------------------------------------ changes
    def _edit(self, h: int, now: float) -> str:
        k = int(self.rng.choice(self.pages[h][VARIANTS:]))
        path = f"/p/{k}.html"
        f = self.web.host_dir(h) / "p" / f"{k}.html"
        self.edits += 1
        _write(f, f.read_text().replace("</body>", f"<p>edit {self.edits}: {self._text(30)}</p>"
                                        "</body>", 1))
        self.changed_at[(h, path)] = now
        return path

    def step(self, now: float) -> Change | None:
        """The next change of the turn, made at ``now``."""
        kind = (TRUTHFUL, NEITHER, FEED, LYING)[self.turn % 4]
        self.turn += 1
        if kind == LYING:
            for h in range(1, self.hosts, 3):
                self._sitemap(h, now)
            return None
        if kind == FEED:
            hosts = list(range(0, self.hosts, 2))
            h = hosts[(self.turn // 4) % len(hosts)]
            path = f"/news/{len(self.news[h])}.html"
            d = self.web.host_dir(h) / "news"
            d.mkdir(exist_ok=True)
            _write(d / path.rsplit("/", 1)[1],
                   f"<!DOCTYPE html><html><head><title>news</title></head><body><p>"
                   f"{self._text(200)}</p></body></html>")
            self.news[h].append(path)
            self._feed(h)
            self._home(h)
            return Change(FEED, h, path, now)
        # a page of a host in the role (feed hosts excluded from 'neither': no signal at all)
        hosts = [h for h in range(self.hosts) if self.role(h) == kind
                 and not (kind == NEITHER and h % 2 == 0)]
        if not hosts:
            return None
        h = hosts[(self.turn // 4) % len(hosts)]
        path = self._edit(h, now)
        if kind == TRUTHFUL:
            self._sitemap(h, now)
        return Change(kind, h, path, now)
