"""Fixed and Variable window policies of Adaptive OPIC (section 3.3) on hand-made reads."""

from __future__ import annotations

import numpy as np
import pytest

from websift.ranking.opic_windows import FixedWindow, VariableWindow


def test_variable_window_keeps_the_last_k_measures() -> None:
    w = VariableWindow(2, k=2)
    for clock, cash in ((1.0, 1.0), (2.0, 2.0), (3.0, 3.0), (4.0, 4.0)):
        w.record(0, cash, clock)
    w.record(1, 1.0, 4.0)
    assert w.measures() == 1.5
    est = w.estimate(np.array([0.0, 0.5]), clock=5.0)
    # page 0: cash 3 + 4 gathered since the read at clock 2 -> 7 / 3; page 1: 1.5 / 5
    raw = np.array([7 / 3, 1.5 / 5])
    np.testing.assert_allclose(est, raw / raw.sum())


def test_fixed_window_drops_old_measures_unless_improved() -> None:
    plain, improved = FixedWindow(1, window=2.0), FixedWindow(2, window=2.0, min_measures=3)
    for clock, cash in ((1.0, 1.0), (2.0, 1.0), (3.0, 1.0), (10.0, 4.0)):
        plain.record(0, cash, clock)
        improved.record(0, cash, clock)
    improved.record(1, 1.0, 10.0)
    assert plain.measures() == 1.0 and improved.measures() == 2.0
    two = FixedWindow(2, window=2.0)
    two.record(0, 4.0, 10.0)
    two.record(1, 1.0, 10.0)
    np.testing.assert_allclose(two.estimate(np.zeros(2), 10.5), [0.8, 0.2])
    # improved: one measure inside the window, so page 0 uses its three kept ones over their
    # span (since the read at clock 1): (1 + 1 + 4) / 9.5; page 1's one measure: 1 / 10.5
    raw = np.array([6 / 9.5, 1 / 10.5])
    np.testing.assert_allclose(improved.estimate(np.zeros(2), 10.5), raw / raw.sum())


def test_bad_window_parameters() -> None:
    with pytest.raises(ValueError):
        VariableWindow(1, 0)
    with pytest.raises(ValueError):
        FixedWindow(1, 0.0)
