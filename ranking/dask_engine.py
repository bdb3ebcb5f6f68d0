"""``websift rank --engine dask``: the rank job with the link matrix on a Dask cluster.

What runs where:

- Here (the client): the crawl store shards are read one at a time (URL IDs, OPIC importance,
  seeds, topic pages, then the links, which :func:`ranking.link_blocks.spill_links` sorts into
  bucket files chunk by chunk); then per-page vectors only: the rank iterate and the O(n) work
  of each step, levels, SCC masks, out-degrees, and the new generation, written by
  :func:`ranking.rank_job.write_ranks` as the embedded engine writes it (a server cannot tell
  which engine wrote it).  The host graph's PageRank too (:mod:`ranking.host_graph`: one
  node per host, small), embedded, from the stores' host view.
- On the workers: the blocks are built from the bucket files (duplicates and self-links
  dropped, one task per block, in parallel), loaded into memory, and every mat-vec, successor
  and predecessor step runs there (:mod:`ranking.cluster_graph`).  The matrix is never gathered.

Without a scheduler address a ``LocalCluster`` is started: worker processes on 127.0.0.1, one
thread each, no dashboard.  The scratch files live in ``DATA/tmp/`` (or ``blocks_dir``, which
must be on a file system every worker sees at the same path) and are deleted after the run;
one left by a killed run on this host is swept by the next.

Security: Dask moves pickled tasks, so whoever can talk to the scheduler runs code on every
worker.  A scheduler on another machine is reached only over TLS with certificates
(``tls://HOST:8786`` and :class:`DaskTLS`, Dask's ``distributed.Security`` with encryption
required); a ``tcp://`` address is accepted on loopback only (the local cluster, or an SSH
tunnel).

Failures: a scheduler that cannot be reached, or too few workers joining, fails before any
link is read.  A worker that dies mid-run has its blocks reloaded from the files by Dask;
anything Dask cannot recover (the files gone, every worker lost, the scheduler gone) fails the
run with one :class:`DaskRankError` line.  The generation is written only once every vector is
computed, so a failed run leaves the previous generation current and untouched.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import operator
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import CancelledError
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from distributed import Client, Future, LocalCluster, Security
from distributed.comm.core import CommClosedError
from distributed.scheduler import KilledWorker

from websift.core.datadir import DataDir
from websift.ranking import cluster_pagerank, settings
from websift.ranking.cluster_graph import ClusterGraph
from websift.ranking.cluster_structure import giant_component, levels
from websift.ranking.errors import RankingError
from websift.ranking.host_graph import host_ranks
from websift.ranking.link_blocks import (
    BlockFile,
    Spill,
    build_block,
    merge_spills,
    plan_blocks,
    spill_links,
)
from websift.ranking.pagerank import Dangling, PageRankResult, uniform_teleport
from websift.ranking.rank_job import (
    Progress,
    RankReport,
    check_shared_frontier,
    topic_teleport,
    write_ranks,
)
from websift.ranking.ranks_writer import HostRanks
from websift.ranking.store_graph import topic_page_ids
from websift.ranking.topic_store import TopicRecord, load_topic, topic_names
from websift.store.views import StoreReader

RUN_PREFIX = "dask-rank-"


class DaskRankError(RankingError):
    """The Dask cluster could not be reached or failed in a way it could not recover from."""


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


@dataclass
class ClusterRun:
    """What the last run did on the cluster (for the command line and the tests)."""

    workers: int = 0
    blocks: int = 0
    block_loads: int = 0  # more than blocks x weight phases: blocks reloaded after a loss
    phases: int = 0  # weight phases the blocks were loaded for (paper1998: core, then all)
    directory: Path | None = None

    def summary(self) -> str:
        reloaded = self.block_loads - self.blocks * self.phases
        again = f", {reloaded} reloaded after a lost worker" if reloaded > 0 else ""
        return (f"dask: {self.workers} workers, the link matrix in {self.blocks} blocks "
                f"({self.block_loads} block loads{again})")


@dataclass
class ShardInputs:
    """Everything but the links, joined over the shards (URL IDs are global)."""

    n: int
    present: np.ndarray
    opic: np.ndarray
    roots: np.ndarray
    topic_pages: dict[str, np.ndarray] = field(default_factory=dict)
    hosts: HostRanks | None = None  # the host graph's ranks, computed in this process


@dataclass(frozen=True)
class DaskTLS:
    """The certificates of a TLS Dask cluster (``--dask-tls-ca/--dask-tls-cert/--dask-tls-key``):
    the CA that signed the scheduler's and workers' certificates, and this client's own."""

    ca_file: Path
    cert_file: Path
    key_file: Path

    def security(self) -> Security:
        for path in (self.ca_file, self.cert_file, self.key_file):
            if not path.is_file():
                raise DaskRankError(f"Dask TLS: no file {path}")
        return Security(tls_ca_file=str(self.ca_file), tls_client_cert=str(self.cert_file),
                        tls_client_key=str(self.key_file), require_encryption=True)


def check_scheduler(address: str, tls: DaskTLS | None) -> None:
    """Refuse a scheduler address that would let the network run code here: ``tls://`` needs
    certificates, and anything else must be a loopback address."""
    scheme, _, rest = address.partition("://")
    if not rest:
        scheme, rest = "tcp", address
    host = rest.rsplit(":", 1)[0].strip("[]")
    if scheme == "tls":
        if tls is None:
            raise DaskRankError(f"--scheduler {address}: a tls:// scheduler needs "
                                "--dask-tls-ca, --dask-tls-cert and --dask-tls-key")
        return
    if tls is not None:
        raise DaskRankError(f"--scheduler {address}: with --dask-tls-* give a tls:// address")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise DaskRankError(f"--scheduler {address}: Dask runs pickled tasks, so a scheduler on "
                            "another machine must be tls:// with --dask-tls-* certificates "
                            "(or reached through an SSH tunnel on 127.0.0.1)")


@dataclass
class DaskEngine:
    """``run_rank``'s engine for a Dask cluster (``scheduler`` address, or a LocalCluster of
    ``workers`` processes); ``stores`` are the crawl store shards (default: DATA's store)."""

    scheduler: str | None = None
    workers: int | None = None  # LocalCluster: its processes (default 2); scheduler: wait for
    connect_timeout: float = settings.DASK_CONNECT_TIMEOUT
    tls: DaskTLS | None = None  # with a tls:// scheduler
    blocks_dir: Path | None = None
    stores: Sequence[Path] | None = None
    last_run: ClusterRun = field(default_factory=ClusterRun)

    # ------------------------------------------------------------------ the cluster
    @contextmanager
    def connect(self) -> Iterator[Client]:
        """A client of the scheduler (or of a new LocalCluster), with its workers there."""
        with ExitStack() as stack:
            if self.scheduler is None:
                cluster = stack.enter_context(
                    local_cluster(self.workers or settings.DASK_LOCAL_WORKERS))
                client = stack.enter_context(Client(cluster))
            else:
                check_scheduler(self.scheduler, self.tls)
                security = self.tls.security() if self.tls is not None else None
                try:
                    client = stack.enter_context(
                        Client(self.scheduler, timeout=self.connect_timeout,
                               security=security))
                except OSError as exc:  # the connect timeout is a TimeoutError, an OSError
                    raise DaskRankError(f"cannot reach the Dask scheduler at {self.scheduler}: "
                                        f"{_one_line(exc)}") from None
                wanted = self.workers or 1
                try:
                    client.wait_for_workers(wanted, timeout=self.connect_timeout)
                except TimeoutError:
                    have = len(client.scheduler_info()["workers"])
                    raise DaskRankError(
                        f"the Dask scheduler at {self.scheduler} has {have} workers; waited "
                        f"{self.connect_timeout:g} s for {wanted}") from None
            yield client

    def _scratch(self, data: DataDir) -> Path:
        # absolute: the workers may run elsewhere, in another working directory
        root = (self.blocks_dir if self.blocks_dir is not None else data.root / "tmp").resolve()
        root.mkdir(parents=True, exist_ok=True)
        host = socket.gethostname()
        for old in root.glob(f"{RUN_PREFIX}{host}-*"):
            pid = old.name[len(RUN_PREFIX) + len(host) + 1:].split("-")[0]
            if pid.isdigit() and not _alive(int(pid)):
                shutil.rmtree(old, ignore_errors=True)  # a killed run's leftovers
        return Path(tempfile.mkdtemp(prefix=f"{RUN_PREFIX}{host}-{os.getpid()}-", dir=root))

    # ------------------------------------------------------------------ the job
    def run(
        self,
        data: DataDir,
        *,
        damping: float,
        tol: float,
        dangling: Dangling | str,
        progress: Progress | None = None,
    ) -> RankReport:
        paths = list(self.stores) if self.stores else [data.store_path]
        return self._run(paths, [data], damping=damping, tol=tol, dangling=dangling,
                         progress=progress)[0]

    def run_shards(
        self,
        shards: Sequence[DataDir],
        *,
        damping: float,
        tol: float,
        dangling: Dangling | str,
        progress: Progress | None = None,
    ) -> list[RankReport]:
        """``rank --engine dask --shard A B C``: one global generation over the shards' stores
        (URL IDs from one shared frontier), the same vectors written into every shard's ranks
        directory, as :func:`ranking.rank_job.run_rank_shards` does embedded.  Topics are
        read from the first shard; the scratch blocks live under the first shard's ``tmp/``."""
        if not shards:
            raise RankingError("rank --shard needs at least one data directory")
        return self._run([d.store_path for d in shards], list(shards), damping=damping,
                         tol=tol, dangling=dangling, progress=progress, shared_frontier=True)

    def run_by_url(
        self,
        shards: Sequence[DataDir],
        *,
        damping: float,
        tol: float,
        dangling: Dangling | str,
        progress: Progress | None = None,
    ) -> list[RankReport]:
        """``rank --engine dask --shard A B C`` over shards that number URLs each their own way
        (a partitioned crawl's): joined by URL, as :func:`ranking.rank_by_url.run_rank_by_url`
        does embedded (:mod:`ranking.dask_by_url`)."""
        if not shards:
            raise RankingError("rank --shard needs at least one data directory")
        from websift.ranking.dask_by_url import run_dask_by_url

        return run_dask_by_url(self, shards, damping=damping, tol=tol, dangling=dangling,
                               progress=progress)

    def _run(
        self,
        paths: list[Path],
        targets: list[DataDir],
        *,
        damping: float,
        tol: float,
        dangling: Dangling | str,
        progress: Progress | None,
        shared_frontier: bool = False,
    ) -> list[RankReport]:
        started = time.perf_counter()
        self.last_run = ClusterRun()
        data = targets[0]
        names = topic_names(data.topics_dir)
        records = {name: load_topic(data.topics_dir, name) for name in names}
        with ExitStack() as stack:
            stores = [stack.enter_context(StoreReader.open(p)) for p in paths]
            for store in stores:  # a crawl may be committing: read each store as of one state
                stack.enter_context(store.snapshot())
            if shared_frontier:
                check_shared_frontier(stores)  # before the cluster starts
            client = stack.enter_context(self.connect())
            directory = self._scratch(data)
            stack.callback(shutil.rmtree, directory, ignore_errors=True)
            self.last_run.directory = directory
            try:
                inputs = read_shards(stores, records)
                # the host graph is small: ranked here, not on the cluster (ranking/host_graph.py)
                inputs.hosts = host_ranks(stores, inputs.n, damping=damping, tol=tol,
                                          dangling=dangling)
                graph = self._load_graph(client, stores, inputs, directory)
                stack.callback(graph.release)
                for store in stores:  # the links are on disk now
                    store.close()
                computed = compute(graph, inputs, targets, damping=damping, tol=tol,
                                   dangling=dangling, records=records, progress=progress,
                                   run=self.last_run)
            except (KilledWorker, CancelledError, CommClosedError) as exc:
                raise DaskRankError(f"the Dask cluster failed mid-run ({type(exc).__name__}: "
                                    f"{_one_line(exc)}); no ranks were written") from None
        for report in computed:
            report.seconds = time.perf_counter() - started
        return computed

    def _load_graph(self, client: Client, stores: Sequence[StoreReader], inputs: ShardInputs,
                    directory: Path) -> ClusterGraph:
        graph = cluster_graph(
            client, (s.link_arrays(include_nofollow=False) for s in stores), n=inputs.n,
            present=inputs.present, links=sum(s.link_count() for s in stores),
            directory=directory, patience=self.connect_timeout)
        self.last_run.workers = len(client.scheduler_info()["workers"])
        self.last_run.blocks = len(graph.blocks)
        return graph


def local_cluster(workers: int) -> LocalCluster:
    """``workers`` processes of one thread on 127.0.0.1; no dashboard (the scheduler's own
    HTTP server, health checks only, on a free loopback port); Dask's logs only for errors."""
    return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                        host="127.0.0.1", dashboard_address="127.0.0.1:0",
                        scheduler_kwargs={"dashboard": False}, silence_logs=logging.ERROR)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_shards(stores: Sequence[StoreReader], records: dict[str, TopicRecord]) -> ShardInputs:
    """Pages, OPIC importance, seeds and topic pages of every shard, over global URL IDs (a URL
    several shards know gets the largest importance any of them holds)."""
    n = max(s.max_url_id() for s in stores) + 1
    inputs = ShardInputs(n=n, present=np.zeros(n, dtype=bool), opic=np.zeros(n),
                         roots=np.zeros(0, dtype=np.int64))
    for store in stores:
        inputs.present[store.url_ids()] = True
        np.maximum(inputs.opic, store.importance_by_id(n), out=inputs.opic)
        inputs.roots = np.union1d(inputs.roots, store.ids_at_depth(0))
        for name, rec in records.items():
            found = topic_page_ids(store, rec.topic)
            inputs.topic_pages[name] = np.union1d(
                inputs.topic_pages.get(name, np.zeros(0, dtype=np.int64)), found)
    return inputs


def cluster_graph(
    client: Client,
    sources: Iterable[tuple[np.ndarray, np.ndarray]],
    *,
    n: int,
    present: np.ndarray,
    links: int,
    directory: Path,
    patience: float = settings.DASK_CONNECT_TIMEOUT,
    spilled: Callable[[np.ndarray], Spill] | None = None,
) -> ClusterGraph:
    """The links of ``sources`` (one (src, dst) pair of arrays each, about ``links`` in all)
    as blocks on the cluster: spilled into ``directory``, built by the workers, not loaded.
    ``spilled(bounds)``: more links, spilled elsewhere (on the workers) into the same buckets."""
    workers = max(1, len(client.scheduler_info()["workers"]))
    blocks = max(workers * settings.DASK_BLOCKS_PER_WORKER,
                 math.ceil(links / settings.DASK_BLOCK_LINKS))
    spill = spill_links(sources, n, blocks * settings.DASK_BUCKETS_PER_BLOCK, directory)
    if spilled is not None:
        spill = merge_spills([spill, spilled(spill.bounds)])
    files, out_degree = build_blocks(client, plan_blocks(spill, blocks, directory))
    for pairs in directory.glob("pairs-*.npy"):
        pairs.unlink()
    return ClusterGraph(client, files, present, out_degree, directory, patience=patience)


def build_blocks(client: Client, sources: Sequence[Any]) -> tuple[list[BlockFile], np.ndarray]:
    """Build every block on the workers; the out-degrees are summed there, pairwise."""
    built = [client.submit(build_block, s, pure=False) for s in sources]
    files: list[BlockFile] = client.gather([client.submit(operator.itemgetter(0), f)
                                            for f in built])
    counts: list[Future[Any]] = [client.submit(operator.itemgetter(1), f) for f in built]
    del built
    while len(counts) > 1:
        pairs = [counts[i : i + 2] for i in range(0, len(counts), 2)]
        counts = [client.submit(np.add, *p) if len(p) == 2 else p[0] for p in pairs]
    out_degree = np.asarray(counts[0].result(), dtype=np.int64)
    return files, out_degree


def compute(
    graph: ClusterGraph,
    inputs: ShardInputs,
    targets: Sequence[DataDir],
    *,
    damping: float,
    tol: float,
    dangling: Dangling | str,
    records: dict[str, TopicRecord],
    progress: Progress | None,
    run: ClusterRun,
) -> list[RankReport]:
    """Every vector of a generation on ``graph``, then the generation in each of ``targets``
    (as run_rank does, with :func:`ranking.rank_job.write_ranks`; a target's topic vectors are
    warm-started from its own current generation, as embedded).
    The cluster is done with before the first file is written."""

    def global_progress(k: int, r: float) -> None:
        if progress is not None:
            progress("pagerank", k, r)

    result = cluster_pagerank.pagerank(graph, damping=damping, tol=tol, dangling=dangling,
                                       progress=global_progress)
    lv = levels(graph, inputs.roots)
    giant, giant_size = giant_component(graph, result.ranks)
    uniform = uniform_teleport(graph)

    def vector(pages: np.ndarray, start: np.ndarray) -> PageRankResult:
        return topic_vector(graph, pages, uniform, damping=damping, tol=tol, start=start)

    def count_loads() -> None:  # the cluster's last use: the files come next
        run.block_loads = graph.block_loads()
        run.phases = graph.phases

    return [write_ranks(
        data, graph, result, damping=damping, tol=tol, dangling=dangling,
        opic=inputs.opic, level=lv, giant=giant, giant_size=giant_size,
        roots=int(inputs.roots.size), topic_pages=inputs.topic_pages, records=records,
        topic_vector=vector, before_write=count_loads, hosts=inputs.hosts)
        for data in targets]


def topic_vector(graph: ClusterGraph, pages: np.ndarray, uniform: np.ndarray, *,
                 damping: float, tol: float, start: np.ndarray | None) -> PageRankResult:
    """p_k as :func:`ranking.rank_job.topic_vector`: teleport uniform over ``pages``, dangling
    rank to the uniform vector over all pages."""
    return cluster_pagerank.pagerank(graph, damping=damping,
                                     teleport=topic_teleport(graph.n, pages), tol=tol,
                                     dangling=Dangling.TELEPORT, dangling_vector=uniform,
                                     start=start)
