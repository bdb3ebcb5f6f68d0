"""scripts/benchmarks/bench_site_filter.py at a toy size, so the benchmark cannot rot."""

from __future__ import annotations

import pytest

from scripts.benchmarks import bench_site_filter as bench


def test_a_toy_run_prints_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    bench.main(["--pages", "120", "--hosts", "6", "--repeat", "1", "--procs", "1"])
    out = capsys.readouterr().out
    assert "documents in the segment" in out
    for label in ("the host mask", "membership, the segment", "one site: query"):
        assert label in out
