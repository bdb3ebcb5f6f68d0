"""The link graph's CSR, levels, SCCs and Monte Carlo PageRank."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from websift.ranking.graph import build_graph, gather_successors, subgraph
from websift.ranking.monte_carlo import monte_carlo_pagerank, top_page_error
from websift.ranking.pagerank import pagerank
from websift.ranking.structure import levels, strong_components


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), max_size=60))
def test_csr_holds_each_distinct_non_self_link_once(links: list[tuple[int, int]]) -> None:
    src = np.array([s for s, _ in links], dtype=np.int32)
    dst = np.array([d for _, d in links], dtype=np.int32)
    graph = build_graph(src, dst, 10)
    expected = sorted({(s, d) for s, d in links if s != d})
    got = [(i, int(j)) for i in range(10) for j in graph.successors(i)]
    assert got == expected
    assert graph.indices.dtype == np.int32
    assert graph.out_degree().sum() == graph.num_links == len(expected)


def test_gather_successors_and_subgraph() -> None:
    graph = build_graph(np.array([0, 0, 1, 2, 3]), np.array([1, 2, 2, 3, 0]), 5)
    assert gather_successors(graph.indptr, graph.indices, np.array([0, 2])).tolist() == [1, 2, 3]
    sub, ids = subgraph(graph, np.array([True, False, True, True, False]))
    assert ids.tolist() == [0, 2, 3]
    assert [(i, int(j)) for i in range(sub.n) for j in sub.successors(i)] == [(0, 1), (1, 2),
                                                                             (2, 0)]


def test_levels_from_one_and_several_roots() -> None:
    # 0 -> 1 -> 2 -> 3, 4 -> 3, 5 isolated
    graph = build_graph(np.array([0, 1, 2, 4]), np.array([1, 2, 3, 3]), 6)
    assert levels(graph, [0]).tolist() == [0, 1, 2, 3, -1, -1]
    assert levels(graph, [0, 4]).tolist() == [0, 1, 2, 1, 0, -1]


def test_giant_strongly_connected_component() -> None:
    # a 4-cycle, a 2-cycle and a tail
    src = np.array([0, 1, 2, 3, 4, 5, 3, 6])
    dst = np.array([1, 2, 3, 0, 5, 4, 6, 7])
    comps = strong_components(build_graph(src, dst, 8))
    assert comps.giant_size == 4
    assert comps.in_giant().tolist() == [True] * 4 + [False] * 4
    assert comps.count == 4  # {0..3}, {4, 5}, {6}, {7}


def test_monte_carlo_close_to_power_iteration() -> None:
    rng = np.random.default_rng(11)
    n = 400
    src = rng.integers(0, n, 3000)
    dst = (rng.pareto(1.2, 3000) * 20).astype(np.int64) % n
    sinks = rng.random(n) < 0.15
    keep = ~sinks[src]
    graph = build_graph(src[keep], dst[keep], n)
    exact = pagerank(graph, tol=1e-12).ranks
    estimate = monte_carlo_pagerank(graph, walks_per_page=400, rng=np.random.default_rng(5))
    assert abs(estimate.sum() - 1) < 1e-12
    err = top_page_error(estimate, exact, top=20)
    assert err.mean_relative_error < 0.03
    assert err.overlap >= 0.8
    # fewer walks: a larger error (the estimate converges as walks grow)
    rough = monte_carlo_pagerank(graph, walks_per_page=2, rng=np.random.default_rng(5))
    assert top_page_error(rough, exact, top=20).mean_relative_error > err.mean_relative_error
