"""Adaptive OPIC (ranking/opic.py): Lemma 2.2 over random crawls, and the estimates converge."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from websift.ranking.opic import OpicParams, OpicState, Strategy, interpolate_history

Graph = dict[int, list[int]]


@st.composite
def crawls(draw: st.DrawFn) -> tuple[Graph, list[int], float, int]:
    n = draw(st.integers(2, 25))
    graph = {i: draw(st.lists(st.integers(1, n), max_size=6)) for i in range(1, n + 1)}
    seeds = draw(st.lists(st.integers(1, n), min_size=1, max_size=3, unique=True))
    share = draw(st.floats(0.0, 1.0))
    steps = draw(st.integers(1, 120))
    return graph, seeds, share, steps * 1000 + draw(st.integers(0, 999))


@settings(max_examples=150, deadline=None)
@given(crawls(), st.sampled_from(list(Strategy)))
def test_total_cash_is_constant_after_every_step(case: tuple[Graph, list[int], float, int],
                                                  strategy: Strategy) -> None:
    """Lemma 2.2 along a random crawl that discovers the graph as it reads it, with page
    selection by each strategy, dangling pages, and the virtual page giving cash back."""
    graph, seeds, share, code = case
    steps, seed = divmod(code, 1000)
    rng = np.random.default_rng(seed)
    state = OpicState(OpicParams(discovery_share=share), capacity=4)
    state.add_pages(seeds)
    state.distribute_virtual(np.array(seeds), np.array(seeds))
    assert state.total_cash() == pytest.approx(1.0, abs=1e-12)
    position = 0
    for step in range(steps):
        known = np.flatnonzero(state.known)
        page = state.select(known, strategy, rng, position)
        position = page + 1
        state.read(page, graph[page])
        assert state.total_cash() == pytest.approx(1.0, abs=1e-12)
        if step % 5 == 4:
            known = np.flatnonzero(state.known)
            unread = known[state.reads[known] == 0]
            state.distribute_virtual(unread, known)
            assert state.total_cash() == pytest.approx(1.0, abs=1e-12)
        assert (state.cash >= 0).all() and state.virtual_cash >= 0


def test_greedy_estimates_approach_pagerank_like_importance() -> None:
    """On a small strongly connected graph the importance estimates order pages by in-links."""
    graph = {1: [2, 3], 2: [3], 3: [1], 4: [3]}
    state = OpicState(OpicParams(window=50.0))
    state.add_pages(list(graph))
    state.distribute_virtual(np.array(list(graph)), np.array(list(graph)))
    for _ in range(3000):
        page = state.select(np.array(list(graph)), Strategy.GREEDY)
        state.read(page, graph[page])
        known = np.array(list(graph))
        state.distribute_virtual(np.array([], dtype=np.int64), known)
    imp = state.importance(np.array([1, 2, 3, 4]))
    assert imp[2] > imp[0] > imp[1] > imp[3]  # page 3 has 3 in-links, page 4 none
    assert imp.sum() == pytest.approx(1.0, rel=0.1)


def test_interpolation_window() -> None:
    # inside the window: the old history decays linearly, the new cash is added
    assert float(interpolate_history(2.0, 1.0, 1.0, 4.0)) == pytest.approx(2.0 * 3 / 4 + 1.0)
    # beyond it: only the new cash, scaled to the window
    assert float(interpolate_history(2.0, 1.0, 8.0, 4.0)) == pytest.approx(0.5)
