"""The follower's analysers keep the fields of the pages they analysed last
(indexer/recent_fields.py): a page indexed again for its anchor texts alone is not parsed again,
and its document is the one a fresh analysis makes; another WARC record or another template is
analysed again; the budget keeps the most recently used pages."""

from __future__ import annotations

import time
from pathlib import Path

from testkit.corpus import build_data_dir
from websift.core.datadir import DataDir
from websift.indexer.build import IndexReport, run_once
from websift.indexer.manifest import Manifest, read_manifest
from websift.indexer.recent_fields import PageFields, RecentFields, fields_chars
from websift.indexer.searcher import IndexQuery, Searcher
from websift.indexer.settings import DEFAULT_INDEX_SETTINGS
from websift.indexer.workers import AnalyserPool
from websift.store.views import StoreReader

A = "http://a.example"


def page(title: str, body: str) -> str:
    return f"<html><head><title>{title}</title></head><body><p>{body}</p></body></html>"


def fields(word: str) -> PageFields:
    return PageFields(word, word, [word, "", word, "", [], ""], b"", "en")


def test_given_back_for_the_same_record_and_template_only() -> None:
    recent = RecentFields(1000)
    recent.put(1, ("w.warc", 0, 10), frozenset({7}), fields("one"))
    assert recent.get(1, ("w.warc", 0, 10), frozenset({7})) == fields("one")
    assert recent.get(1, ("w.warc", 10, 10), frozenset({7})) is None  # fetched again
    assert recent.get(1, ("w.warc", 0, 10), None) is None  # its host's template changed
    assert recent.get(2, ("w.warc", 0, 10), frozenset({7})) is None
    assert recent.hits == 1


def test_the_budget_keeps_the_most_recently_used() -> None:
    size = fields_chars(fields("abcd"))
    recent = RecentFields(3 * size)
    for i in range(3):
        recent.put(i, i, None, fields("abcd"))
    assert recent.get(0, 0, None) is not None  # 0 used last: 1 is the oldest now
    recent.put(3, 3, None, fields("abcd"))
    assert [recent.get(i, i, None) is not None for i in range(4)] == [True, False, True, True]
    assert recent.held == 3 * size and len(recent) == 3
    recent.put(4, 4, None, fields("x" * (3 * size)))  # larger than the budget: not kept
    assert recent.get(4, 4, None) is None and recent.held == 3 * size
    assert len(RecentFields(0)) == 0


def _index(data: DataDir, pool: AnalyserPool, *, only_ids: list[int] | None = None,
           link_targets: bool = False) -> IndexReport:
    manifest: Manifest | None = None
    if (data.index_dir / "manifest.json").exists():
        manifest = read_manifest(data.index_dir)
    with StoreReader.open(data.store_path) as store:
        return run_once(data, store, manifest, ram_mb=64, started=time.monotonic(),
                        say=lambda _m: None, procs=1, pool=pool, merge=False,
                        link_targets=link_targets or manifest is None, only_ids=only_ids)


def test_a_link_target_indexed_again_is_not_parsed_again_and_its_segment_is_the_same(
        tmp_path: Path) -> None:
    """The same cuts with and without kept fields write byte-identical segments; with them,
    the link target's cut analysed its page from what the first cut kept."""
    made: dict[int, dict[str, list[int]]] = {}
    reused: dict[int, int] = {}
    for chars in (0, 1 << 20):
        data = build_data_dir(tmp_path / f"d{chars}", {
            f"{A}/1": page("One", "aardvark and its burrow"),
            f"{A}/2": page("Two", "walrus on the ice")})
        with AnalyserPool(data.warc_dir, 1, {}, DEFAULT_INDEX_SETTINGS,
                          recent_chars=chars) as pool:
            first = _index(data, pool)
            assert first.documents == 2 and first.reused == 0
            build_data_dir(data.root, {f"{A}/3": page("Three", "zebra stripes")},
                           links=[(f"{A}/3", f"{A}/1", "nocturnal mammal")])
            assert _index(data, pool).documents == 1  # the fetched page's cut
            with StoreReader.open(data.store_path) as store:
                target = store.url_id(f"{A}/1")
            assert target is not None
            again = _index(data, pool, only_ids=[target])  # its anchor text changed
            assert again.documents == 1
            reused[chars] = again.reused
            manifest = read_manifest(data.index_dir)
            made[chars] = {s.name: s.files for s in manifest.segments}
            found = Searcher.open(data).search(IndexQuery("nocturnal", k=5)).hits
            assert [h.url for h in found] == [f"{A}/1"]  # by its new anchor text
    assert reused == {0: 0, 1 << 20: 1}
    assert made[0] == made[1 << 20]
    assert len(made[0]) == 3
