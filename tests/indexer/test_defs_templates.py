"""Definitions as evidence and boilerplate by template (issue 12, items 1 and 3).

A small two-host site: host A repeats a navigation header ("Next: <title>, Up: Home"), a menu
and a footer on every page and has a long page of definitions; host B has the footer on one
page only.  Real crawl store, WARC files, indexer and searcher (testkit/corpus.py).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from testkit.corpus import build_data_dir, indexed_copy
from websift.core import checked
from websift.core.datadir import DataDir
from websift.core.errors import CheckedFileCorrupt
from websift.indexer.build import build_index
from websift.indexer.parse import parse_html
from websift.indexer.searcher import IndexQuery, Searcher
from websift.indexer.settings import TEMPLATES_VERSION, IndexSettings
from websift.indexer.templates import (
    FORMAT,
    TEMPLATES_FILE,
    HostSampler,
    HostTemplate,
    Templates,
    host_template,
    read_templates,
    write_templates,
)

A = "http://docs.test/"
B = "http://other.test/"
FOOTER = "<p>Copyright zebraquux Foundation, all rights reserved.</p>"
TOPICS = ["installing", "configuring", "plotting", "printing", "exporting", "importing",
          "debugging", "profiling", "testing"]
TERMS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
         "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
         "sierra", "tango", "uniform", "victor", "whiskey", "xray", "yankee"]


def _page(title: str, content: str, next_url: str, next_title: str) -> str:
    return (f"<html><head><title>{title}</title></head><body>"
            f'<div class="header"><p>Next: <a href="{next_url}">{next_title}</a>, '
            f'Up: <a href="{A}index.html">Home</a></p></div>'
            f"<h1>{title}</h1>{content}{FOOTER}</body></html>")


def _site() -> dict[str, str]:
    pages: dict[str, str] = {}
    names = [f"{t}.html" for t in TOPICS] + ["props.html"]
    titles = [f"{t.capitalize()} guide" for t in TOPICS] + ["Text properties"]
    for i, t in enumerate(TOPICS):
        nxt = (i + 1) % len(names)
        content = (f"<p>This chapter explains {t} in detail. To make labels readable set the "
                   f"fontsize before {t}. The {t} step takes a while.</p>")
        pages[A + names[i]] = _page(titles[i], content, A + names[nxt], titles[nxt])
    defs = "".join(f'<dt id="prop-{w}">{w}</dt><dd>The {w} property of a text object: '
                   f"{' '.join(TERMS)} values.</dd>" for w in TERMS[:12])
    defs += ('<dt id="prop-fontsize">fontsize</dt><dd>The size of the characters, in points.'
             "</dd>")
    defs += "".join(f'<dt id="prop-{w}">{w}</dt><dd>The {w} property of a text object: '
                    f"{' '.join(TERMS)} values.</dd>" for w in TERMS[12:])
    pages[A + "props.html"] = _page("Text properties", f"<p>Properties of text.</p><dl>{defs}</dl>",
                                    A + names[0], titles[0])
    pages[A + "index.html"] = ("<html><head><title>The manual</title></head><body><h1>The manual"
                               "</h1><p>Start here.</p></body></html>")
    for i in range(6):
        footer = FOOTER if i == 0 else "<p>Made by hand.</p>"
        pages[f"{B}b{i}.html"] = (f"<html><head><title>Other {i}</title></head><body>"
                                  f"<p>Another site, page {i}, about gardening.</p>{footer}"
                                  "</body></html>")
    return pages


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_data_dir(tmp_path_factory.mktemp("defs") / "data", _site()).root


def _indexed(site: Path, dest: Path, **changes: Any) -> Searcher:
    """A copy of the site's crawl indexed with IndexSettings ``changes``."""
    return indexed_copy(site, dest, IndexSettings(**changes))


def test_defining_page_ranks_first_and_the_hit_links_to_its_dt(
        site: Path, tmp_path: Path) -> None:
    s = _indexed(site, tmp_path / "d")
    res = s.search(IndexQuery("fontsize"))
    assert res.hits[0].url == A + "props.html"
    assert res.hits[0].fragment == "prop-fontsize"
    # Pages that only mention the word have no fragment to link to.
    assert all(h.fragment is None for h in res.hits[1:])
    # Without the defs field the long page loses to the short ones that mention the word.
    off = replace(s.settings, weights={**s.settings.weights, "defs": 0.0})
    plain = Searcher(s.manifest, s.segments, off).search(IndexQuery("fontsize"))
    assert plain.hits[0].url != A + "props.html"


def test_template_blocks_are_not_content_nor_snippet(
        site: Path, tmp_path: Path) -> None:
    s = _indexed(site, tmp_path / "d")
    # The footer word is template on host A (every page) but not on host B (one page of six).
    assert [h.url for h in s.search(IndexQuery("zebraquux")).hits] == [B + "b0.html"]
    for h in s.search(IndexQuery("fontsize")).hits:
        assert "Next:" not in h.snippet and "zebraquux" not in h.snippet
    # "Printing guide" is in the navigation header of the plotting page only: it does not match.
    urls = [h.url for h in s.search(IndexQuery("printing")).hits]
    assert A + "plotting.html" not in urls
    assert urls[0] == A + "printing.html"
    stored = read_templates(DataDir.open(tmp_path / "d").index_dir)
    assert stored is not None
    footer = parse_html(f"<html><body>{FOOTER}</body></html>".encode(), A, structure=True).blocks[0].key
    assert footer in stored.hosts["docs.test"].keys
    assert footer not in stored.hosts["other.test"].keys  # "Made by hand." is, on 5 of 6


def test_without_templates_the_navigation_counts(
        site: Path, tmp_path: Path) -> None:
    s = _indexed(site, tmp_path / "d", templates=False)
    assert len(s.search(IndexQuery("zebraquux")).hits) > 1
    assert A + "plotting.html" in [h.url for h in s.search(IndexQuery("printing")).hits]


def test_anchor_boilerplate_is_not_anchor_text(
        site: Path, tmp_path: Path) -> None:
    # "Home" links to index.html from every page of host A: navigation, not a description.
    s = _indexed(site, tmp_path / "d")
    assert A + "index.html" not in [h.url for h in s.search(IndexQuery("home")).hits]
    kept = _indexed(site, tmp_path / "k", anchor_templates=False)
    assert kept.search(IndexQuery("home")).hits[0].url == A + "index.html"


def test_template_file_round_trip_and_corruption(tmp_path: Path) -> None:
    t = Templates({"a.test": HostTemplate(64, frozenset({1, 2**64 - 1})),
                   "b.test": HostTemplate(3, frozenset())}, share=0.25)
    write_templates(tmp_path, t)
    assert read_templates(tmp_path) == t
    assert read_templates(tmp_path / "nothing-here") is None
    path = tmp_path / TEMPLATES_FILE
    raw = path.read_bytes()
    path.write_bytes(raw.replace(b"a.test", b"c.test"))
    with pytest.raises(CheckedFileCorrupt):
        read_templates(tmp_path)
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(CheckedFileCorrupt):
        read_templates(tmp_path)
    # An older version's keys are another scheme's (whole navigation blocks): measured again.
    old = checked.Format(FORMAT.name, TEMPLATES_VERSION - 1, FORMAT.what)
    checked.write_json(path, old, {"share": 0.2, "hosts": {"a.test": {"sampled": 9,
                                                                      "keys": ["01"]}}})
    assert read_templates(tmp_path) is None


def test_a_corrupt_template_file_is_measured_again(
        site: Path, tmp_path: Path) -> None:
    s = _indexed(site, tmp_path / "d")
    data = DataDir.open(tmp_path / "d")
    (data.index_dir / TEMPLATES_FILE).write_text("{not json")
    build_data_dir(tmp_path / "d", {A + "printing.html": _site()[A + "printing.html"]})
    said: list[str] = []
    build_index(data, procs=1, progress=said.append)
    assert any("templates unusable" in m for m in said)
    assert read_templates(data.index_dir) is not None
    s = Searcher.open(data)
    assert [h.url for h in s.search(IndexQuery("zebraquux")).hits] == [B + "b0.html"]


def test_host_template_needs_enough_pages_and_a_share() -> None:
    pages = [{1, 2, 10 + i} for i in range(10)]
    assert host_template(pages, share=0.5, min_pages=5).keys == {1, 2}
    assert host_template(pages[:4], share=0.5, min_pages=5).keys == frozenset()
    half = [{1} if i % 3 == 0 else {2} for i in range(9)]  # 1 on 3 of 9, 2 on 6 of 9
    assert host_template(half, share=0.5, min_pages=5).keys == {2}


def test_host_sampler_keeps_a_bounded_stable_sample() -> None:
    one: HostSampler[int] = HostSampler(size=5)
    two: HostSampler[int] = HostSampler(size=5)
    for i in range(100):
        one.offer("h", i, i, f"http://h/{i}")
    for i in reversed(range(100)):
        two.offer("h", i, i, f"http://h/{i}")
    assert one.samples() == two.samples()
    assert len(one.samples()["h"]) == 5
    # another store numbering the same URLs its own way samples the same pages
    other: HostSampler[int] = HostSampler(size=5)
    for i in range(100):
        other.offer("h", 1000 - i, i, f"http://h/{i}")
    assert sorted(other.samples()["h"]) == sorted(one.samples()["h"])


def test_texinfo_definition_anchor_at_the_end_of_the_previous_dd() -> None:
    html = (b'<html><body><dl><dd><span id="index-a-alim"></span></dd>'
            b"<dt><code>alim</code>: def. [0 1]</dt><dd><p>Transparency.</p>"
            b'<span id="index-a-xlim"></span></dd><dt><code>xlim</code></dt><dd>Limits.</dd>'
            b"</dl></body></html>")
    frags = parse_html(html, "http://t/p.html", structure=True).fragments
    # The key: the id's words the term lacks ("a", the object), then the term.
    assert [(f.id, f.key.split()[:2]) for f in frags[:2]] == [("index-a-alim", ["alim", ":"]),
                                                              ("index-a-xlim", ["a", "xlim"])]


def test_navigation_block_has_one_template_key_across_pages() -> None:
    def keys(nxt: str) -> int:
        html = (f'<html><body><p>Next: <a href="x">{nxt}</a>, Up: <a href="/">Top</a></p>'
                "<p>Body.</p></body></html>").encode()
        return parse_html(html, "http://t/p.html", structure=True).blocks[0].key

    assert keys("Plotting") == keys("Printing")


def test_a_segment_written_before_the_defs_field_reads_zero_defs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A version-2 segment (five fields, no "fields" in meta.json) opens; its postings and
    positions come back under today's FIELDS with zero tf in defs, and a merge keeps them."""
    from websift.core import checked
    from websift.indexer import segment, segment_format, segment_writer
    from websift.indexer.merge import merge_segments
    from websift.indexer.settings import FIELDS, LEGACY_FIELDS

    docs = [("apple pie", "", "apple and pear", "", ["fruit apple"]),
            ("pear", "", "pear only", "", [])]
    monkeypatch.setattr(segment_writer, "N_FIELDS", len(LEGACY_FIELDS))
    monkeypatch.setattr(segment_writer, "FIELDS", LEGACY_FIELDS)
    w = segment_writer.SegmentWriter(tmp_path / "old", 1 << 20)
    for i, (title, head, body, url, anchors) in enumerate(docs):
        w.add_document(i + 1, host="t", url=f"http://t/{i}", title=title, text=body,
                       fields=[title, head, body, url, anchors])
    meta = w.finish()
    monkeypatch.undo()
    del meta["fields"]
    checked.write_json(tmp_path / "old" / "meta.json",
                       checked.Format(segment_format.SEGMENT_FORMAT, 2, "segment meta.json"), meta)
    old = segment.SegmentReader(tmp_path / "old")
    _, tfs = old.postings(old.term_row("appl"))
    assert tfs.shape == (1, len(FIELDS))
    assert dict(zip(FIELDS, tfs[0].tolist(), strict=True)) == {
        "title": 1, "headings": 0, "body": 1, "url": 0, "anchor": 1, "defs": 0}
    assert len(old.positions(old.term_row("appl"), tfs)) == 3
    assert old.field_lens.shape == (2, len(FIELDS)) and not old.field_lens[:, -1].any()
    merge_segments([old], [np.ones(2, dtype=bool)], tmp_path / "merged", 1 << 20)
    new = segment.SegmentReader(tmp_path / "merged")
    assert new.postings(new.term_row("appl"))[1].tolist() == tfs.tolist()


def test_a_table_of_contents_link_is_not_a_definition() -> None:
    html = (b'<html><body><ul><li><a id="toc-x" href="x.html">Defining x</a></li>'
            b'<li id="toc-y"><a href="y.html">Defining y</a></li></ul>'
            b'<p id="here">A paragraph <a href="z.html">with a link</a>.</p></body></html>')
    assert [f.id for f in parse_html(html, "http://t/index.html", structure=True).fragments] == ["here"]
