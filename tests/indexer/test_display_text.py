"""Snippets show a page's text as a reader sees it: code keeps its spacing
(``asyncio.gather(``, not ``asyncio . gather (``) and layout marks (Sphinx's ``¶`` headerlink,
a ``#`` permalink) are left out, while the indexed body is what it was.  Real crawl store,
WARC files, indexer and searcher (testkit/corpus.py)."""

from __future__ import annotations

from pathlib import Path

from testkit.corpus import build_data_dir, indexed_copy
from websift.indexer.parse import parse_html
from websift.indexer.searcher import IndexQuery

A = "http://manual.test/"
NAV = (f'<div class="related"><p>Next: <a href="{A}b.html">B</a>, Up: '
       f'<a href="{A}index.html">Home</a></p></div>')


def _sphinx(title: str, body: str) -> str:
    return (f"<html><head><title>{title}</title></head><body>{NAV}<div role='main'>"
            f'<h1>{title}<a class="headerlink" href="#top" title="Permalink">¶</a></h1>'
            f"{body}</div></body></html>")


TASKS = _sphinx("Coroutines and Tasks", (
    '<section id="gathering"><h2>Running Tasks Concurrently<a class="headerlink" '
    'href="#gathering">¶</a></h2><dl><dt id="asyncio.gather"><em>awaitable</em> '
    '<code class="descclassname">asyncio.</code><code class="descname">gather</code>'
    '(<em>*aws</em>, <em>return_exceptions=False</em>)<a class="headerlink" '
    'href="#asyncio.gather">¶</a></dt><dd><p>Run <a href="#aw">awaitable objects</a> in the '
    "<em>aws</em> sequence <em>concurrently</em>.</p><p>Call <code>asyncio</code>."
    "<code>gather</code>(<code>a</code>, <code>b</code>) to wait for both.<br>Then "
    'read their results.</p></dd></dl><h3>Notes<a href="#notes">#</a></h3><p>Gathered '
    "results keep their order.</p></section>"))


def test_the_stored_text_reads_as_shown_and_the_body_is_unchanged() -> None:
    page = parse_html(TASKS.encode(), A + "tasks.html", structure=True)
    assert "¶" not in page.text and " # " not in page.text
    assert "asyncio.gather(*aws, return_exceptions=False)" in page.text
    assert "Call asyncio.gather(a, b) to wait for both. Then read" in page.text
    assert "in the aws sequence concurrently." in page.text
    # The indexed body keeps a space between text nodes (its tokens are those of before).
    assert "asyncio . gather ( a , b )" in page.body
    assert "¶" in page.body


def test_snippets_keep_code_spacing_and_lose_permalink_marks(tmp_path: Path) -> None:
    pages = {A + "tasks.html": TASKS}
    for i, word in enumerate(["plotting", "printing", "exporting", "importing"]):
        pages[f"{A}p{i}.html"] = _sphinx(f"{word.capitalize()} guide",
                                         f"<p>The {word} chapter.</p>")
    build_data_dir(tmp_path / "site", pages)
    s = indexed_copy(tmp_path / "site", tmp_path / "d")
    hit = s.search(IndexQuery("gather")).hits[0]
    assert hit.url == A + "tasks.html"
    assert "asyncio.gather(" in hit.snippet
    assert "asyncio . gather" not in hit.snippet
    assert "¶" not in hit.snippet
    # The navigation block is template (on every page): out of the snippet as before.
    assert "Next:" not in hit.snippet
    shown = [hit.snippet[a:b].lower() for a, b in hit.highlights]
    assert "gather" in shown
    notes = s.search(IndexQuery("gathered results order")).hits[0]
    assert "Notes Gathered results" in notes.snippet  # the "#" permalink is left out
