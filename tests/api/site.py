"""A small crawl for the API tests: two topics of linked pages, and pages that test the edges.

Built with the indexer's ``build_data_dir`` (the real crawl store and WARC files, no crawl), then
indexed and ranked with the real ``build_index`` and ``run_rank``.  Nothing is served: the URLs
only name the pages.
"""

from __future__ import annotations

from pathlib import Path

from testkit.corpus import build_data_dir
from websift.core.datadir import DataDir
from websift.indexer.build import build_index
from websift.ranking.rank_job import run_rank
from websift.store.crawl_store import CrawlStore

BASE = "http://127.0.0.1:8941"
GARDEN = [f"{BASE}/garden/{i}.html" for i in range(12)]
CODE = [f"{BASE}/code/{i}.html" for i in range(12)]
XSS = f"{BASE}/xss.html"
DUP = f"{BASE}/dup.html"
NOINDEX = f"{BASE}/quiet.html"
DISALLOWED = f"{BASE}/private/secret.html"
HOME = f"{BASE}/index.html"
ROBOTS = b"User-agent: *\nDisallow: /private/\n"
XSS_TITLE = '<script>window.__xss=1</script> "><img src=x onerror="window.__xss=2">'
XSS_ANCHOR = '<script>window.__xss=3</script> "quoted\' anchor'

_GARDEN_WORDS = ["roses", "tulips", "compost", "soil", "pruning", "seeds"]
_CODE_WORDS = ["functions", "classes", "modules", "generators", "decorators", "iterators"]


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace(
        '"', "&quot;")


def _page(title: str, body: str, links: list[tuple[str, str]] = ()) -> str:  # type: ignore[assignment]
    anchors = " ".join(f'<a href="{u}">{_esc(a)}</a>' for u, a in links)
    return (f"<html><head><title>{_esc(title)}</title></head><body><main><h1>{_esc(title)}</h1>"
            f"<p>{_esc(body)}</p><p>{anchors}</p></main></body></html>")


def pages(version: int = 1) -> dict[str, str]:
    """URL -> HTML. ``version`` 2 adds the word 'zebra' to the garden pages (for reload tests)."""
    out: dict[str, str] = {}
    extra = " A zebra visits the garden." if version >= 2 else ""
    for i, url in enumerate(GARDEN):
        word = _GARDEN_WORDS[i % len(_GARDEN_WORDS)]
        links = [(GARDEN[0], "rose garden guide"), (GARDEN[(i + 1) % len(GARDEN)], "next note")]
        out[url] = _page(f"Garden note {i}: {word}",
                         f"This note on gardening is about {word} and plants in the garden. "
                         f"Every garden note mentions {word} twice: {word}.{extra}", links)
    for i, url in enumerate(CODE):
        word = _CODE_WORDS[i % len(_CODE_WORDS)]
        links = [(CODE[0], "python tutorial"), (CODE[(i + 1) % len(CODE)], "next note")]
        out[url] = _page(f"Code note {i}: {word}",
                         f"This note on Python programming covers {word}. Python {word} "
                         f"make programs shorter.", links)
    xss_body = _esc('A note about <script>window.__xss=4</script> and "quotes" & amps')
    out[XSS] = (f"<html><head><title>{_esc(XSS_TITLE)}</title></head><body><p>{xss_body}"
                "</p></body></html>")
    out[HOME] = _page("Home of the notes", "Start here: garden and code notes.",
                      [(GARDEN[0], "garden notes"), (CODE[0], "code notes"), (XSS, XSS_ANCHOR),
                       (NOINDEX, "quiet page"), (DUP, "copy"), (DISALLOWED, "secret")])
    out[DUP] = out[GARDEN[1]]
    out[NOINDEX] = _page("Quiet note", "A note that asks not to be indexed.")
    return out


def make_data_dir(path: Path, version: int = 1) -> DataDir:
    """Store, index and rank the site in ``path``; the host's robots.txt is recorded too."""
    data = build_data_dir(path, pages(version), noindex=[NOINDEX], duplicates={DUP: GARDEN[1]},
                          status={DISALLOWED: "disallowed"})
    with CrawlStore.open(data.store_path) as store, store.transaction():
        host = store.host(BASE)
        assert host is not None
        host.robots_status, host.robots_body, host.robots_fetched = 200, ROBOTS, 1.0
        store.save_host(host)
    build_index(data)
    run_rank(data)
    return data
