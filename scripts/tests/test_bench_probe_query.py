"""scripts/benchmarks/bench_probe_query.py at a toy size, so the benchmark cannot rot."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.benchmarks import bench_probe_query as bench
from websift.api.retrieval import SearchRequest, rank_query
from websift.api.settings import Settings
from websift.api.snapshot import SnapshotHolder

pytestmark = pytest.mark.slow  # an index built, then queries and reloads


def test_each_page_is_found_by_its_own_word_and_a_toy_run_prints_every_class(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = bench.build(tmp_path / "p300-s1", 300, 100, 1)
    holder = SnapshotHolder(data, reload_check_ms=60_000)
    try:
        with holder.lease() as snap:
            words = [bench.unique_word(p) for p in (0, 150, 299)]
            found = rank_query(snap, SearchRequest(q=" OR ".join(words), k=30, offset=0),
                               Settings(data=data.root))
        assert found.total == 3  # each word is in exactly one page
    finally:
        holder.close()
    bench.main(["--pages", "300", "--segment-pages", "100", "--probes", "4", "--words", "5",
                "--cold", "2", "--reloads", "2", "--cache", str(tmp_path)])
    out = capsys.readouterr().out
    rows = [line.split("|")[1].strip() for line in out.splitlines()
            if line.startswith("| ") and "---" not in line]
    assert rows[1:] == ["one word, fresh server (2)", "probe: 30 unique words ORed (4)",
                        "one word (5)", "a reload after the probes (the reload's thread) (2)"]
