"""The link graph held by a Dask cluster: matrix blocks in the workers, per-page vectors here.

:class:`ClusterGraph` is the Dask engine's :class:`~ranking.graph.LinkGraph`: the same
questions (pages, links, out-degrees, dangling pages) answered from per-page arrays the client
keeps, and four operations that run on the row blocks (:mod:`ranking.link_blocks`) where they
live: ``multiply`` (M x), ``successors``, ``predecessors`` and ``predecessor_counts`` of a set
of pages.  Per call only per-page vectors travel: x through the scheduler to one worker and
from there to every worker holding blocks (8 bytes per page each, not per block), each block's
rows of the answer back; sets as packed bits.  A call costs Dask's round trip (about 20 ms on
two local workers) on top of the work, which matters only for small graphs.

A block is loaded by a task that reads its files (:func:`ranking.link_blocks.load_block`), so
Dask can load it again anywhere: when a worker dies its blocks are recomputed from the files on
the workers left (or on the one its nanny restarts), and the call that needed them waits; the
vector is a task's input, not scattered data, for the same reason.  A cluster left with no
worker at all for ``patience`` seconds fails the call (:class:`ClusterLost`).  Each load is
logged as a scheduler event, so a run can say how many blocks were reloaded.  Blocks are first
placed round-robin on the workers there are, then go wherever Dask puts them.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import dask
import numpy as np
from distributed import Client, Future, get_worker, wait

from websift.ranking import link_blocks, settings
from websift.ranking.errors import GraphError, RankingError
from websift.ranking.link_blocks import ArrayFile, BlockFile


class ClusterLost(RankingError):
    """No worker is left to run the blocks."""


def _hold(vector: np.ndarray) -> np.ndarray:
    return vector


def _load(block: BlockFile, weights: ArrayFile, topic: str) -> Any:
    matrix = link_blocks.load_block(block, weights)
    get_worker().log_event(topic, {"block": block.index})
    return matrix


class ClusterGraph:
    """Row blocks of c P^T loaded on a Dask cluster, with the client's per-page arrays."""

    def __init__(
        self,
        client: Client,
        blocks: Sequence[BlockFile],
        present: np.ndarray,
        out_degree: np.ndarray,
        directory: Path,
        *,
        patience: float = settings.DASK_CONNECT_TIMEOUT,
    ) -> None:
        self._client = client
        self.patience = patience
        self.blocks = list(blocks)
        self.present = present  # bool per node, as LinkGraph.present
        self._out_degree = out_degree
        self._directory = directory
        self._matrices: list[Future[Any]] = []
        self._phase = itertools.count(1)
        self.weights_name: str | None = None
        self.phases = 0  # weight vectors the blocks were loaded with so far
        self.loads_topic = f"websift-block-load-{uuid.uuid4().hex[:12]}"
        starts = [b.lo for b in self.blocks]
        if starts != sorted(starts) or (self.blocks and (starts[0] != 0
                                                         or self.blocks[-1].hi != self.n)):
            raise GraphError("link blocks must cover nodes 0..n-1 in order")

    # ------------------------------------------------------------------ as LinkGraph
    @property
    def n(self) -> int:
        return len(self.present)

    @property
    def num_links(self) -> int:
        return sum(b.links for b in self.blocks)

    @property
    def num_pages(self) -> int:
        return int(self.present.sum())

    def out_degree(self) -> np.ndarray:
        return self._out_degree

    def dangling(self) -> np.ndarray:
        return (self._out_degree == 0) & self.present

    # ------------------------------------------------------------------ the blocks
    def use_weights(self, name: str, weights: Callable[[], np.ndarray]) -> None:
        """Load every block with entry (j, i) = ``weights()[i]``, unless ``name`` is loaded."""
        if name == self.weights_name:
            return
        phase = next(self._phase)
        self.phases = phase
        wfile = link_blocks.write_scratch(self._directory / f"weights-{phase:03d}.npy",
                                          np.asarray(weights(), dtype=np.float64))
        self.release()  # the previous values go first: never two copies of a block's values
        workers = list(self._client.scheduler_info()["workers"])
        self._matrices = [
            self._client.submit(_load, block, wfile, self.loads_topic, pure=False,
                                key=f"websift-block-{block.index}-{phase}-{uuid.uuid4().hex}",
                                workers=[workers[i % len(workers)]] if workers else None,
                                allow_other_workers=True)
            for i, block in enumerate(self.blocks)
        ]
        self._wait(self._matrices)
        for future in self._matrices:
            if future.status == "error":
                future.result()  # raises the worker's error here
        self.weights_name = name

    def release(self) -> None:
        if self._matrices:
            self._client.cancel(self._matrices)
        self._matrices = []
        self.weights_name = None

    def block_loads(self) -> int:
        """Blocks loaded so far (more than blocks x phases: some were reloaded)."""
        return len(self._client.get_events(self.loads_topic))

    def _each(self, kernel: Callable[..., np.ndarray], vector: np.ndarray,
              *, with_lo: bool = False) -> list[np.ndarray]:
        if not self._matrices:
            raise GraphError("no link blocks are loaded (use_weights first)")
        # The vector enters as a task's input, not scattered data: a worker that dies holding
        # it is then no loss (Dask runs the task again); the workers whose blocks need it
        # fetch it once each, however many blocks they hold.
        with dask.config.set({"distributed.admin.large-graph-warning-threshold": "1TB"}):
            shared = self._client.submit(_hold, vector, pure=False,
                                         key=f"websift-vector-{uuid.uuid4().hex}")
        futures = [
            self._client.submit(kernel, m, *((b.lo,) if with_lo else ()), shared, pure=False)
            for m, b in zip(self._matrices, self.blocks, strict=True)
        ]
        try:
            self._wait(futures)
            return list(self._client.gather(futures))
        finally:
            del shared, futures

    def _wait(self, futures: list[Future[Any]]) -> None:
        """Wait for ``futures``; a cluster left without a worker for ``patience`` seconds (a
        remote one whose workers died and were not restarted) fails instead of hanging."""
        while True:
            try:
                wait(futures, timeout=self.patience)
                return
            except TimeoutError:
                if not self._client.nthreads():
                    raise ClusterLost(f"the Dask cluster has had no worker for "
                                      f"{self.patience:g} s; no ranks were written") from None

    def multiply(self, x: np.ndarray) -> np.ndarray:
        """M x (length n)."""
        return np.concatenate(self._each(link_blocks.multiply, x))

    def successors(self, pages: np.ndarray) -> np.ndarray:
        """Pages some page of the mask ``pages`` links to (bool mask)."""
        parts = self._each(link_blocks.successors, np.packbits(pages))
        return np.concatenate([np.unpackbits(p, count=b.hi - b.lo).view(bool)
                               for p, b in zip(parts, self.blocks, strict=True)])

    def predecessors(self, pages: np.ndarray) -> np.ndarray:
        """Pages with a link to some page of the mask ``pages`` (bool mask)."""
        found = np.zeros((self.n + 7) // 8, dtype=np.uint8)
        for part in self._each(link_blocks.predecessors, np.packbits(pages), with_lo=True):
            found |= part
        return np.unpackbits(found, count=self.n).view(bool)

    def predecessor_counts(self, pages: np.ndarray) -> np.ndarray:
        """Per page, its links to pages of the mask ``pages`` (int64)."""
        total = np.zeros(self.n, dtype=np.int64)
        for part in self._each(link_blocks.predecessor_counts, np.packbits(pages), with_lo=True):
            total += part
        return total
