"""``websift rank --engine dask``: the same generation as the embedded engine, on a real Dask
cluster (a LocalCluster of two worker processes on 127.0.0.1, shared by the module's tests).

Equality is judged against the embedded engine run on a copy of the same data directory (or
on the same link arrays): vectors within 1e-9 in L1, levels, giant SCC and OPIC identical.
Failures are real: a worker process is killed with SIGKILL in the middle of the global
PageRank (from the progress callback, between two steps).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from distributed import Client, LocalCluster
from ranking_crawl import build_crawl

from websift.api.cli import main
from websift.core.datadir import DataDir
from websift.ranking import cluster_pagerank, settings
from websift.ranking.cluster_structure import giant_component, levels
from websift.ranking.dask_engine import DaskEngine, cluster_graph
from websift.ranking.errors import RankingError
from websift.ranking.graph import build_graph, in_csr
from websift.ranking.link_blocks import (
    LinkBlocksError,
    build_block,
    load_block,
    plan_blocks,
    spill_links,
    write_scratch,
)
from websift.ranking.pagerank import Dangling, pagerank, uniform_teleport
from websift.ranking.rank_job import run_rank
from websift.ranking.ranks import Ranks, current_generation
from websift.ranking.structure import levels as embedded_levels
from websift.ranking.structure import strong_components
from websift.ranking.topic_store import TopicSet
from websift.ranking.topics import add_topic

pytestmark = pytest.mark.slow  # a Dask LocalCluster per test

ACCURACY = 1e-9
WAIT = 60.0  # seconds a restarted worker may take to join again


@pytest.fixture(scope="module")
def watcher(cluster: LocalCluster) -> Iterator[Client]:
    """The tests' own client, to watch the workers and kill them."""
    with Client(cluster) as client:
        yield client


@pytest.fixture
def client(watcher: Client) -> Client:
    watcher.wait_for_workers(2, timeout=WAIT)  # a worker killed by an earlier test is back
    return watcher


def engine_for(client: Client, *, blocks_dir: Path | None = None,
               connect_timeout: float = settings.DASK_CONNECT_TIMEOUT) -> DaskEngine:
    return DaskEngine(scheduler=client.scheduler.address, blocks_dir=blocks_dir,
                      connect_timeout=connect_timeout)


def l1(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).sum())


def twin_crawls(root: Path) -> tuple[DataDir, DataDir]:
    """The test crawl with a topic, and a copy of it: one for each engine."""
    data = build_crawl(root / "embedded")
    add_topic(data, TopicSet("python", hosts=("py.example",)))
    add_topic(data, TopicSet("bread", patterns=("bread",)))
    shutil.copytree(root / "embedded", root / "dask")
    return data, DataDir.open(root / "dask")


def assert_same_generation(a: DataDir, b: DataDir) -> None:
    ra, rb = Ranks.open(a), Ranks.open(b)
    assert ra.generation == rb.generation
    assert l1(ra.pagerank, rb.pagerank) <= ACCURACY
    assert abs(rb.pagerank.sum() - 1.0) < 1e-12 and rb.pagerank[0] == 0.0
    np.testing.assert_array_equal(ra.level, rb.level)
    np.testing.assert_array_equal(ra.giant_scc, rb.giant_scc)
    np.testing.assert_array_equal(ra.opic, rb.opic)
    assert ra.topic_names() == rb.topic_names() == ["bread", "python"]
    for name in ra.topic_names():
        assert l1(ra.topic(name), rb.topic(name)) <= ACCURACY
    ma, mb = ra.manifest, rb.manifest
    assert ma["params"] == mb["params"]
    assert ma["stats"].keys() == mb["stats"].keys()
    for key in ("pages", "links", "dangling", "giant_scc", "roots", "removal_rounds",
                "converged"):
        assert ma["stats"][key] == mb["stats"][key], key
    assert abs(ma["stats"]["iterations"] - mb["stats"]["iterations"]) <= 1
    assert {k: set(e) for k, e in ma["topics"].items()} == \
        {k: set(e) for k, e in mb["topics"].items()}
    # the host graph's PageRank, computed in the rank process by both engines
    assert ra.host is not None and rb.host is not None
    np.testing.assert_array_equal(ra.host, rb.host)
    np.testing.assert_array_equal(ra.hostrank, rb.hostrank)


@pytest.mark.parametrize("dangling", ["teleport", "paper1998"])
def test_the_crawl_ranks_equal_the_embedded_engine(
    client: Client, tmp_path: Path, dangling: str
) -> None:
    embedded, dask = twin_crawls(tmp_path)
    report_a = run_rank(embedded, dangling=dangling)
    engine = engine_for(client)
    report_b = run_rank(dask, dangling=dangling, engine=engine)
    assert_same_generation(embedded, dask)
    assert (report_b.pages, report_b.links, report_b.giant_scc, report_b.topics.keys()) == \
        (report_a.pages, report_a.links, report_a.giant_scc, report_a.topics.keys())
    assert report_b.links == 12  # the duplicate link, the self-link and the nofollow one dropped
    run = engine.last_run
    assert run.workers == 2 and run.blocks >= 2
    assert run.block_loads == run.blocks * run.phases
    assert run.directory is not None and not run.directory.exists()  # scratch removed


def web_like(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hosts of 100 pages linking mostly among themselves (slow to mix: extrapolation runs),
    10% of pages with no links, duplicates and self-links, and some IDs that are no page."""
    rng = np.random.default_rng(seed)
    present = rng.random(n) > 0.02
    present[0] = False
    pages = np.flatnonzero(present)
    degree = rng.poisson(8, pages.size)
    degree[rng.random(pages.size) < 0.1] = 0
    src = np.repeat(pages, degree)
    host = src // 100
    local = rng.random(src.size) < 0.97
    dst = np.where(local, host * 100 + rng.integers(0, 100, src.size),
                   rng.choice(pages, src.size))
    dst = np.minimum(dst, n - 1)
    ok = present[dst]
    src, dst = src[ok], dst[ok]
    dup = rng.random(src.size) < 0.05
    src = np.concatenate([src, src[dup], pages[:50]])
    dst = np.concatenate([dst, dst[dup], pages[:50]])  # duplicates and self-links
    return src.astype(np.int32), dst.astype(np.int32), present


def test_a_synthetic_graph_equals_scipy_in_every_computation(
    client: Client, tmp_path: Path
) -> None:
    n = 6000
    src, dst, present = web_like(n, seed=7)
    graph = build_graph(src, dst, n, present)
    half = src.size // 2  # two sources ("shards"), a pair possibly in both
    sources = [(src[:half + 500], dst[:half + 500]), (src[half:], dst[half:])]
    on_cluster = cluster_graph(client, sources, n=n, present=present, links=src.size,
                               directory=tmp_path)
    try:
        # several blocks (DASK_BLOCKS_PER_WORKER a worker): a worker the scheduler lost for a
        # moment on a loaded machine leaves 2, still more than one to combine
        assert len(on_cluster.blocks) >= settings.DASK_BLOCKS_PER_WORKER
        assert on_cluster.num_links == graph.num_links
        np.testing.assert_array_equal(on_cluster.out_degree(), graph.out_degree())

        want = pagerank(graph)
        got = cluster_pagerank.pagerank(on_cluster)
        assert want.iterations > settings.EXTRAPOLATION_START + settings.EXTRAPOLATION_ORDER
        assert l1(want.ranks, got.ranks) <= ACCURACY
        assert got.iterations == want.iterations and got.converged

        want98 = pagerank(graph, dangling=Dangling.PAPER1998)
        got98 = cluster_pagerank.pagerank(on_cluster, dangling=Dangling.PAPER1998)
        assert got98.removal_rounds == want98.removal_rounds >= 1
        assert l1(want98.ranks, got98.ranks) <= ACCURACY

        teleport = np.zeros(n)
        teleport[np.flatnonzero(present)[:300]] = 1.0  # a topic: three hosts
        uniform = uniform_teleport(graph)
        want_topic = pagerank(graph, teleport=teleport, dangling_vector=uniform,
                              start=want.ranks)
        got_topic = cluster_pagerank.pagerank(on_cluster, teleport=teleport,
                                              dangling_vector=uniform, start=want.ranks)
        assert l1(want_topic.ranks, got_topic.ranks) <= ACCURACY

        roots = np.flatnonzero(present)[::997]
        np.testing.assert_array_equal(levels(on_cluster, roots), embedded_levels(graph, roots))
        mask, size = giant_component(on_cluster, got.ranks)
        comps = strong_components(graph)
        assert size == comps.giant_size
        np.testing.assert_array_equal(mask, comps.in_giant() & present)
    finally:
        on_cluster.release()


def pid_holding_blocks(client: Client) -> int:
    """The process ID of a worker that holds loaded link blocks."""
    holders = [w for w, keys in client.has_what().items()
               if any(str(k).startswith("websift-block-") for k in keys)]
    assert holders, "no worker holds a link block"
    pids = client.run(os.getpid)
    return int(pids[holders[0]])


def test_a_worker_killed_mid_run_has_its_blocks_reloaded(client: Client, tmp_path: Path) -> None:
    embedded, dask = twin_crawls(tmp_path)
    run_rank(embedded)
    killed: list[int] = []

    def kill_at_step_5(what: str, k: int, residual: float) -> None:
        if what == "pagerank" and k == 5:
            assert current_generation(dask) == 2  # the topics' generation: nothing written yet
            killed.append(pid_holding_blocks(client))
            os.kill(killed[0], signal.SIGKILL)

    engine = engine_for(client)
    run_rank(dask, engine=engine, progress=kill_at_step_5)
    assert killed and killed[0] not in client.run(os.getpid).values()
    assert engine.last_run.block_loads > engine.last_run.blocks * engine.last_run.phases
    assert_same_generation(embedded, dask)


def test_a_worker_killed_with_its_blocks_gone_fails_and_writes_nothing(
    client: Client, tmp_path: Path
) -> None:
    data = build_crawl(tmp_path / "data")
    run_rank(data)
    before = sorted(p.name for p in data.ranks_dir.iterdir())
    blocks_dir = tmp_path / "blocks"

    def lose_worker_and_files(what: str, k: int, residual: float) -> None:
        if what == "pagerank" and k == 5:
            for path in blocks_dir.glob("*/block-*.npy"):
                path.unlink()
            os.kill(pid_holding_blocks(client), signal.SIGKILL)

    engine = engine_for(client, blocks_dir=blocks_dir)
    with pytest.raises(RankingError) as failure:
        run_rank(data, engine=engine, progress=lose_worker_and_files)
    message = str(failure.value)
    assert "\n" not in message and "link block" in message and "missing" in message
    assert current_generation(data) == 1
    assert sorted(p.name for p in data.ranks_dir.iterdir()) == before
    assert not any(blocks_dir.iterdir())  # the run's scratch directory is gone too


def test_cli_unreachable_scheduler_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = build_crawl(tmp_path / "data")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code = main(["rank", "--data", str(data.root), "--engine", "dask", "--scheduler",
                 f"tcp://127.0.0.1:{port}", "--connect-timeout", "0.5"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "cannot reach the Dask scheduler" in err
    assert current_generation(data) is None
    code = main(["rank", "--data", str(data.root), "--scheduler", f"tcp://127.0.0.1:{port}"])
    assert code == 2 and "need --engine dask" in capsys.readouterr().err


def test_cli_without_a_scheduler_starts_a_local_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = build_crawl(tmp_path / "data")
    gone = subprocess.Popen(["true"])  # a process that has exited: its run's scratch is stale
    gone.wait()
    stale = data.root / "tmp" / f"dask-rank-{socket.gethostname()}-{gone.pid}-x"
    stale.mkdir(parents=True)
    code = main(["rank", "--data", str(data.root), "--engine", "dask", "--workers", "1",
                 "--quiet"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "ranks generation 1: 7 pages, 12 links, giant SCC 6" in out
    assert "dask: 1 workers, the link matrix in 2 blocks" in err
    assert not any((data.root / "tmp").iterdir())  # this run's scratch and the stale one
    by_dask = Ranks.open(data).pagerank
    run_rank(data)  # the embedded engine on the same crawl
    assert l1(Ranks.open(data).pagerank, by_dask) <= ACCURACY


def test_a_cluster_left_without_workers_fails_within_its_patience(
    cluster: LocalCluster, client: Client, tmp_path: Path
) -> None:
    data = build_crawl(tmp_path / "data")

    def lose_every_worker(what: str, k: int, residual: float) -> None:
        if what == "pagerank" and k == 5:
            cluster.scale(0)

    engine = engine_for(client, connect_timeout=1.0)
    try:
        with pytest.raises(RankingError, match="no worker for 1 s"):
            run_rank(data, engine=engine, progress=lose_every_worker)
    finally:
        cluster.scale(2)
    assert current_generation(data) is None


def test_link_blocks_hold_the_transposed_graph_whatever_the_chunks(tmp_path: Path) -> None:
    n = 3000
    src, dst, present = web_like(n, seed=3)
    graph = build_graph(src, dst, n, present)
    sources = [(src[:9000], dst[:9000]), (src[8000:], dst[8000:])]  # 1000 pairs in both
    spill = spill_links(sources, n, buckets=24, directory=tmp_path, chunk=1000)
    assert spill.links == src.size + 1000 and len(list(tmp_path.glob("pairs-*"))) > 24
    built = [build_block(s) for s in plan_blocks(spill, 3, tmp_path)]
    assert [b.lo for b, _ in built] == [0, built[0][0].hi, built[1][0].hi]
    np.testing.assert_array_equal(sum(out for _, out in built), graph.out_degree())
    weights = write_scratch(tmp_path / "w.npy", np.arange(n, dtype=np.float64))
    stacked = sp.vstack([load_block(b, weights) for b, _ in built]).tocsr()
    want = in_csr(graph, np.arange(n, dtype=np.float64))
    assert (stacked != want).nnz == 0

    (tmp_path / "w.npy").write_bytes(b"\x93NUMPY tampered")
    with pytest.raises(LinkBlocksError, match="sha256"):
        load_block(built[0][0], weights)
