"""Provisional priors: a page indexed after the last rank run is ranked by its OPIC importance
when it was indexed (scaled to mean one, as the ranks' vectors are) until the next run."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np

from testkit.corpus import build_data_dir, page
from websift.api.retrieval import choose_static
from websift.api.snapshot import RankView
from websift.core.datadir import DataDir
from websift.indexer.build import build_index
from websift.indexer.merge_policy import MergePolicy
from websift.indexer.searcher import IndexQuery, Searcher
from websift.ranking.rank_job import run_rank
from websift.ranking.ranks import Ranks
from websift.store.crawl_store import CrawlStore

A = "http://a.example"


def set_importance(data: DataDir, values: dict[str, float]) -> dict[str, int]:
    """Give pages OPIC importance as the crawl's frontier would have; their URL IDs."""
    ids: dict[str, int] = {}
    with CrawlStore.open(data.store_path) as store:
        for url in values:
            uid = store.url_id(url)
            assert uid is not None
            ids[url] = uid
    conn = sqlite3.connect(data.store_path)
    with conn:
        conn.executemany("UPDATE urls SET importance = ? WHERE id = ?",
                         [(v, ids[u]) for u, v in values.items()])
    conn.close()
    return ids


def test_a_page_newer_than_the_ranks_gets_its_opic_importance(tmp_path: Path) -> None:
    data = build_data_dir(tmp_path / "d", {
        f"{A}/": page("Home", "gecko", f'<a href="{A}/old">old</a>'),
        f"{A}/old": page("Old", "gecko gecko", f'<a href="{A}/">home</a>'),
    })
    set_importance(data, {f"{A}/": 0.5, f"{A}/old": 0.5})
    build_index(data)
    run_rank(data)
    view = RankView.load(Ranks.open(data))
    # A page fetched after the rank run, with a URL the ranks have never seen.
    build_data_dir(data.root, {f"{A}/new": page("New", "gecko")})
    ids = set_importance(data, {f"{A}/": 0.25, f"{A}/old": 0.25, f"{A}/new": 0.5})
    build_index(data)
    searcher = Searcher.open(data)
    new, old = ids[f"{A}/new"], ids[f"{A}/old"]
    assert new >= len(view.pagerank) or view.pagerank[new] == 0
    # Three pages hold importance 1 in all: mean one is x 3.
    got = searcher.provisional_prior(np.array([new, old, 10_000]))
    assert got[0] == np.float32(0.5 * 3)
    assert got[2] == 0.0
    choice = choose_static(view, None, [], "pagerank", searcher.provisional_prior)
    assert choice.lookup is not None
    static = choice.lookup(np.array([new, old]))
    assert static[0] == np.float32(1.5)  # provisional, where the ranks know nothing
    assert static[1] == view.pagerank[old] > 0  # the ranks, where they know the page
    bare = choose_static(view, None, [], "pagerank")
    assert bare.lookup is not None and bare.lookup(np.array([new]))[0] == 0.0
    # No static score asked for: no prior, provisional or not.
    assert choose_static(view, None, [], "none", searcher.provisional_prior).lookup is None
    # Searched with the prior, the new page has one.
    lookup = choice.lookup
    res = searcher.search(IndexQuery("gecko", prior=lookup))
    assert {h.url: h.prior_score > 0 for h in res.hits}[f"{A}/new"]


def test_merges_keep_the_provisional_priors(tmp_path: Path) -> None:
    data = build_data_dir(tmp_path / "d", {f"{A}/a": page("A", "ibex")})
    ids = set_importance(data, {f"{A}/a": 1.0})
    build_index(data)
    build_data_dir(data.root, {f"{A}/b": page("B", "ibex")})
    ids |= set_importance(data, {f"{A}/a": 0.5, f"{A}/b": 0.5})
    report = build_index(data, policy=MergePolicy(merge_factor=2))
    assert report.mode == "merge"
    searcher = Searcher.open(data)
    assert searcher.segment_count() == 1
    assert searcher.provisional_prior(np.array([ids[f"{A}/a"], ids[f"{A}/b"]])).tolist() == [
        1.0, 1.0]
