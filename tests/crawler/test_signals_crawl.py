"""``websift crawl --signals --continuous`` in a real process on a loopback site: a sitemap index
robots.txt names with a gzip child, and a feed whose new item is fetched right after the feed
read that first lists it."""

from __future__ import annotations

import gzip
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.testweb import Answer, TestWeb, html, words
from testkit.waiting import wait_for
from testkit.websift_process import REPO, last_crawl_summary, websift_command

pytestmark = pytest.mark.slow  # a continuous crawl in a child process

WAIT = 60.0
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


class Feed:
    def __init__(self) -> None:
        self.items = ["/news/1"]
        self.lock = threading.Lock()
        self.first_listed: dict[str, float] = {}  # item -> when a feed answer first held it


@pytest.fixture(scope="module")
def site() -> Iterator[tuple[TestWeb, Feed]]:
    import time

    web = TestWeb()
    feed = Feed()
    s = web.add_site("sig", "127.0.0.81", None)
    with web:
        s.robots = f"User-agent: *\nDisallow:\nSitemap: {s.origin}/maps/index.xml\n"
        head = '<link rel="alternate" type="application/rss+xml" href="/feed.xml">'
        s.page("/", html("home", "<p>home, no links</p>", head=head))
        s.page("/maps/index.xml", Answer(
            body=f"<sitemapindex {NS}><sitemap><loc>{s.url('/maps/a.xml.gz')}</loc></sitemap>"
                 f"</sitemapindex>".encode(), content_type="application/xml"))
        urls = "".join(f"<url><loc>{s.url(f'/doc/{i}')}</loc></url>" for i in range(5))
        s.page("/maps/a.xml.gz", Answer(body=gzip.compress(f"<urlset {NS}>{urls}</urlset>"
                                                           .encode()),
                                        content_type="application/gzip"))

        def feed_xml(path: str, headers: dict[str, str], n: int) -> Answer:
            with feed.lock:
                items = list(feed.items)
                for item in items:
                    feed.first_listed.setdefault(item, time.time())
            rows = "".join(f"<item><link>{s.url(i)}</link></item>" for i in reversed(items))
            return Answer(body=f"<rss version='2.0'><channel>{rows}</channel></rss>".encode(),
                          content_type="application/rss+xml")

        s.page("/feed.xml", feed_xml)
        s.prefix("/doc/", lambda p, h, n: Answer(body=html(p, f"<p>{words(len(p) * 7)}</p>")))
        s.prefix("/news/", lambda p, h, n: Answer(body=html(p, f"<p>{words(len(p) * 11)}</p>")))
        yield web, feed


def fetched(web: TestWeb, path: str) -> list[float]:
    return [e.start for e in web.entries() if e.path == path]


def test_a_continuous_crawl_reads_sitemaps_and_fetches_a_new_feed_item_promptly(
    site: tuple[TestWeb, Feed], tmp_path: Path
) -> None:
    web, feed = site
    s = web.sites["sig"]
    data = tmp_path / "data"
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    child = subprocess.Popen(
        websift_command("crawl", s.url("/"), "--data", str(data), "--allow-private",
                        "--delay", "0", "--continuous", "--signals", "--quiet",
                        "--feed-min-interval", "1", "--feed-max-interval", "2"),
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # the index robots.txt names, its gzip child, and every page it lists
        wait_for(lambda: all(fetched(web, f"/doc/{i}") for i in range(5)), "sitemap pages",
                 WAIT)
        wait_for(lambda: bool(fetched(web, "/news/1")), "the feed's first item", WAIT)
        assert fetched(web, "/maps/index.xml") and fetched(web, "/maps/a.xml.gz")
        with feed.lock:
            feed.items.append("/news/2")
        wait_for(lambda: bool(fetched(web, "/news/2")), "the feed's new item", WAIT)
        listed = feed.first_listed["/news/2"]
        # fetched right after the feed read that first listed it (the crawl has nothing else
        # to do, so this bounds the grant's effect with the politeness of one host: seconds)
        assert 0.0 <= fetched(web, "/news/2")[0] - listed < 5.0
        child.send_signal(signal.SIGTERM)
        _, err = child.communicate(timeout=WAIT)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=30)
    assert child.returncode == 0, err
    summary = last_crawl_summary(data)
    counts = summary["counts"]
    assert counts["sitemaps/read"] == 2 and counts["sitemaps/urls_new"] == 5
    assert counts["feeds/new_items"] == 2 and counts["feeds/read"] >= 2
    assert summary["live"]["signals"]["on"] is True


def test_signals_with_a_shared_frontier_are_refused_before_anything_is_made(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    run = subprocess.run(
        websift_command("crawl", "http://127.0.0.81/", "--data", str(data), "--allow-private",
                        "--frontier", "redis://127.0.0.1:1/0", "--signals"),
        cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=WAIT, check=False)
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "--signals needs the embedded frontier" in lines[0]
    assert not data.exists()
