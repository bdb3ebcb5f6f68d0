"""Site-level importance: the host graph from the real crawl store, its PageRank (against
networkx), its place in the ranks generation, and the fusion's static score built from it."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ranking_crawl import COOK, PY, SITE

from websift.api.cli import main
from websift.api.snapshot import RankView
from websift.core import checked
from websift.core.datadir import DataDir
from websift.ranking.fusion import (
    DEFAULT_SITE_MIX,
    FusionParams,
    normalise_mean_one,
    prior_boost,
    site_static,
)
from websift.ranking.graph import build_graph
from websift.ranking.host_graph import host_ranks, read_host_graph, weighted_graph
from websift.ranking.pagerank import Dangling, pagerank
from websift.ranking.rank_job import run_rank
from websift.ranking.ranks import Ranks
from websift.ranking.ranks_format import MANIFEST, MANIFEST_FILE
from websift.ranking.store_graph import load_graph
from websift.ranking.topics import TopicSet, add_topic
from websift.store.crawl_store import CrawlStore, Link
from websift.store.views import StoreReader

A, B, C = "http://a.example/", "http://b.example/", "http://c.example/"
# page -> [(target, nofollow)]: a1 and a2 link to b (two linking pages, a1 twice and to two
# b pages: still one), a3 only inside a, b1 to c and (nofollow) to a, b2 to a; c links nowhere
# but to itself: c is a dangling host.
LINKS: dict[str, list[tuple[str, bool]]] = {
    A + "1": [(B + "1", False), (B + "2", False), (B + "1", False), (A + "2", False)],
    A + "2": [(B + "1", False), (A + "1", False)],
    A + "3": [(A + "1", False)],
    B + "1": [(C + "1", False), (A + "1", True)],
    B + "2": [(A + "2", False)],
    C + "1": [(C + "1", False)],
}


def make_store(path: Path) -> None:
    with CrawlStore.open(path) as store:
        with store.transaction():
            for url in LINKS:
                store.add_url(url)
        for url, links in LINKS.items():
            uid = store.url_id(url)
            assert uid is not None
            with store.transaction():
                store.record_fetched(uid, http_status=200, content_type="text/html", warc=None,
                                     content_hash=url,
                                     links=[Link(store.url_id(t) or 0, "", nf) for t, nf in links])


def test_host_links_count_each_linking_page_once_per_host_pair(tmp_path: Path) -> None:
    make_store(tmp_path / "crawl.sqlite3")
    with StoreReader.open(tmp_path / "crawl.sqlite3") as store:
        origins = store.host_origins()
        named = {(origins[a], origins[b]): n for a, b, n in store.host_links()}
        hosts = read_host_graph([store], store.max_url_id() + 1)
        a1 = store.url_id(A + "1") or 0
    a, b, c = (u.rstrip("/") for u in (A, B, C))
    # no a -> a (inside a host), no b -> a from the nofollow link, no c -> c
    assert named == {(a, b): 2, (b, c): 1, (b, a): 1}
    g = hosts.graph
    assert g.weights is not None
    assert hosts.origins[int(hosts.host_of[a1])] == a and hosts.host_of[0] == -1
    edges = {(hosts.origins[s], hosts.origins[int(d)]): float(w)
             for s in range(g.n)
             for d, w in zip(g.successors(s), g.weights[g.indptr[s]:g.indptr[s + 1]], strict=True)}
    assert edges == {(a, b): 2.0, (b, c): 1.0, (b, a): 1.0}
    assert g.dangling().tolist() == [hosts.origins[i] == c for i in range(3)]


def test_host_pagerank_matches_networkx(tmp_path: Path) -> None:
    make_store(tmp_path / "crawl.sqlite3")
    with StoreReader.open(tmp_path / "crawl.sqlite3") as store:
        hosts = read_host_graph([store], store.max_url_id() + 1)
        ranked = host_ranks([store], store.max_url_id() + 1, damping=0.85, tol=1e-12,
                            dangling="teleport")
    assert ranked is not None
    g = hosts.graph
    assert g.weights is not None
    nxg = nx.DiGraph()
    nxg.add_nodes_from(range(g.n))
    for s in range(g.n):
        for d, w in zip(g.successors(s), g.weights[g.indptr[s]:g.indptr[s + 1]], strict=True):
            nxg.add_edge(s, int(d), weight=float(w))
    pages = np.bincount(hosts.host_of[hosts.host_of >= 0], minlength=g.n)
    teleport = {i: float(pages[i]) for i in range(g.n)}  # a jump lands on a page: its host
    expected = nx.pagerank(nxg, alpha=0.85, personalization=teleport, weight="weight",
                           tol=1e-13, max_iter=1000)
    np.testing.assert_allclose(ranked.rank, [expected[i] for i in range(g.n)], atol=1e-9)
    assert ranked.stats == {"hosts": 3, "links": 3, "iterations": ranked.stats["iterations"],
                            "converged": True}


def test_host_pagerank_hand_worked() -> None:
    # two hosts linking to each other, with weights 2 and 1: symmetric, so 1/2 each whatever
    # the weights; a third host with no links gets only teleport: (1 - c) / 3
    g = weighted_graph(np.array([0, 1]), np.array([1, 0]), np.array([2.0, 1.0]), 3,
                       np.ones(3, dtype=bool))
    ranks = pagerank(g, damping=0.85, tol=1e-14, dangling="teleport").ranks
    # dangling host 2 sends its rank to E (uniform): x2 = (1 - c)/3 + c x2 / 3
    x2 = (0.15 / 3) / (1 - 0.85 / 3)
    np.testing.assert_allclose(ranks, [(1 - x2) / 2, (1 - x2) / 2, x2], atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 12).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=40))),
    st.sampled_from(["teleport", "paper1998"]))
def test_unit_weights_give_the_page_pagerank(graph: tuple[int, list[tuple[int, int]]],
                                             policy: str) -> None:
    n, edges = graph
    src = np.asarray([s for s, _ in edges], dtype=np.int64)
    dst = np.asarray([d for _, d in edges], dtype=np.int64)
    plain = build_graph(src, dst, n)
    # the distinct pairs, each of weight 1 (repeated pairs would add up in a weighted graph)
    rows = np.repeat(np.arange(n), plain.out_degree())
    unit = weighted_graph(rows, plain.indices, np.ones(plain.num_links), n, np.ones(n, bool))
    np.testing.assert_array_equal(unit.indices, plain.indices)
    np.testing.assert_array_equal(unit.indptr, plain.indptr)
    expected = pagerank(plain, tol=1e-12, dangling=policy).ranks
    np.testing.assert_allclose(pagerank(unit, tol=1e-12, dangling=policy).ranks, expected,
                               atol=1e-10)


def cross_host_links() -> dict[tuple[str, str], int]:
    """The ranking crawl's host links worked out from its definition: (source, target host)
    pairs of followed links between hosts, counted per source page."""
    def host(url: str) -> str:
        return url.split("/")[2]

    pairs = {(src, host(t)) for src, (_, _, links) in SITE.items() for t, _, nf in links
             if not nf and host(t) != host(src)}
    out: dict[tuple[str, str], int] = {}
    for src, target in pairs:
        key = (host(src), target)
        out[key] = out.get(key, 0) + 1
    return out


def test_rank_writes_host_ranks_and_the_reader_shows_them(crawl: DataDir) -> None:
    report = run_rank(crawl)
    assert report.hosts is not None and report.hosts["hosts"] == 2
    assert report.hosts["links"] == len(cross_host_links()) == 2
    ranks = Ranks.open(crawl)
    assert ranks.host is not None and ranks.hostrank is not None
    assert ranks.host.shape == ranks.pagerank.shape and ranks.host.dtype == np.int32
    assert abs(ranks.hostrank.sum() - 1) < 1e-12 and ranks.host[0] == -1
    with StoreReader.open(crawl.store_path) as store:
        py, tutorial, cook = (store.url_id(u) or 0 for u in (PY, PY + "tutorial", COOK))
        py_pages = [uid for uid, url in store.urls() if url.startswith(PY)]
    assert ranks.host[py] == ranks.host[tutorial] != ranks.host[cook]
    facts = ranks.host_facts(py)
    assert facts is not None and facts["hosts"] == 2 and facts["host_pages"] == len(py_pages)
    assert facts["host_rank"] == ranks.hostrank[ranks.host[py]]
    share = ranks.pagerank[py] / ranks.pagerank[py_pages].sum()
    assert facts["rank_in_host"] == pytest.approx(share)
    best = max(py_pages, key=lambda uid: ranks.pagerank[uid])
    assert ranks.host_facts(best)["position_in_host"] == 1  # type: ignore[index]
    assert ranks.host_facts(10_000) is None
    # a topic written later keeps the generation's host ranks
    add_topic(crawl, TopicSet(name="python", hosts=("py.example",)))
    later = Ranks.open(crawl)
    assert later.generation == ranks.generation + 1
    np.testing.assert_array_equal(later.hostrank, ranks.hostrank)


def test_a_generation_without_host_ranks_still_loads(crawl: DataDir) -> None:
    run_rank(crawl)
    path = crawl.ranks_dir / MANIFEST
    body = checked.read_json(path, MANIFEST_FILE).body
    del body["hosts"]
    for version in (2, 1):  # as websift wrote it before the hosts section (and before checksums)
        doc = {"format": MANIFEST_FILE.name, "version": version, **body}
        if version >= MANIFEST_FILE.checked_since:
            doc["checksum"] = checked.json_checksum(doc)
        path.write_text(json.dumps(doc))
        ranks = Ranks.open(crawl)
        assert ranks.host is None and ranks.hostrank is None
        assert ranks.host_facts(1) is None
        # no host ranks: the fusion's static score is today's PageRank times N
        np.testing.assert_array_equal(RankView.load(ranks).pagerank,
                                      normalise_mean_one(ranks.pagerank))


def test_a_manifest_naming_part_of_the_host_ranks_is_refused(crawl: DataDir) -> None:
    from websift.ranking.errors import RanksCorrupt

    run_rank(crawl)
    path = crawl.ranks_dir / MANIFEST
    body = checked.read_json(path, MANIFEST_FILE).body
    del body["hosts"]["hostrank"]
    checked.write_json(path, MANIFEST_FILE, body)
    with pytest.raises(RanksCorrupt, match="part of the host ranks"):
        Ranks.open(crawl)


def test_graph_page_and_rank_print_host_ranks(crawl: DataDir,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", "page", PY, "--data", str(crawl.root)]) == 0
    assert "no ranks for this page yet" in capsys.readouterr().out
    assert main(["rank", "--data", str(crawl.root), "--quiet"]) == 0
    assert "host pagerank: 2 hosts, 2 host links, converged" in capsys.readouterr().out
    assert main(["graph", "page", PY, "--data", str(crawl.root), "--json"]) == 0
    site = json.loads(capsys.readouterr().out)["site"]
    assert site["hosts"] == 2 and site["host_pages"] == 4 and 0 < site["rank_in_host"] <= 1
    assert main(["graph", "page", PY, "--data", str(crawl.root)]) == 0
    text = capsys.readouterr().out
    assert f"host rank {site['host_rank']:.6g}" in text
    assert f"number {site['position_in_host']} of 4 pages" in text


# ---------------------------------------------------------------- the fusion's static score
ranks_st = st.lists(st.floats(0, 1, allow_nan=False, allow_subnormal=False), min_size=1,
                    max_size=30)


@settings(max_examples=200, deadline=None)
@given(ranks_st, st.data(), st.floats(0, 1),
       st.tuples(st.floats(0, 100), st.floats(0.01, 100), st.floats(0.1, 5)))
def test_prior_stays_below_w_for_any_ranks(pr: list[float], data: st.DataObject, mix: float,
                                           fusion: tuple[float, float, float]) -> None:
    w, k, a = fusion
    n = len(pr)
    hosts = data.draw(st.integers(1, 6))
    host = np.asarray(data.draw(st.lists(st.integers(-1, hosts - 1), min_size=n, max_size=n)),
                      dtype=np.int32)
    hostrank = np.asarray(data.draw(st.lists(st.floats(0, 1, allow_nan=False), min_size=hosts,
                                             max_size=hosts)))
    static = site_static(np.asarray(pr), host, hostrank, mix)
    assert static.shape == (n,) and np.all(np.isfinite(static)) and (static >= 0).all()
    held = np.count_nonzero(static)
    if held:
        assert static.sum() == pytest.approx(held)  # mean one over the pages that hold any
    prior = prior_boost(static, FusionParams(w, k, a))
    assert (prior >= 0).all() and (prior <= w).all()


@settings(max_examples=100, deadline=None)
@given(ranks_st, st.floats(0, 1))
def test_one_host_or_mix_zero_is_exactly_todays_prior(pr: list[float], mix: float) -> None:
    vector = np.asarray(pr)
    n = len(pr)
    one_host = np.zeros(n, dtype=np.int32)
    expected = normalise_mean_one(vector)
    np.testing.assert_array_equal(site_static(vector, one_host, np.asarray([1.0]), mix), expected)
    two = np.arange(n, dtype=np.int32) % 2
    np.testing.assert_array_equal(site_static(vector, two, np.asarray([0.9, 0.1]), 0.0), expected)
    np.testing.assert_array_equal(site_static(vector, None, None, mix), expected)


def test_site_mix_moves_importance_towards_the_host_graph() -> None:
    # host 0: three pages holding 0.9 of the PageRank; host 1: one page with 0.1, but the host
    # graph ranks host 1 first (0.8)
    pr = np.asarray([0.0, 0.5, 0.3, 0.1, 0.1])
    host = np.asarray([-1, 0, 0, 0, 1], dtype=np.int32)
    hostrank = np.asarray([0.2, 0.8])
    statics = [site_static(pr, host, hostrank, b) for b in (0.0, DEFAULT_SITE_MIX, 1.0)]
    lone = [float(s[4]) for s in statics]
    assert lone[0] < lone[1] < lone[2]
    for s in statics:
        assert s[0] == 0 and s.sum() == pytest.approx(4)
        assert s[1] / s[2] == pytest.approx(0.5 / 0.3)  # within a host: PageRank's order
    # b = 1: host shares are the host ranks, 4 pages * 0.8 for the lone page
    assert statics[2][4] == pytest.approx(4 * 0.8)
    with pytest.raises(ValueError, match="site mix"):
        site_static(pr, host, hostrank, 1.5)


def test_dangling_policies_both_rank_the_host_graph(tmp_path: Path) -> None:
    make_store(tmp_path / "crawl.sqlite3")
    with StoreReader.open(tmp_path / "crawl.sqlite3") as store:
        for policy in Dangling:
            ranked = host_ranks([store], store.max_url_id() + 1, damping=0.85, tol=1e-12,
                                dangling=policy)
            assert ranked is not None and abs(ranked.rank.sum() - 1) < 1e-12
            assert (ranked.rank > 0).all()


def test_the_rank_view_mixes_host_ranks_in_on_a_crawl_of_several_hosts(crawl: DataDir) -> None:
    run_rank(crawl)
    ranks = Ranks.open(crawl)
    assert ranks.host is not None and ranks.hostrank is not None
    view = RankView.load(ranks)
    np.testing.assert_array_equal(
        view.pagerank, site_static(ranks.pagerank, ranks.host, ranks.hostrank, DEFAULT_SITE_MIX))
    np.testing.assert_array_equal(RankView.load(ranks, site_mix=0.0).pagerank,
                                  normalise_mean_one(ranks.pagerank))
    # the two hosts' PageRank masses differ from their host ranks, so the mix moves the score
    assert not np.allclose(view.pagerank, normalise_mean_one(ranks.pagerank))


@pytest.mark.parametrize("which", ["links", "ranking crawl"])
def test_host_links_from_the_page_graph_equal_the_store_view(
    which: str, tmp_path: Path, crawl: DataDir
) -> None:
    path = tmp_path / "crawl.sqlite3"
    if which == "links":
        make_store(path)
    else:
        path = crawl.store_path
    with StoreReader.open(path) as store:
        n = store.max_url_id() + 1
        by_sqlite = read_host_graph([store], n)
        by_numpy = read_host_graph([store], n, load_graph(store))
    assert by_sqlite.origins == by_numpy.origins
    np.testing.assert_array_equal(by_sqlite.host_of, by_numpy.host_of)
    for key in ("indptr", "indices", "weights", "present"):
        np.testing.assert_array_equal(getattr(by_sqlite.graph, key), getattr(by_numpy.graph, key))
    assert by_numpy.graph.num_links > 0
