"""websift rank's output: computed from the real crawl store, versioned, checksummed, atomic."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ranking_crawl import COOK, PY

from websift.core.datadir import DataDir
from websift.ranking.errors import RanksCorrupt, RanksMissing, UnknownTopic
from websift.ranking.rank_job import run_rank
from websift.ranking.ranks import Ranks, current_generation
from websift.ranking.ranks_format import MANIFEST
from websift.ranking.store_graph import load_graph
from websift.store.views import StoreReader


def test_graph_from_the_store_follows_the_definition(crawl: DataDir) -> None:
    with StoreReader.open(crawl.store_path) as store:
        graph = load_graph(store)
        py, cook = store.url_id(PY), store.url_id(COOK)
        n = store.max_url_id() + 1
    assert graph.n == n and not graph.present[0] and graph.present[1:].all()
    succ = graph.successors(py).tolist()
    assert py not in succ  # self-link dropped
    assert len(succ) == len(set(succ)) == 3  # duplicate counted once
    assert py not in graph.successors(cook).tolist()  # nofollow left out


def test_rank_writes_a_generation_the_reader_opens(crawl: DataDir) -> None:
    assert current_generation(crawl) is None
    with pytest.raises(RanksMissing):
        Ranks.open(crawl)
    steps: list[tuple[str, int, float]] = []
    report = run_rank(crawl, progress=lambda w, k, r: steps.append((w, k, r)))
    assert report.result.converged and steps and steps[-1][2] <= 1e-10
    ranks = Ranks.open(crawl)
    assert ranks.generation == report.generation == current_generation(crawl) == 1
    with StoreReader.open(crawl.store_path) as store:
        n = store.max_url_id() + 1
        py, missing = store.url_id(PY), store.url_id(PY + "missing")
        expected_opic = store.page(py).importance  # type: ignore[union-attr]
    assert ranks.pagerank.shape == ranks.opic.shape == (n,)
    assert ranks.pagerank.dtype == np.float64 and abs(ranks.pagerank.sum() - 1) < 1e-12
    assert ranks.pagerank[0] == 0.0
    assert ranks.opic[py] == expected_opic
    assert ranks.level[py] == 0 and ranks.level[missing] == 2
    assert ranks.giant_scc[py] and not ranks.giant_scc[missing]
    assert ranks.topic_names() == []
    with pytest.raises(UnknownTopic):
        ranks.topic("nope")
    run_rank(crawl, dangling="paper1998")
    assert current_generation(crawl) == 2
    assert Ranks.open(crawl).manifest["params"]["dangling"] == "paper1998"


def test_old_generations_are_cleaned_but_the_previous_kept(crawl: DataDir) -> None:
    for _ in range(3):
        run_rank(crawl)
    files = sorted(p.name for p in crawl.ranks_dir.glob("pagerank-*.npy"))
    assert files == ["pagerank-000002.npy", "pagerank-000003.npy"]


def test_corrupt_files_are_refused(crawl: DataDir) -> None:
    run_rank(crawl)
    manifest = json.loads((crawl.ranks_dir / MANIFEST).read_text())
    path = crawl.ranks_dir / manifest["arrays"]["pagerank"]["file"]
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(RanksCorrupt, match="sha256"):
        Ranks.open(crawl)
    (crawl.ranks_dir / MANIFEST).write_text("{not json")
    with pytest.raises(RanksCorrupt, match="JSON"):
        Ranks.open(crawl)
    manifest["version"] = 99
    (crawl.ranks_dir / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(RanksCorrupt, match="version 99"):
        Ranks.open(crawl)


def test_page_graph_info_with_and_without_ranks(crawl: DataDir) -> None:
    from websift.ranking.errors import GraphError
    from websift.ranking.graph_report import page_graph_info

    with StoreReader.open(crawl.store_path) as store:
        py = store.url_id(PY) or 0
    before = page_graph_info(crawl, py)
    assert before["pagerank"] is None and before["ranks_generation"] is None
    # every link shown (with its anchor) except the self-link; duplicates count once in degrees
    assert before["out_degree"] == 3 and len(before["out_links"]) == 4
    assert before["self_links"] == 1
    run_rank(crawl)
    ranks = Ranks.open(crawl)
    after = page_graph_info(crawl, py, ranks=ranks, max_links=2)
    assert after["pagerank"] == ranks.pagerank[py] and after["level"] == 0
    assert after["in_giant_scc"] is True and len(after["out_links"]) == 2
    with pytest.raises(GraphError, match="no page"):
        page_graph_info(crawl, 10_000)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=40))
def test_a_generation_written_is_read_back_identically(values: list[float]) -> None:
    import tempfile
    from pathlib import Path

    from websift.ranking.ranks_format import load_array, read_manifest
    from websift.ranking.ranks_writer import write_generation, write_lock

    n = len(values)
    arrays = {
        "pagerank": np.asarray(values, dtype=np.float64),
        "opic": np.asarray(values[::-1], dtype=np.float64),
        "level": np.arange(n, dtype=np.int32) - 1,
        "giant_scc": np.asarray(values, dtype=np.float64) > 0.5,
    }
    with tempfile.TemporaryDirectory() as tmp:
        ranks_dir = Path(tmp)
        with write_lock(ranks_dir):
            gen = write_generation(ranks_dir, None, arrays,
                                   {"t": (arrays["opic"], {"pages": 1})})
        manifest = read_manifest(ranks_dir)
        assert gen == manifest["generation"] == 1 and manifest["node_count"] == n
        for name, array in arrays.items():
            np.testing.assert_array_equal(load_array(ranks_dir, manifest["arrays"][name], name),
                                          array)
        np.testing.assert_array_equal(load_array(ranks_dir, manifest["topics"]["t"], "t"),
                                      arrays["opic"])
