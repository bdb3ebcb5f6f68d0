"""PageRank by power iteration against worked examples and networkx."""

from __future__ import annotations

from fractions import Fraction

import networkx as nx
import numpy as np
import pytest

from websift.ranking.errors import GraphError
from websift.ranking.graph import build_graph, from_csr_arrays
from websift.ranking.pagerank import Dangling, pagerank, remove_dangling


def random_graph(n: int, m: int, seed: int, dangling: float = 0.2):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, m)
    dst = (rng.pareto(1.5, m) * n / 10).astype(np.int64) % n  # skewed in-degrees
    sinks = rng.random(n) < dangling
    keep = ~sinks[src]
    return build_graph(src[keep], dst[keep], n), src[keep], dst[keep]


def to_networkx(graph) -> nx.DiGraph:  # type: ignore[no-untyped-def]
    g = nx.DiGraph()
    g.add_nodes_from(range(graph.n))
    src = np.repeat(np.arange(graph.n), graph.out_degree())
    g.add_edges_from(zip(src.tolist(), graph.indices.tolist(), strict=True))
    return g


def test_slides_worked_example() -> None:
    # Slides 'Pagerank, an example': 1 -> {1, 3, 4}, 2 -> {1, 4}, 3 -> {2, 4}, 4 -> {2};
    # solution p = (6/23, 8/23, 2/23, 7/23).  No damping (c = 1): the graph is strongly
    # connected and aperiodic (the self-loop), so the power method converges to it.
    indptr = np.array([0, 3, 5, 7, 8])
    indices = np.array([0, 2, 3, 0, 3, 1, 3, 1])
    result = pagerank(from_csr_arrays(indptr, indices), damping=1.0, tol=1e-15)
    expected = np.array([6, 8, 2, 7]) / 23
    assert result.converged
    np.testing.assert_allclose(result.ranks, expected, atol=1e-13)
    assert [Fraction(x).limit_denominator(100) for x in result.ranks] == [
        Fraction(6, 23), Fraction(8, 23), Fraction(2, 23), Fraction(7, 23)]


def test_residuals_recorded_and_shrinking() -> None:
    graph, _, _ = random_graph(200, 1500, seed=1)
    result = pagerank(graph, tol=1e-12)
    assert result.converged and result.residuals[-1] <= 1e-12
    assert result.iterations == len(result.residuals) > 5
    # geometric decay at rate <= c, up to rounding at the end
    assert result.residuals[5] < result.residuals[0] * 0.85**5 * 1.01
    assert abs(result.ranks.sum() - 1) < 1e-12


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agrees_with_networkx(seed: int) -> None:
    graph, _, _ = random_graph(300, 2000, seed=seed)
    ours = pagerank(graph, damping=0.85, tol=1e-13).ranks
    theirs = nx.pagerank(to_networkx(graph), alpha=0.85, tol=1e-15, max_iter=1000)
    ref = np.array([theirs[i] for i in range(graph.n)])
    assert np.abs(ours - ref).sum() < 1e-10


def test_personalised_agrees_with_networkx() -> None:
    graph, _, _ = random_graph(250, 1800, seed=7)
    rng = np.random.default_rng(3)
    teleport = rng.random(graph.n) * (rng.random(graph.n) < 0.1)
    dangling = rng.random(graph.n)
    ours = pagerank(graph, teleport=teleport, dangling_vector=dangling, tol=1e-13).ranks
    theirs = nx.pagerank(
        to_networkx(graph), alpha=0.85, tol=1e-15, max_iter=1000,
        personalization={i: float(v) for i, v in enumerate(teleport)},
        dangling={i: float(v) for i, v in enumerate(dangling)},
    )
    ref = np.array([theirs[i] for i in range(graph.n)])
    assert np.abs(ours - ref).sum() < 1e-10


def test_personalisation_is_linear_with_a_fixed_dangling_vector() -> None:
    graph, _, _ = random_graph(300, 1500, seed=4, dangling=0.3)
    assert graph.dangling().sum() > 30
    n = graph.n
    topic_a = np.zeros(n)
    topic_a[:20] = 1 / 20
    topic_b = np.zeros(n)
    topic_b[200:260] = 1 / 60
    uniform = np.full(n, 1 / n)
    alpha = 0.3
    mixed = alpha * topic_a + (1 - alpha) * topic_b

    def pr(e: np.ndarray, w: np.ndarray | None) -> np.ndarray:
        return pagerank(graph, teleport=e, dangling_vector=w, tol=1e-14).ranks

    exact = alpha * pr(topic_a, uniform) + (1 - alpha) * pr(topic_b, uniform)
    assert np.abs(exact - pr(mixed, uniform)).sum() < 1e-11
    # With dangling rank sent to E itself the map E -> PageRank is not linear: the identity
    # above would fail, which is why topic vectors use a fixed dangling vector.
    loose = alpha * pr(topic_a, None) + (1 - alpha) * pr(topic_b, None)
    assert np.abs(loose - pr(mixed, None)).sum() > 1e-4


def test_paper1998_hand_example() -> None:
    # 0 <-> 1, 1 -> 2, 2 -> 3; 3 is dangling, and once it is gone so is 2: two rounds.
    graph = build_graph(np.array([0, 1, 1, 2]), np.array([1, 0, 2, 3]), 4)
    alive, rounds = remove_dangling(graph)
    assert rounds == 2 and alive.tolist() == [True, True, False, False]
    result = pagerank(graph, damping=0.85, dangling=Dangling.PAPER1998, tol=1e-14)
    assert result.removal_rounds == 2
    # core {0, 1}: symmetric, so (1/2, 1/2); then two section-2.6 steps on the whole graph:
    # x1 = 0.85 * (x1/2, x0, x1/2, x2) + d/4 with d the lost mass, twice, by hand:
    expected = [0.24203125, 0.25796875, 0.24203125, 0.25796875]
    np.testing.assert_allclose(result.ranks, expected, atol=1e-12)
    assert (result.ranks > 0).all()  # "otherwise some of the dangling links will have zero weight"


def test_paper1998_on_a_dag_starts_from_the_teleport_vector() -> None:
    graph = build_graph(np.array([0, 1]), np.array([1, 2]), 3)
    result = pagerank(graph, dangling="paper1998")
    assert result.removal_rounds == 3
    assert abs(result.ranks.sum() - 1) < 1e-12 and (result.ranks > 0).all()


def test_float32_is_close() -> None:
    graph, _, _ = random_graph(300, 2000, seed=5)
    a = pagerank(graph, tol=1e-12).ranks
    b = pagerank(graph, tol=1e-6, dtype=np.float32).ranks
    assert np.abs(a - b).sum() < 1e-4


def test_node_zero_of_a_store_graph_gets_nothing() -> None:
    present = np.array([False, True, True, True])
    graph = build_graph(np.array([1, 2, 3]), np.array([2, 3, 1]), 4, present)
    ranks = pagerank(graph, tol=1e-14).ranks
    assert ranks[0] == 0.0
    np.testing.assert_allclose(ranks[1:], [1 / 3] * 3, atol=1e-12)


def test_bad_input_is_refused() -> None:
    graph = build_graph(np.array([0]), np.array([1]), 2)
    with pytest.raises(GraphError, match="damping"):
        pagerank(graph, damping=1.5)
    with pytest.raises(GraphError, match="teleport"):
        pagerank(graph, teleport=np.zeros(2))
    with pytest.raises(GraphError, match="shape"):
        pagerank(graph, teleport=np.ones(3))
    with pytest.raises(GraphError, match="outside"):
        build_graph(np.array([0]), np.array([5]), 2)


def test_restricted_pagerank_over_the_first_levels() -> None:
    from websift.ranking.pagerank import restricted_pagerank
    from websift.ranking.structure import levels

    graph, _, _ = random_graph(200, 1200, seed=9)
    level = levels(graph, [0])
    near = restricted_pagerank(graph, level, max_level=1)
    inside = (level >= 0) & (level <= 1)
    assert (near.ranks[~inside] == 0).all() and (near.ranks[inside] > 0).all()
    assert abs(near.ranks.sum() - 1) < 1e-12
    reachable = level >= 0
    everything = restricted_pagerank(graph, level, max_level=10_000)
    from websift.ranking.graph import subgraph

    sub, ids = subgraph(graph, reachable)
    np.testing.assert_allclose(everything.ranks[ids], pagerank(sub).ranks, atol=1e-12)
    with pytest.raises(GraphError, match="no page within"):
        restricted_pagerank(graph, np.full(graph.n, -1), max_level=3)


def test_row_blocks_in_threads_give_the_same_ranks(monkeypatch: pytest.MonkeyPatch) -> None:
    from websift.ranking import settings
    from websift.ranking.pagerank import power_iteration, row_blocks, transition_matrix

    graph, _, _ = random_graph(400, 3000, seed=11)
    matrix = transition_matrix(graph, 0.85)
    monkeypatch.setattr(settings, "LINKS_PER_THREAD", 100)
    blocks = row_blocks(matrix, 3)
    assert len(blocks) == 3
    assert [lo for lo, _, _ in blocks[1:]] == [hi for _, hi, _ in blocks[:-1]]
    assert blocks[0][0] == 0 and blocks[-1][1] == graph.n
    assert sum(b.nnz for _, _, b in blocks) == matrix.nnz
    # views, not copies: the blocks cost no memory per link
    assert all(np.shares_memory(b.data, matrix.data) and np.shares_memory(b.indices, matrix.indices)
               for _, _, b in blocks)
    assert all(b.nnz >= matrix.nnz / 3 - graph.in_degree().max() * 2 for _, _, b in blocks)
    x = np.random.default_rng(0).random(graph.n)
    stacked = np.concatenate([b @ x for _, _, b in blocks])
    np.testing.assert_array_equal(stacked, matrix @ x)  # each row summed in the same order
    teleport = np.full(graph.n, 1 / graph.n)
    one = power_iteration(matrix, 0.85, teleport, tol=1e-13, threads=1)
    three = power_iteration(matrix, 0.85, teleport, tol=1e-13, threads=3)
    assert one.iterations == three.iterations
    assert np.abs(one.ranks - three.ranks).sum() < 1e-14
    w = np.random.default_rng(1).random(graph.n)
    a = power_iteration(matrix, 0.85, teleport, dangling_vector=w / w.sum(), tol=1e-13, threads=1)
    b = power_iteration(matrix, 0.85, teleport, dangling_vector=w / w.sum(), tol=1e-13, threads=3)
    assert np.abs(a.ranks - b.ranks).sum() < 1e-14


def hosts_graph(hosts: int, size: int, seed: int):  # type: ignore[no-untyped-def]
    """Hosts of consecutive pages linking within the host; half the hosts also link out a little,
    the rest are closed (their error components decay at exactly the damping factor)."""
    rng = np.random.default_rng(seed)
    src = np.repeat(np.arange(hosts * size), 3)
    dst = (src // size) * size + rng.integers(0, size, src.size)
    leaky = (src // size) % 2 == 1
    out = leaky & (rng.random(src.size) < 0.05)
    dst[out] = rng.integers(0, hosts * size, int(out.sum()))
    return build_graph(src, dst, hosts * size)


def test_power_extrapolation_needs_fewer_steps_and_keeps_the_bound() -> None:
    from websift.ranking.pagerank import power_iteration, transition_matrix

    graph = hosts_graph(40, 25, seed=2)
    matrix = transition_matrix(graph, 0.85)
    teleport = np.full(graph.n, 1 / graph.n)
    exact = power_iteration(matrix, 0.85, teleport, tol=1e-15, extrapolation=0, max_iter=3000)
    assert exact.converged
    tol = 1e-10
    plain = power_iteration(matrix, 0.85, teleport, tol=tol, extrapolation=0)
    fast = power_iteration(matrix, 0.85, teleport, tol=tol)
    assert fast.converged and plain.converged
    assert fast.iterations < plain.iterations * 0.8
    for run in (plain, fast):
        # the stopping test's guarantee: within residual * c / (1 - c) of the fixpoint
        assert np.abs(run.ranks - exact.ranks).sum() <= tol * 0.85 / 0.15
        assert abs(run.ranks.sum() - 1) < 1e-12
    # no extrapolation in the paper1998 add-back: exactly `fixed_iterations` plain steps
    steps = power_iteration(matrix, 0.85, teleport, fixed_iterations=30)
    plain30 = power_iteration(matrix, 0.85, teleport, fixed_iterations=30, extrapolation=0)
    np.testing.assert_array_equal(steps.ranks, plain30.ranks)


def test_threaded_gather_equals_fancy_indexing(monkeypatch: pytest.MonkeyPatch) -> None:
    from websift.ranking import settings
    from websift.ranking.graph import gather

    monkeypatch.setattr(settings, "LINKS_PER_THREAD", 10)
    rng = np.random.default_rng(5)
    values = rng.random(500)
    index = rng.integers(0, 500, 1001).astype(np.int32)
    for threads in (1, 2, 3):
        np.testing.assert_array_equal(gather(values, index, threads), values[index])
    assert gather(values, index[:0], 2).shape == (0,)


def test_the_command_line_offers_exactly_the_dangling_policies_pagerank_implements() -> None:
    from websift.ranking import settings
    from websift.ranking.pagerank import Dangling

    assert {d.value for d in Dangling} == set(settings.DANGLING_POLICIES)
