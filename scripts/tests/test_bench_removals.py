"""scripts/benchmarks/bench_removals.py at a toy size, so the benchmark cannot rot."""

from __future__ import annotations

import pytest

from scripts.benchmarks import bench_removals as bench


def test_a_toy_run_prints_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    bench.main(["--pages", "200", "--repeat", "1"])
    out = capsys.readouterr().out
    assert out.startswith("200 documents")
    for label in ("open the index", "one host rule", "one pattern rule", "copytree",
                  "websift backup"):
        assert label in out
