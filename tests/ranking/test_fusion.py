"""ranking/fusion.py: the saturating fusion of Craswell et al. 2005, on worked examples."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from websift.ranking.fusion import (
    FusionParams,
    fuse,
    gather,
    make_prior,
    mix_topics,
    normalise_mean_one,
    prior_boost,
    sigmoid,
)


def test_saturation_worked_example() -> None:
    # a = 1: s / (s + k); with k = 1: 0 -> 0, 1 -> 1/2, 3 -> 3/4.
    got = sigmoid(np.array([0.0, 1.0, 3.0]), midpoint=1.0, exponent=1.0)
    assert got == pytest.approx([0.0, 0.5, 0.75])


def test_sigmoid_exponent_sharpens_around_midpoint() -> None:
    # a = 2, k = 2: s=1 -> 1/(1+4) = 0.2; s=2 -> 0.5; s=4 -> 16/20 = 0.8.
    got = sigmoid(np.array([1.0, 2.0, 4.0]), midpoint=2.0, exponent=2.0)
    assert got == pytest.approx([0.2, 0.5, 0.8])


def test_boost_is_bounded_by_weight_and_monotone() -> None:
    params = FusionParams(weight=3.0, midpoint=1.0, exponent=1.0)
    s = np.array([0.0, 0.1, 1.0, 10.0, 1e9, np.inf])
    boost = prior_boost(s, params)
    assert np.all(np.diff(boost) >= 0)
    assert np.all(boost <= 3.0) and boost[0] == 0.0
    assert boost[-2] == pytest.approx(3.0, rel=1e-6)


def test_fuse_adds_boost_to_text() -> None:
    params = FusionParams(weight=2.0, midpoint=1.0, exponent=1.0)
    got = fuse(np.array([5.0, 5.0]), np.array([1.0, 0.0]), params)
    assert got == pytest.approx([6.0, 5.0])


def test_negative_and_nan_static_give_no_boost() -> None:
    assert sigmoid(np.array([-1.0]), 1.0, 1.0)[0] == 0.0
    assert normalise_mean_one(np.array([np.nan, 1.0]))[0] == 0.0


def test_normalise_mean_one_ignores_zero_entries() -> None:
    v = normalise_mean_one(np.array([0.0, 0.2, 0.6, 0.2]))
    assert v == pytest.approx([0.0, 0.6, 1.8, 0.6])
    assert v[v > 0].mean() == pytest.approx(1.0)
    assert not normalise_mean_one(np.zeros(3)).any()


def test_gather_gives_zero_beyond_the_vector() -> None:
    got = gather(np.array([0.0, 2.0, 3.0]), np.array([2, 1, 7, -1]))
    assert got == pytest.approx([3.0, 2.0, 0.0, 0.0])


def test_mix_topics_normalises_weights() -> None:
    vectors = {"a": np.array([0.0, 2.0, 0.0]), "b": np.array([0.0, 0.0, 4.0])}
    got = mix_topics(vectors, {"a": 3.0, "b": 1.0}, np.array([1, 2]))
    assert got == pytest.approx([1.5, 1.0])
    assert not mix_topics(vectors, {"a": 0.0}, np.array([1])).any()


def test_make_prior_looks_up_candidates() -> None:
    vector = np.array([0.0, 1.0, 3.0])
    prior = make_prior(lambda ids: gather(vector, ids), FusionParams(2.0, 1.0, 1.0))
    assert prior(np.array([2, 1])) == pytest.approx([1.5, 1.0])


def test_bad_params_refused() -> None:
    with pytest.raises(ValueError, match="midpoint"):
        FusionParams(weight=1.0, midpoint=0.0)


@given(st.lists(st.floats(min_value=0, max_value=1e12), min_size=1, max_size=50),
       st.floats(min_value=0.01, max_value=100), st.floats(min_value=0.1, max_value=4))
def test_sigmoid_in_unit_interval(values: list[float], k: float, a: float) -> None:
    got = sigmoid(np.array(values), k, a)
    assert np.all((got >= 0) & (got <= 1)) and np.all(np.isfinite(got))
