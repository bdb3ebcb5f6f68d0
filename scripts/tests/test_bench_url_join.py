"""scripts/benchmarks/bench_url_join.py at a toy size, so the benchmark cannot rot."""

from __future__ import annotations

import pytest

from scripts.benchmarks import bench_url_join as bench


def test_a_toy_run_prints_both_joins(capsys: pytest.CaptureFixture[str]) -> None:
    bench.main(["--urls", "2000", "--shards", "3"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[0] == "2000"
    assert lines[-1].startswith("time_ratio=") and "memory_ratio=" in lines[-1]
