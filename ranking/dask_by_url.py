"""``websift rank --shard A B --engine dask`` over stores that number URLs each their own way
(a partitioned crawl's shards): the by-URL join of :mod:`ranking.rank_by_url` feeding the Dask
engine of :mod:`ranking.dask_engine`.

What runs where:

- Here (the client): the URL join (:mod:`ranking.url_join`, fingerprints sorted in columns),
  then pages, OPIC importance, seeds, topic pages and hosts of every shard over global IDs
  (:func:`ranking.rank_by_url.read_by_url`).  Then each store's links, one store at a time,
  are mapped to global IDs a chunk at a time and spilled into bucket files by global target ID
  (:func:`ranking.link_blocks.spill_links`), so the matrix is cut into blocks of consecutive
  global IDs whichever shard a link came from; the same pass keeps the distinct (source page,
  target host) pairs of links between hosts, from which the host graph is ranked here (small:
  one node per host).
- A shard given as a link export (:mod:`ranking.link_export`): its Parquet link files are
  read on the workers instead, one task per file (:func:`spill_exports`), each mapped to
  global IDs through the shard's URL map and spilled into the same bucket files, its
  cross-host pairs returned to the client.
- On the workers: the blocks, built from the bucket files, and every mat-vec and
  successor/predecessor step of the global PageRank, levels, giant SCC and topic vectors
  (Haveliwala 2002; as :func:`ranking.dask_engine.topic_vector`, started from the global
  vector as the embedded by-URL job does).

The generation is then written to every shard in its own URL IDs by the same code as the
embedded job (:func:`ranking.rank_by_url.write_by_url`), with the union's figures a shard
server needs; each shard's vectors, looked up by URL, equal the embedded engine's (to 1e-9 in
L1).  Failures are as in :mod:`ranking.dask_engine`: nothing is written unless every vector was
computed.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import CancelledError
from contextlib import ExitStack
from pathlib import Path

import numpy as np
from distributed import Client
from distributed.comm.core import CommClosedError
from distributed.scheduler import KilledWorker

from websift.core.datadir import DataDir
from websift.ranking import cluster_pagerank, settings
from websift.ranking.cluster_structure import giant_component, levels
from websift.ranking.dask_engine import (
    ClusterRun,
    DaskEngine,
    DaskRankError,
    _one_line,
    cluster_graph,
    topic_vector,
)
from websift.ranking.host_graph import host_pagerank
from websift.ranking.link_blocks import Spill, merge_spills, write_scratch
from websift.ranking.link_export import (
    ExportLinks,
    ExportReader,
    LinkSource,
    open_sources,
    spill_export_links,
)
from websift.ranking.pagerank import Dangling, PageRankResult, uniform_teleport
from websift.ranking.rank_by_url import (
    ByUrlInputs,
    CrossHostPages,
    GlobalRanks,
    host_graph_of,
    read_by_url,
    write_by_url,
)
from websift.ranking.rank_job import Progress, RankReport, _named


def run_dask_by_url(
    engine: DaskEngine,
    shards: Sequence[DataDir],
    *,
    damping: float,
    tol: float,
    dangling: Dangling | str,
    progress: Progress | None = None,
) -> list[RankReport]:
    """One global generation over ``shards`` matched by URL, the link matrix on ``engine``'s
    cluster; written to each shard in its own IDs; one report per shard."""
    started = time.perf_counter()
    engine.last_run = ClusterRun()
    with ExitStack() as stack:
        stores = open_sources(stack, shards)
        client = stack.enter_context(engine.connect())
        directory = engine._scratch(shards[0])
        stack.callback(shutil.rmtree, directory, ignore_errors=True)
        engine.last_run.directory = directory
        try:
            inputs = read_by_url(stores, shards)
            cross = CrossHostPages(inputs.host_of)

            def links() -> Iterator[tuple[np.ndarray, np.ndarray]]:
                """Each store's links in global IDs, a spill chunk at a time (a link
                export's are read by the workers: :func:`spill_exports`)."""
                for store, m in zip(stores, inputs.maps, strict=True):
                    if isinstance(store, ExportReader):
                        continue
                    src, dst = store.link_arrays(include_nofollow=False)
                    for a in range(0, src.size, settings.DASK_PAIR_CHUNK):
                        b = a + settings.DASK_PAIR_CHUNK
                        gsrc, gdst = m[src[a:b]], m[dst[a:b]]
                        cross.add(gsrc, gdst)
                        yield gsrc, gdst
                    del src, dst

            graph = cluster_graph(client, links(), n=inputs.n, present=inputs.present,
                                  links=sum(s.link_count() for s in stores),
                                  directory=directory, patience=engine.connect_timeout,
                                  spilled=lambda bounds: spill_exports(
                                      client, stores, inputs, cross=cross, bounds=bounds,
                                      directory=directory))
            stack.callback(graph.release)
            engine.last_run.workers = len(client.scheduler_info()["workers"])
            engine.last_run.blocks = len(graph.blocks)
            for store in stores:  # the links are on disk now
                store.close()
            result = cluster_pagerank.pagerank(graph, damping=damping, tol=tol,
                                               dangling=dangling,
                                               progress=_named(progress, "pagerank"))
            level = levels(graph, inputs.roots)
            giant, giant_size = giant_component(graph, result.ranks)
            uniform = uniform_teleport(graph)
            vectors: dict[str, tuple[np.ndarray, PageRankResult]] = {
                name: (pages, topic_vector(graph, pages, uniform, damping=damping, tol=tol,
                                           start=result.ranks))
                for name, pages in inputs.topic_pages.items() if pages.size}
            engine.last_run.block_loads = graph.block_loads()
            engine.last_run.phases = graph.phases
        except (KilledWorker, CancelledError, CommClosedError) as exc:
            raise DaskRankError(f"the Dask cluster failed mid-run ({type(exc).__name__}: "
                                f"{_one_line(exc)}); no ranks were written") from None
    hosts = host_graph_of(inputs, cross.edges())
    host_result = host_pagerank(hosts, damping=damping, tol=tol, dangling=dangling,
                                progress=_named(progress, "host pagerank"))
    ranks = GlobalRanks(graph=graph, result=result, level=level, giant=giant & graph.present,
                        giant_size=giant_size, vectors=vectors, hosts=hosts,
                        host_result=host_result)
    return write_by_url(shards, inputs, ranks, damping=damping, tol=tol, dangling=dangling,
                        started=started)


def spill_exports(client: Client, stores: Sequence[LinkSource], inputs: ByUrlInputs, *,
                  cross: CrossHostPages, bounds: np.ndarray, directory: Path) -> Spill:
    """Every link export's link files read and spilled by the workers, one task per file."""
    host_of = write_scratch(directory / "export-host-of.npy", inputs.host_of)
    tasks = []
    for k, (store, m) in enumerate(zip(stores, inputs.maps, strict=True)):
        if not isinstance(store, ExportReader):
            continue
        gmap = write_scratch(directory / f"export-map-{k:03d}.npy", m)
        owners = write_scratch(directory / f"export-owners-{k:03d}.npy", store.owners())
        tasks += [ExportLinks(str(path.resolve()), sha, slot, owners, gmap, host_of,
                              cross.hosts, bounds, str(directory), f"pairs-x{k:03d}-{f:05d}")
                  for f, (path, sha, slot) in enumerate(store.link_files())]
    done = client.gather([client.submit(spill_export_links, t, pure=False) for t in tasks])
    cross.parts.extend(keys for _, keys in done)
    empty = Spill(n=int(bounds[-1]), bounds=bounds, files=[[] for _ in range(bounds.size - 1)],
                  counts=np.zeros(bounds.size - 1, dtype=np.int64))
    return merge_spills([empty, *(spill for spill, _ in done)])
