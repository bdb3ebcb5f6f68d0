"""websift index + Searcher on small crawls built with the real store and WARC files."""

from __future__ import annotations

from pathlib import Path

import pytest

from testkit.corpus import build_data_dir
from websift.core.datadir import DataDir
from websift.indexer.build import build_index
from websift.indexer.merge_policy import MergePolicy
from websift.indexer.searcher import IndexQuery, Searcher, current_generation
from websift.indexer.settings import BM25FSettings
from websift.store.crawl_store import OUT_OF_SCOPE, CrawlStore

A = "http://a.example"
B = "http://b.example"


def page(title: str, body: str, links: str = "") -> str:
    return (f"<html><head><title>{title}</title></head><body><main><h1>{title}</h1>"
            f"<p>{body}</p>{links}</main></body></html>")


PAGES = {
    f"{A}/": page("Home", "welcome to the garden site",
                  f'<a href="{A}/roses">roses care</a> <a href="{A}/tulips">tulip bulbs</a> '
                  f'<a href="{A}/secret-plans">blueprint orchid greenhouse</a>'),
    f"{A}/roses": page("Roses", "prune roses in early spring; the rose garden loves sun",
                       f'<a href="{A}/">home</a> <a href="{A}/roses">roses</a>'),
    f"{A}/tulips": page("Tulips", "plant tulip bulbs in autumn before the frost",
                        f'<a href="{B}/seeds">seed catalogue</a>'),
    f"{B}/seeds": page("Seed catalogue", "seeds of roses and tulips for every garden"),
    f"{B}/frost": page("Frost", "early frost kills tender plants; cover the garden"),
}


def text_only(data: DataDir) -> Searcher:
    """A searcher without the fetched-page prior (BM25FSettings.fetched_prior): these tests
    check text and anchor scoring (tests/api/test_unfetched.py checks the prior)."""
    return Searcher.open(data, BM25FSettings(fetched_prior=0.0))


def urls(results: object) -> list[str]:
    return [h.url for h in results.hits]  # type: ignore[attr-defined]


@pytest.fixture()
def data(tmp_path: Path) -> DataDir:
    d = build_data_dir(tmp_path / "data", PAGES)
    build_index(d)
    return d


def test_words_rank_the_page_that_is_about_them(data: DataDir) -> None:
    s = text_only(data)
    assert urls(s.search(IndexQuery("roses")))[0] == f"{A}/roses"
    res = s.search(IndexQuery("tulip bulbs autumn"))
    assert res.hits[0].url == f"{A}/tulips"
    assert res.hits[0].text_score > 0 and res.hits[0].prior_score == 0.0
    assert "[" not in res.hits[0].snippet
    spans = res.hits[0].highlights
    assert spans and all(res.hits[0].snippet[a:b].lower().startswith(("tulip", "bulb", "autumn"))
                         for a, b in spans)


def test_anchor_text_makes_a_never_fetched_page_findable(data: DataDir) -> None:
    s = text_only(data)
    res = s.search(IndexQuery("blueprint orchid", explain=True))
    # The target ranks first; the home page matches too, by the link's words in its own text.
    assert urls(res) == [f"{A}/secret-plans", f"{A}/"]
    # With the fetched-page prior (the default), the fetched home page, whose text says the
    # same words, ranks above the page known only from its link.
    assert urls(Searcher.open(data).search(IndexQuery("blueprint orchid"))) == [
        f"{A}/", f"{A}/secret-plans"]
    assert res.hits[0].title == "blueprint orchid greenhouse"  # best anchor as title
    assert res.hits[0].explain is not None and res.hits[1].explain is not None
    assert res.hits[0].explain["terms"]["orchid"]["tf"] == {"anchor": 1}
    assert "anchor" not in res.hits[1].explain["terms"]["orchid"]["tf"]
    # A self-link gives no anchor text: "roses" anchors on /roses itself do not count.
    ex = s.search(IndexQuery("roses", explain=True)).hits
    roses = next(h for h in ex if h.url == f"{A}/roses")
    assert roses.explain is not None
    assert roses.explain["terms"]["rose"]["tf"].get("anchor") == 1  # only from the home page


def test_phrase_exclusion_site_and_or(data: DataDir) -> None:
    s = text_only(data)
    assert urls(s.search(IndexQuery('"early spring"'))) == [f"{A}/roses"]
    assert f"{B}/frost" in urls(s.search(IndexQuery("early frost")))
    assert f"{B}/frost" not in urls(s.search(IndexQuery('"early spring"')))
    assert f"{A}/roses" not in urls(s.search(IndexQuery("garden -prune")))
    assert set(urls(s.search(IndexQuery("garden site:b.example")))) == {f"{B}/seeds", f"{B}/frost"}
    assert set(urls(s.search(IndexQuery("site:b.example")))) == {f"{B}/seeds", f"{B}/frost"}
    assert all(u.startswith(A) for u in urls(s.search(IndexQuery("garden -site:b.example"))))
    assert set(urls(s.search(IndexQuery("autumn OR sun")))) == {f"{A}/tulips", f"{A}/roses"}
    assert s.search(IndexQuery("garden", site="a.example")).total == len(
        [u for u in urls(s.search(IndexQuery("garden", k=50))) if u.startswith(A)])


def test_prior_is_added_to_the_text_score_of_the_best_matches(data: DataDir) -> None:
    s = text_only(data)
    plain = s.search(IndexQuery("garden", k=10))
    last = plain.hits[-1]
    boosted = s.search(IndexQuery("garden", k=10, prior=lambda ids: (ids == last.doc_id) * 100.0))
    assert boosted.hits[0].doc_id == last.doc_id
    assert boosted.hits[0].score == pytest.approx(last.text_score + 100.0)
    page2 = s.search(IndexQuery("garden", k=2, offset=2))
    assert urls(page2) == urls(plain)[2:4]


def test_an_update_masks_the_old_version_and_changes_anchors(data: DataDir) -> None:
    gen1 = current_generation(data)
    build_data_dir(data.root, {
        f"{A}/roses": page("Roses", "roses need mulch in summer"),
        f"{A}/": page("Home", "welcome", f'<a href="{A}/secret-plans">moonflower trellis</a>'),
    })
    report = build_index(data)
    assert report.mode == "incremental" and report.segments == 2
    assert current_generation(data) == (gen1 or 0) + 1
    s = text_only(data)
    assert s.doc_count() == text_only(data).doc_count()
    assert f"{A}/roses" not in urls(s.search(IndexQuery("prune spring")))
    assert urls(s.search(IndexQuery("mulch"))) == [f"{A}/roses"]
    # The home page's links changed: old anchors are gone from the targets, new ones count.
    assert urls(s.search(IndexQuery("moonflower")))[0] == f"{A}/secret-plans"
    assert urls(s.search(IndexQuery("blueprint orchid"))) == []
    assert urls(s.search(IndexQuery("bulbs"))) == [f"{A}/tulips"]  # its body still says bulbs
    # The tulips page lost its only anchor ("tulip bulbs" from home) but stays as a page.
    tulips = s.search(IndexQuery("tulips", explain=True)).hits[0]
    assert tulips.url == f"{A}/tulips" and "anchor" not in tulips.explain["terms"]["tulip"]["tf"]
    # Nothing new: nothing to do.
    assert build_index(data).mode == "unchanged"


def test_left_out_pages_and_merge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pages = {
        f"{A}/ok": page("Fine", "kumquat"),
        f"{A}/noindex": page("Hidden", "kumquat noindex"),
        f"{A}/dup": page("Fine", "kumquat dup"),
        f"{A}/file.pdf": b"%PDF-1.4 kumquat",
        f"{A}/links": page("Links", "x", f'<a href="{A}/file.pdf">kumquat manual</a>'
                        f'<a href="{B}/away">elsewhere kumquat</a>'),
    }
    d = build_data_dir(tmp_path / "d", pages, noindex=[f"{A}/noindex"],
                       duplicates={f"{A}/dup": f"{A}/ok"},
                       content_types={f"{A}/file.pdf": "application/pdf"},
                       status={f"{B}/away": OUT_OF_SCOPE})
    report = build_index(d)
    assert report.skipped["noindex"] == 1 and report.skipped["duplicate"] == 1
    found = set(urls(Searcher.open(d).search(IndexQuery("kumquat", k=20))))
    # The PDF and the out-of-scope page are known by their anchors only (/links holds the
    # anchors' words in its own text).
    assert found == {f"{A}/ok", f"{A}/file.pdf", f"{B}/away", f"{A}/links"}
    # Three small segments of one level merge into one.
    policy = MergePolicy(merge_factor=3)
    modes = []
    for i in range(2):
        build_data_dir(d.root, {f"{A}/ok": page("Fine", f"kumquat version{i}")})
        modes.append((build_index(d, policy=policy).mode, Searcher.open(d).segment_count()))
    assert modes == [("incremental", 2), ("merge", 1)]
    s = Searcher.open(d)
    assert urls(s.search(IndexQuery("version1"))) == [f"{A}/ok"]
    assert urls(s.search(IndexQuery("version0"))) == []
    assert set(urls(s.search(IndexQuery("kumquat", k=20)))) == found
    assert sorted(p.name for p in d.index_dir.iterdir() if p.is_dir()) == [
        s.manifest.segments[0].name]


def test_anchors_of_links_to_a_redirect_count_for_its_target(tmp_path: Path) -> None:
    pages = {f"{A}/new": page("New", "plain words"),
             f"{A}/links": page("Links", "x", f'<a href="{A}/old">legacy loquat</a>')}
    d = build_data_dir(tmp_path / "d", pages, redirects={f"{A}/old": f"{A}/new"})
    build_index(d)
    hits = Searcher.open(d).search(IndexQuery("loquat", explain=True)).hits
    assert hits[0].url == f"{A}/new"
    assert hits[0].explain is not None and hits[0].explain["terms"]["loquat"]["tf"] == {
        "anchor": 1}
    assert f"{A}/old" not in urls(Searcher.open(d).search(IndexQuery("loquat")))
    # The link changes: the next incremental run re-indexes the target through the redirect.
    build_data_dir(d.root, {f"{A}/links": page("Links", "x", f'<a href="{A}/old">medlar</a>')})
    build_index(d)
    s = Searcher.open(d)
    assert urls(s.search(IndexQuery("medlar")))[0] == f"{A}/new"
    assert f"{A}/new" not in urls(s.search(IndexQuery("loquat")))


def test_a_corrupt_warc_record_is_counted_and_skipped(tmp_path: Path) -> None:
    d = build_data_dir(tmp_path / "d", {f"{A}/x": page("X", "quince"),
                                         f"{A}/y": page("Y", "quince too")})
    with CrawlStore.open(d.store_path) as store:
        p = store.page_by_url(f"{A}/x")
        assert p is not None and p.warc_file is not None
    warc = d.warc_dir / p.warc_file
    raw = bytearray(warc.read_bytes())
    raw[int(p.warc_offset or 0) + 40] ^= 0xFF
    warc.write_bytes(bytes(raw))
    report = build_index(d)
    assert report.skipped["warc_error"] == 1
    assert urls(Searcher.open(d).search(IndexQuery("quince"))) == [f"{A}/y"]
