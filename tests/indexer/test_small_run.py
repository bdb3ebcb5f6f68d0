"""A small site's fixed costs: the template samples parsed once, py3langid's model read from a
decompressed copy.  Neither may change the index: real crawl store, WARC files and indexer
(testkit/corpus.py), segment files compared byte for byte."""

from __future__ import annotations

import shutil
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

from testkit.corpus import build_data_dir, indexed_copy
from websift.core.datadir import DataDir
from websift.indexer import build, docbatch, langid_model
from websift.indexer.parse import parse_html
from websift.indexer.settings import (
    DEFAULT_INDEX_SETTINGS,
    FOLLOW_RECENT_CHARS,
    TEMPLATE_SAMPLE_PAGES,
)
from websift.indexer.workers import AnalyserPool
from websift.store.schema import Page
from websift.store.views import StoreReader

A = "http://docs.test/"
TOPICS = ["installing", "configuring", "plotting", "printing", "exporting", "importing",
          "debugging", "profiling", "testing", "packaging", "serving", "indexing"]


def _site() -> dict[str, str]:
    pages: dict[str, str] = {}
    for i, t in enumerate(TOPICS):
        nxt = TOPICS[(i + 1) % len(TOPICS)]
        defs = "".join(f'<dt id="{t}-{w}">{w}</dt><dd>The {w} option of {t}.</dd>'
                       for w in ("alpha", "bravo", "charlie"))
        pages[f"{A}{t}.html"] = (
            f"<html lang=en><head><title>{t.capitalize()} guide</title></head><body>"
            f'<div class="nav"><p>Next: <a href="{A}{nxt}.html">{nxt}</a>, '
            f'Up: <a href="{A}index.html">Home</a></p></div>'
            f"<h1 id={t}>{t.capitalize()}</h1><p>This chapter explains {t} in detail; the "
            f"{t} step takes a while.</p><dl>{defs}</dl>"
            "<p>Copyright zebraquux Foundation.</p></body></html>")
    return pages


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_data_dir(tmp_path_factory.mktemp("small") / "data", _site()).root


def _segment_files(site: Path, dest: Path) -> dict[str, bytes]:
    indexed_copy(site, dest)
    (seg,) = [p for p in (dest / "index").iterdir() if p.name.startswith("seg-")]
    return {p.name: p.read_bytes() for p in sorted(seg.iterdir())}


def test_sampled_pages_are_parsed_once_and_the_index_is_the_same(
        site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(TOPICS) <= TEMPLATE_SAMPLE_PAGES  # every page is a template sample
    _parsed_once_and_the_same(_segment_files, site, tmp_path, monkeypatch)


def _parsed_once_and_the_same(index: Callable[[Path, Path], dict[str, bytes]], site: Path,
                              tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``index`` of ``site`` parses no page in its page loop (the template samples' parses
    serve it), each page once without kept parses, and both write the same segment files."""
    parses = [0]
    parse = docbatch.parse_html

    def counted(*args: object, **kwargs: object) -> object:
        parses[0] += 1
        return parse(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(docbatch, "parse_html", counted)
    reused = index(site, tmp_path / "reused")
    assert parses[0] == 0  # the page loop parsed none: the samples' parses served
    monkeypatch.setattr(build, "SAMPLE_REUSE_CHARS", 0)
    again = index(site, tmp_path / "again")
    assert parses[0] == len(TOPICS)
    assert reused.keys() == again.keys()
    assert [n for n in reused if reused[n] != again[n]] == []


def test_langid_model_copy_identifies_as_the_shipped_model(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    monkeypatch.setenv("WEBSIFT_CACHE_DIR", str(tmp_path / "cache"))
    texts = ["The quick brown fox jumps over the lazy dog near the river bank",
             "Der schnelle braune Fuchs springt über den faulen Hund am Fluss",
             "Le renard brun rapide saute par-dessus le chien paresseux"]
    shipped = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    first = langid_model.load_identifier()  # writes the copy
    (copy,) = (tmp_path / "cache").iterdir()
    assert copy.name.startswith("langid-") and copy.suffix == ".npz"
    assert not list((tmp_path / "cache").glob("*.tmp"))
    from_copy = langid_model.load_identifier()
    for text in texts:
        assert first.classify(text) == from_copy.classify(text) == shipped.classify(text)
    # A damaged copy is said, the shipped model serves, and the copy goes (written anew next).
    copy.write_bytes(copy.read_bytes()[: 1 << 20])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fallback = langid_model.load_identifier()
    assert any("unusable" in str(w.message) for w in caught)
    assert fallback.classify(texts[1]) == shipped.classify(texts[1])
    assert not copy.exists()


def _follower_cut(site: Path, dest: Path) -> dict[str, bytes]:
    """``index --follow``'s first cut of a copy of ``site``: a running pool that analyses in
    this process (``--procs 1``), rebound to the cut."""
    shutil.copytree(site, dest, ignore=shutil.ignore_patterns("index", "*.lock"))
    data = DataDir.open(dest)
    store = StoreReader.open(data.store_path)
    try:
        with AnalyserPool(data.warc_dir, 1, {}, DEFAULT_INDEX_SETTINGS,
                          recent_chars=FOLLOW_RECENT_CHARS) as pool:
            assert pool.in_process
            report = build.run_once(data, store, None, ram_mb=64, started=time.monotonic(),
                                    say=lambda _m: None, counted=False, procs=1, pool=pool,
                                    merge=False)
    finally:
        store.close()
    assert report.documents == len(TOPICS)
    (seg,) = [p for p in (dest / "index").iterdir() if p.name.startswith("seg-")]
    return {p.name: p.read_bytes() for p in sorted(seg.iterdir())}


def test_a_follower_cut_parses_its_new_hosts_samples_once(
        site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _parsed_once_and_the_same(_follower_cut, site, tmp_path, monkeypatch)


def test_a_parse_of_another_warc_record_of_the_page_is_not_used(site: Path) -> None:
    """A kept parse serves only the record it was made from: a page the crawl stored again
    (another WARC location) is read and parsed afresh."""
    data = DataDir.open(site)
    store = StoreReader.open(data.store_path)
    try:
        page = next(p for p in store.pages("fetched") if p.url == f"{A}plotting.html")
        other = next(p for p in store.pages("fetched") if p.url == f"{A}printing.html")
    finally:
        store.close()

    def loc(p: Page) -> tuple[str, int, int]:
        return str(p.warc_file), int(p.warc_offset or 0), int(p.warc_length or 0)

    stale = parse_html(b"<html><title>stale</title><body>gone</body></html>", page.url,
                       "text/html", structure=True)
    job = docbatch.DocJob(page.id, page.url, docbatch.FULL, page.content_type, loc(page),
                          [], [])
    for key, want in (((page.id, loc(other)), "Plotting guide"), ((page.id, loc(page)), "stale")):
        analyser = docbatch.BatchAnalyser(data.warc_dir, DEFAULT_INDEX_SETTINGS,
                                          parsed={key: stale})
        try:
            assert analyser.analyse([job]).titles == [want]
        finally:
            analyser.close()
