"""The link graph as CSR arrays: one node per URL ID, one edge per distinct (source, target) pair.

Definition (Web Graph Analyzer, section 2): "If there are multiple hyper-links from one Web page
to another, we consider these multiple hyper-links as a single edge ... We also disregard the
hyper-links inside a single Web page.  Therefore, the Web Graph does not have loops."  So
:func:`build_graph` drops self-links and duplicates; nofollow links are left out by the caller
(``StoreReader.link_arrays()`` does that).

Node numbering: the node of a page is its crawl-store URL ID, so arrays index by URL ID with no
translation.  IDs start at 1, so node 0 exists but is not a page: ``present[0]`` is false, it has
no links, the default teleport vector gives it nothing, so its PageRank is exactly 0 and it does
not change anyone else's.  Graphs built from plain edge lists (tests, benchmarks) have every node
present.

Storage: the out-link CSR only (``indptr`` int64 of n+1, ``indices`` int32 of m, targets sorted
within a row): 4 bytes per link plus 8 per node.  The transposed matrix PageRank needs is built
from it on demand (:func:`in_csr`).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from websift.ranking import settings
from websift.ranking.errors import GraphError


@dataclass(frozen=True)
class LinkGraph:
    """Out-link CSR over nodes ``0..n-1``; ``present[i]`` is true when node i is a real page."""

    indptr: np.ndarray  # int64, length n + 1
    indices: np.ndarray  # int32, length m; row i's targets are indices[indptr[i]:indptr[i+1]]
    present: np.ndarray  # bool, length n
    # float64, length m, parallel to ``indices``: link weights (None: every link weighs 1).
    # A weighted graph's walker leaves node i along link i -> j with probability
    # weight / (sum of i's link weights); the host graph (ranking/host_graph.py) is one.
    weights: np.ndarray | None = None

    @property
    def n(self) -> int:
        return len(self.indptr) - 1

    @property
    def num_links(self) -> int:
        return len(self.indices)

    @property
    def num_pages(self) -> int:
        return int(self.present.sum())

    def out_degree(self) -> np.ndarray:
        return np.diff(self.indptr)

    def out_weight(self) -> np.ndarray:
        """Sum of each node's link weights (its out-degree when the graph is unweighted)."""
        if self.weights is None:
            return self.out_degree().astype(np.float64)
        rows = np.repeat(np.arange(self.n, dtype=np.int64), self.out_degree())
        return np.bincount(rows, weights=self.weights, minlength=self.n)

    def in_degree(self) -> np.ndarray:
        return np.bincount(self.indices, minlength=self.n)

    def dangling(self) -> np.ndarray:
        """Definition 3: present pages with no links to other pages of the graph (bool mask)."""
        return (self.out_degree() == 0) & self.present

    def successors(self, node: int) -> np.ndarray:
        return self.indices[self.indptr[node] : self.indptr[node + 1]]

    def nbytes(self) -> int:
        extra = 0 if self.weights is None else self.weights.nbytes
        return int(self.indptr.nbytes + self.indices.nbytes + self.present.nbytes + extra)


def build_graph(
    src: np.ndarray, dst: np.ndarray, n: int, present: np.ndarray | None = None
) -> LinkGraph:
    """CSR from parallel (source, target) arrays over nodes ``0..n-1``: duplicates counted once,
    self-links dropped.  ``present`` defaults to all nodes."""
    src = np.asarray(src)
    dst = np.asarray(dst)
    if src.shape != dst.shape:
        raise GraphError(f"link arrays differ in length: {src.shape} vs {dst.shape}")
    if n < 0 or n >= 2**31:
        raise GraphError(f"node count {n} out of range for 32-bit node IDs")
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
        raise GraphError(f"a link names a node outside 0..{n - 1}")
    keep = src != dst
    # One int64 key per link orders by (source, target); sorted in place, then de-duplicated.
    key = src[keep].astype(np.int64) * n + dst[keep]
    del keep
    key.sort()
    if key.size:
        first = np.empty(key.size, dtype=bool)
        first[0] = True
        np.not_equal(key[1:], key[:-1], out=first[1:])
        key = key[first]
        del first
    rows = (key // n).astype(np.int32) if n else np.zeros(0, np.int32)
    indices = (key % n).astype(np.int32) if n else np.zeros(0, np.int32)
    del key
    counts = np.bincount(rows, minlength=n)
    del rows
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    mask = np.ones(n, dtype=bool) if present is None else np.asarray(present, dtype=bool)
    if mask.shape != (n,):
        raise GraphError(f"present mask has shape {mask.shape}, expected ({n},)")
    return LinkGraph(indptr=indptr, indices=indices, present=mask)


def from_csr_arrays(indptr: np.ndarray, indices: np.ndarray) -> LinkGraph:
    """Wrap existing CSR arrays (already de-duplicated, no self-links) without copying."""
    n = len(indptr) - 1
    return LinkGraph(
        indptr=np.asarray(indptr, dtype=np.int64),
        indices=np.asarray(indices, dtype=np.int32),
        present=np.ones(n, dtype=bool),
    )


def in_csr(graph: LinkGraph, source_weight: np.ndarray | None = None) -> sp.csr_matrix:
    """The transpose as a scipy CSR matrix: row j lists the sources i linking to j.

    The value of entry (j, i) is ``source_weight[i]`` (default 1, as int8).  The pattern is
    transposed by scipy's O(m) counting sort (``tocsc``) carrying 1-byte values, and the weights
    are gathered afterwards, so the peak stays near 4 + 1 + 1 + 4 + 8 bytes per link.  Indices
    stay 32-bit.
    """
    n = graph.n
    indptr = graph.indptr.astype(np.int32) if graph.num_links < 2**31 else graph.indptr
    ones = np.ones(graph.num_links, dtype=np.int8)
    csc = sp.csr_matrix((ones, graph.indices, indptr), shape=(n, n), copy=False).tocsc()
    del ones
    data = csc.data if source_weight is None else gather(np.asarray(source_weight), csc.indices)
    return sp.csr_matrix((data, csc.indices, csc.indptr), shape=(n, n), copy=False)


def gather(values: np.ndarray, index: np.ndarray, threads: int = settings.THREADS) -> np.ndarray:
    """``values[index]``, in ``threads`` slices at once (numpy releases the GIL): the random reads
    of a big gather are latency bound, so two cores halve it.  Taken in chunks of
    ``settings.GATHER_CHUNK``, so the index's conversion to 64 bits costs no memory per link.
    ``index`` must lie in ``0..len(values)-1`` (a CSR's own indices): it is not checked."""
    out = np.empty(index.shape, dtype=values.dtype)
    parts = max(1, min(threads, index.size // settings.LINKS_PER_THREAD))
    cuts = [index.size * k // parts for k in range(parts + 1)]
    step = settings.GATHER_CHUNK

    def take(k: int) -> None:
        for a in range(cuts[k], cuts[k + 1], step):
            b = min(a + step, cuts[k + 1])
            # mode="clip": with the default "raise" numpy buffers the whole output
            np.take(values, index[a:b], out=out[a:b], mode="clip")

    if parts == 1:
        take(0)
        return out
    with ThreadPoolExecutor(max_workers=parts) as pool:
        list(pool.map(take, range(parts)))
    return out


def gather_successors(indptr: np.ndarray, indices: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Concatenated successor lists of ``rows`` (vectorised ragged gather)."""
    rows = np.asarray(rows, dtype=np.int64)
    starts = indptr[rows]
    counts = indptr[rows + 1] - starts
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=indices.dtype)
    # position k of the output reads indices[starts[r] + (k - first_k_of_r)]
    offsets = np.repeat(starts - np.cumsum(counts) + counts, counts)
    return indices[offsets + np.arange(total)]


def subgraph(graph: LinkGraph, keep: np.ndarray) -> tuple[LinkGraph, np.ndarray]:
    """The graph induced by the nodes where ``keep`` is true, renumbered ``0..k-1``.

    Returns ``(sub, ids)`` with ``ids[new] = old``.  Out-degrees are those within the subgraph.
    """
    keep = np.asarray(keep, dtype=bool)
    ids = np.flatnonzero(keep)
    new_id = np.full(graph.n, -1, dtype=np.int64)
    new_id[ids] = np.arange(len(ids))
    src = np.repeat(np.arange(graph.n, dtype=np.int64), graph.out_degree())
    dst = graph.indices
    sel = keep[src] & keep[dst]
    sub = build_graph(new_id[src[sel]], new_id[dst[sel]], len(ids), graph.present[ids])
    if graph.weights is not None:
        # the renumbering keeps the (source, target) order, so the kept links stay in CSR order
        sub = replace(sub, weights=graph.weights[sel])
    return sub, ids
