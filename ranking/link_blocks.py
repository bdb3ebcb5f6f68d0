"""The link matrix in row blocks on disk, and what one block computes: the Dask engine's format.

The matrix is c P^T of :mod:`ranking.pagerank` (row j lists the pages i linking to j, with the
value c / out(i)), cut into blocks of consecutive rows ``lo..hi-1`` so that no machine needs
more than its blocks.  It is written in two steps, from one or several link sources (crawl
store shards whose URL IDs are global, or arrays):

1. :func:`spill_links` (where the links are read): each chunk of (source, target) pairs is
   sorted by the *bucket* of its target, a fixed range of node IDs, and written as one
   ``pairs-<source>-<chunk>-<bucket>.npy`` array of shape (2, k) per bucket.  Only a chunk is
   ever sorted in memory; the files say how many links each bucket got, from which
   :func:`plan_blocks` cuts consecutive buckets into blocks of about equal link counts.
2. :func:`build_block` (on a worker, one task per block, in parallel): read the block's
   buckets, drop self-links and duplicates (a pair lies in exactly one block, so this is the
   global rule of :func:`ranking.graph.build_graph`), and write the block's pattern as
   ``block-<b>-indptr.npy`` (int64, hi - lo + 1) and ``block-<b>-indices.npy`` (int32, its
   links' sources, sorted within a row), plus return its links per source (the out-degrees,
   summed over blocks by the caller).

A block is then loaded (:func:`load_block`) by whichever worker runs it, with the transition
weights of the current phase read from ``weights-<phase>.npy``: every file is named in the
caller's :class:`ArrayFile` with its sha256, checked on every read, so a worker that reads a
half-written or foreign file fails instead of computing with it.  The files are scratch, not
kept: they are rebuilt by every run and deleted after it, so they are not fsynced.  Paths are
absolute: a worker on another machine must see the directory at the same path.

The block kernels (:func:`multiply`, :func:`successors`, :func:`predecessors`,
:func:`predecessor_counts`) are pure functions of one loaded block and a vector; frontiers
travel as packed bits (n / 8 bytes), rank vectors as float64.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from websift.core import checked
from websift.core.errors import CheckedFileCorrupt, CheckedFileMissing
from websift.ranking import settings
from websift.ranking.errors import GraphError, RankingError


class LinkBlocksError(RankingError):
    """A link block file a worker needs is missing, damaged, or not visible to it."""


@dataclass(frozen=True)
class ArrayFile:
    """One scratch ``.npy`` file and the sha256 of its bytes."""

    path: str
    sha256: str

    def read(self, what: str) -> np.ndarray:
        try:
            return checked.read_array(Path(self.path), self.sha256, what)
        except CheckedFileMissing as exc:
            raise LinkBlocksError(
                f"{exc}: every Dask worker must see the link blocks at this path "
                "(put --blocks-dir on a file system all of them mount)") from None
        except CheckedFileCorrupt as exc:  # a plain one-line error survives the trip home
            raise LinkBlocksError(str(exc)) from None


def write_scratch(path: Path, array: np.ndarray) -> ArrayFile:
    """Write ``array`` as ``.npy`` (no fsync: scratch, rebuilt by the next run)."""
    raw = checked.array_bytes(array)
    path.write_bytes(raw)
    return ArrayFile(str(path), checked.sha256_hex(raw))


@dataclass(frozen=True)
class Spill:
    """The links sorted into buckets of target IDs: bucket k holds targets in
    ``bounds[k]..bounds[k+1]-1``, in the files ``files[k]`` (``counts[k]`` pairs in all)."""

    n: int
    bounds: np.ndarray  # int64, buckets + 1
    files: list[list[ArrayFile]]
    counts: np.ndarray  # int64 per bucket, duplicates and self-links included

    @property
    def links(self) -> int:
        return int(self.counts.sum())


@dataclass(frozen=True)
class BlockSource:
    """What a worker reads to build block ``index``: its rows and the pair files of its buckets."""

    index: int
    lo: int
    hi: int
    n: int
    pairs: tuple[ArrayFile, ...]
    directory: str


@dataclass(frozen=True)
class BlockFile:
    """One built block: rows ``lo..hi-1`` of the matrix, ``links`` distinct links."""

    index: int
    lo: int
    hi: int
    n: int
    links: int
    indptr: ArrayFile
    indices: ArrayFile


def bucket_bounds(n: int, buckets: int) -> np.ndarray:
    buckets = max(1, min(buckets, n))
    return (np.arange(buckets + 1, dtype=np.int64) * n) // buckets


def spill_links(
    sources: Iterable[tuple[np.ndarray, np.ndarray]],
    n: int,
    buckets: int,
    directory: Path,
    chunk: int = settings.DASK_PAIR_CHUNK,
) -> Spill:
    """Write every (src, dst) pair of ``sources`` (parallel int arrays, one per source) into
    bucket files under ``directory``.  Raises GraphError for a link outside ``0..n-1``."""
    if n < 1 or n >= 2**31:
        raise GraphError(f"node count {n} out of range for 32-bit node IDs")
    bounds = bucket_bounds(n, buckets)
    spills = [Spill(n=n, bounds=bounds, files=[[] for _ in range(len(bounds) - 1)],
                    counts=np.zeros(len(bounds) - 1, dtype=np.int64))]
    for s, (src, dst) in enumerate(sources):
        spills.append(spill_chunks(src, dst, n=n, bounds=bounds, directory=directory,
                                   name=f"pairs-{s:03d}", chunk=chunk))
        del src, dst  # before the next source's links are read
    return merge_spills(spills)


def _spill_chunk(src: np.ndarray, dst: np.ndarray, *, n: int, bounds: np.ndarray,
                 directory: Path, name: str, files: list[list[ArrayFile]]) -> np.ndarray:
    """One chunk of links into its buckets' files; returns the links per bucket."""
    if min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n:
        raise GraphError(f"a link names a node outside 0..{n - 1}")
    count = len(bounds) - 1
    bucket = np.searchsorted(bounds[1:], dst, side="right")
    order = np.argsort(bucket, kind="stable")
    per = np.bincount(bucket, minlength=count)
    pairs = np.stack([src[order], dst[order]]).astype(np.int32, copy=False)
    del order, bucket
    start = 0
    for k in np.flatnonzero(per):
        stop = start + int(per[k])
        files[k].append(write_scratch(directory / f"{name}-{k:05d}.npy", pairs[:, start:stop]))
        start = stop
    return per


def spill_chunks(src: np.ndarray, dst: np.ndarray, *, n: int, bounds: np.ndarray,
                 directory: Path, name: str, chunk: int = settings.DASK_PAIR_CHUNK) -> Spill:
    """One source's links (global IDs) spilled ``chunk`` pairs at a time as ``name-<c>-<k>``
    files: what :func:`spill_links` does for each source, callable on a worker."""
    if src.shape != dst.shape:
        raise GraphError(f"link arrays differ in length: {src.shape} vs {dst.shape}")
    count = len(bounds) - 1
    files: list[list[ArrayFile]] = [[] for _ in range(count)]
    counts = np.zeros(count, dtype=np.int64)
    for c, a in enumerate(range(0, len(src), chunk)):
        counts += _spill_chunk(src[a : a + chunk], dst[a : a + chunk], n=n, bounds=bounds,
                               directory=directory, name=f"{name}-{c:05d}", files=files)
    return Spill(n=n, bounds=bounds, files=files, counts=counts)


def merge_spills(spills: Iterable[Spill]) -> Spill:
    """Spills of the same buckets (made with one ``bounds``) as one."""
    it = iter(spills)
    first = next(it)
    files = [list(f) for f in first.files]
    counts = first.counts.copy()
    for spill in it:
        if spill.n != first.n or not np.array_equal(spill.bounds, first.bounds):
            raise GraphError("spills of different buckets cannot be merged")
        for k, more in enumerate(spill.files):
            files[k].extend(more)
        counts += spill.counts
    return Spill(n=first.n, bounds=first.bounds, files=files, counts=counts)


def plan_blocks(spill: Spill, blocks: int, directory: Path) -> list[BlockSource]:
    """Consecutive buckets grouped into at most ``blocks`` blocks of about equal link counts."""
    count = len(spill.counts)
    blocks = max(1, min(blocks, count))
    total = spill.links
    if total:
        cum = np.cumsum(spill.counts)
        targets = np.arange(1, blocks, dtype=np.int64) * total // blocks
        cuts = np.searchsorted(cum, targets, side="left") + 1
    else:
        cuts = np.arange(1, blocks, dtype=np.int64) * count // blocks
    edges = sorted({0, count, *(int(c) for c in cuts if 0 < c < count)})
    out = []
    for index, (b0, b1) in enumerate(itertools.pairwise(edges)):
        pairs = tuple(f for k in range(b0, b1) for f in spill.files[k])
        out.append(BlockSource(index, int(spill.bounds[b0]), int(spill.bounds[b1]), spill.n,
                               pairs, str(directory)))
    return out


def build_block(source: BlockSource) -> tuple[BlockFile, np.ndarray]:
    """Build one block from its bucket files (on a worker).  Returns the block and its links
    per source page (int32, length n): the out-degrees are their sum over blocks."""
    n, lo, hi = source.n, source.lo, source.hi
    parts = [f.read(f"link pairs of block {source.index}") for f in source.pairs]
    pairs = np.concatenate(parts, axis=1) if parts else np.zeros((2, 0), dtype=np.int32)
    del parts
    src, dst = pairs[0], pairs[1]
    keep = src != dst
    # One int64 key per link orders by (target, source); sorted, then de-duplicated.
    key = (dst[keep].astype(np.int64) - lo) * n + src[keep]
    del keep, pairs, src, dst
    key.sort()
    if key.size:
        first = np.empty(key.size, dtype=bool)
        first[0] = True
        np.not_equal(key[1:], key[:-1], out=first[1:])
        key = key[first]
        del first
    rows = key // n
    indices = (key % n).astype(np.int32)
    del key
    indptr = np.zeros(hi - lo + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=hi - lo), out=indptr[1:])
    del rows
    out_links = np.bincount(indices, minlength=n).astype(np.int32)
    directory = Path(source.directory)
    stem = f"block-{source.index:04d}"
    block = BlockFile(
        index=source.index, lo=lo, hi=hi, n=n, links=int(indices.size),
        indptr=write_scratch(directory / f"{stem}-indptr.npy", indptr),
        indices=write_scratch(directory / f"{stem}-indices.npy", indices),
    )
    return block, out_links


def load_block(block: BlockFile, weights: ArrayFile) -> sp.csr_matrix:
    """Rows ``lo..hi-1`` of c P^T: the block's pattern with entry (j, i) = ``weights[i]``."""
    what = f"link block {block.index}"
    indptr = block.indptr.read(what)
    indices = block.indices.read(what)
    if indptr.shape != (block.hi - block.lo + 1,) or int(indptr[-1]) != indices.size:
        raise LinkBlocksError(f"{block.indptr.path} does not match {block.indices.path}")
    weight = weights.read("transition weights")
    if weight.shape != (block.n,):
        raise LinkBlocksError(f"{weights.path} holds {weight.shape[0]} weights, not {block.n}")
    if indices.size < 2**31:
        indptr = indptr.astype(np.int32)  # as ranking.graph.in_csr: 4-byte indices, no copies
    data = weight[indices]
    del weight
    return sp.csr_matrix((data, indices, indptr), shape=(block.hi - block.lo, block.n),
                         copy=False)


# ---------------------------------------------------------------------------- block kernels
def multiply(matrix: sp.csr_matrix, x: np.ndarray) -> np.ndarray:
    """The block's rows of M x."""
    return np.asarray(matrix @ x)


def _unpack(bits: np.ndarray, n: int) -> np.ndarray:
    return np.unpackbits(bits, count=n).view(bool)


def successors(matrix: sp.csr_matrix, bits: np.ndarray) -> np.ndarray:
    """The block's rows (targets) linked to from a page of the frontier, packed."""
    frontier = _unpack(bits, matrix.shape[1])
    hit = frontier[matrix.indices]
    degree = np.diff(matrix.indptr)
    reached = np.zeros(matrix.shape[0], dtype=bool)
    rows = np.flatnonzero(degree)
    if rows.size:  # reduceat on the non-empty rows only: it misreads empty ones
        reached[rows] = np.logical_or.reduceat(hit, matrix.indptr[rows])
    return np.packbits(reached)


def _links_into(matrix: sp.csr_matrix, lo: int, bits: np.ndarray) -> np.ndarray:
    """Sources (with multiplicity) of the block's links whose target is in the frontier."""
    rows = matrix.shape[0]
    frontier = _unpack(bits, matrix.shape[1])[lo : lo + rows]
    return matrix.indices[np.repeat(frontier, np.diff(matrix.indptr))]


def predecessors(matrix: sp.csr_matrix, lo: int, bits: np.ndarray) -> np.ndarray:
    """Pages (of all n) with a link to a frontier page among the block's rows, packed."""
    found = np.zeros(matrix.shape[1], dtype=bool)
    found[_links_into(matrix, lo, bits)] = True
    return np.packbits(found)


def predecessor_counts(matrix: sp.csr_matrix, lo: int, bits: np.ndarray) -> np.ndarray:
    """Per page (of all n), its links to frontier pages among the block's rows (int32)."""
    return np.bincount(_links_into(matrix, lo, bits), minlength=matrix.shape[1]).astype(np.int32)
