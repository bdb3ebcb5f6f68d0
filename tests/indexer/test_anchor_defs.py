"""Empty named anchors as defining places (issue 12, item 1): a back-of-book index's anchor
(Texinfo ``<span id="index-walrus-operator"></span>``) makes its long page the answer and the
hit's ``#id``.  Real crawl store, WARC files, indexer and searcher (testkit/corpus.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from testkit.corpus import build_data_dir, indexed_copy
from websift.indexer.searcher import IndexQuery, Searcher
from websift.indexer.settings import IndexSettings

A = "http://manual.test/"
FILLER = ["matrix", "vector", "loop", "plot", "string", "cell", "struct", "file", "error",
          "package", "function", "script", "global", "persistent", "range", "index"]


def _site() -> dict[str, str]:
    long_text = "".join(f"<p>The {w} chapter says a lot about {w} values and {w} syntax, "
                        f"as {w} programs use {w} often.</p>" for w in FILLER)
    ops = ('<html><head><title>Assignment Ops</title></head><body>'
           '<span id="Assignment-Ops"></span><h2>Assignment Expressions</h2>'
           f'{long_text}<span id="index-walrus-operator"></span>'
           '<span id="index-operators_002c-walrus"></span>'
           '<p>Assigns inside an expression and yields the value.</p>'
           f'{long_text}</body></html>')
    pages = {A + "ops.html": ops}
    for i, w in enumerate(FILLER[:4]):
        pages[f"{A}p{i}.html"] = (f"<html><head><title>{w.capitalize()} notes</title></head>"
                                  f"<body><p>Short notes on {w}; a walrus is no operator here, "
                                  f"and {w} is.</p></body></html>")
    return pages


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_data_dir(tmp_path_factory.mktemp("anchors") / "data", _site()).root


def _searcher(site: Path, dest: Path, **changes: Any) -> Searcher:
    """A copy of the site's crawl indexed with IndexSettings ``changes``."""
    return indexed_copy(site, dest, IndexSettings(**changes))


def test_the_anchored_page_wins_and_the_hit_links_to_the_anchor(
        site: Path, tmp_path: Path) -> None:
    s = _searcher(site, tmp_path / "on")
    res = s.search(IndexQuery("walrus operator"))
    assert (res.hits[0].url, res.hits[0].fragment) == (A + "ops.html", "index-walrus-operator")
    # Only the page whose anchor's id holds the word links to an anchor.
    assert all(h.fragment is None for h in res.hits[1:])
    res = s.search(IndexQuery("assignment expressions"))
    assert (res.hits[0].url, res.hits[0].fragment) == (A + "ops.html", "Assignment-Ops")

def test_without_anchor_fragments_the_long_page_loses(
        site: Path, tmp_path: Path) -> None:
    res = _searcher(site, tmp_path / "off",
                    anchor_defs=False).search(IndexQuery("walrus operator"))
    assert res.hits[0].url != A + "ops.html"
    assert all(h.fragment is None or not h.fragment.startswith("index-") for h in res.hits)
