"""scripts/benchmarks/bench_reload.py at a toy size, so the benchmark cannot rot."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.benchmarks import bench_reload as bench

pytestmark = pytest.mark.slow  # an index staged, then query threads over timed phases


def test_a_toy_run_prints_idle_and_swaps(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    bench.main(["--pages", "300", "--segment-pages", "150", "--cut-pages", "20", "--cuts", "3",
                "--merge-every", "2", "--cut-seconds", "0.1", "--seconds", "0.5", "--rounds",
                "2", "--queries", "20", "--reload-check-ms", "20", "--cache", str(tmp_path)])
    out = capsys.readouterr().out
    rows = {line.split("|")[1].strip(): line for line in out.splitlines()
            if line.startswith("| ") and "---" not in line}
    assert {"idle", "swaps"} <= set(rows)
    assert "reload failures 0" in out
    reloads = int(out.split("reloads ")[1].split(",")[0])
    # the swaps phases published, and the server took them in (the run waits until it has the
    # last generation; a loaded machine may take several cuts in at one swap)
    assert reloads >= 1
