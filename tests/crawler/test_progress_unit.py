"""The crawl's progress line (crawler/progress.py): how far a bounded run is, and how long is
left."""

from __future__ import annotations

import pytest

from websift.crawler.progress import clock, eta, progress_line

FIGURES = {"pages": 40.0, "discovery": 38.0, "refresh": 2.0, "rate": 4.0, "queue": 12.0,
           "in_flight": 1.0, "errors": 0.0, "elapsed": 10.0}


def test_an_unbounded_run_shows_no_total_and_no_eta() -> None:
    line = progress_line(FIGURES)
    assert line.startswith("pages 40 (discovery 38, refresh 2)  4.0/s  queue 12")
    assert " of " not in line and "left" not in line


def test_max_pages_shows_the_total_and_the_time_left_at_the_current_rate() -> None:
    line = progress_line(FIGURES, max_pages=100)
    assert line.startswith("pages 40 of 100 (discovery 38, refresh 2)  4.0/s  about 15s left  ")


def test_the_nearer_bound_wins() -> None:
    assert eta(40, 4.0, 100, time_left=5.0) == 5.0  # --duration ends it first
    assert eta(40, 4.0, 100, time_left=60.0) == 15.0
    assert eta(40, 4.0, None, time_left=60.0) == 60.0
    assert "about 1m00s left" in progress_line(FIGURES, time_left=60.0)


def test_no_eta_before_the_first_page() -> None:
    assert eta(0, 0.0, 100, None) is None
    assert "left" not in progress_line({**FIGURES, "pages": 0.0, "rate": 0.0}, max_pages=100)


@pytest.mark.parametrize(("seconds", "shown"), [(0.4, "0s"), (45, "45s"), (125, "2m05s"),
                                                (3600, "1h00m"), (4021, "1h07m")])
def test_clock(seconds: float, shown: str) -> None:
    assert clock(seconds) == shown
