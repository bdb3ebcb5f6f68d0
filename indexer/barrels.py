"""Forward barrels and the inverter (Brin & Page 1998, section 4.2.5 "Indexing" and "Sorting").

The indexer turns each document into hits ``(word ID, doc ordinal, field, position)`` and
ships them into *forward barrels*: barrel ``b`` holds the hits whose word ID lies in
``[b * BARREL_WORDS, (b + 1) * BARREL_WORDS)``.  Hits are buffered in memory and written out as
one run per barrel whenever the buffer passes a quarter of ``--ram-mb`` (the slides' "barrel
size = what fits in main memory"), always between two documents.  Each run is written sorted
by word with a stable sort, so within a word its hits keep document order: the sort the
sorter would do on each run is done once, on the buffer, while the workers parse.  Beside each
run goes its word table (its distinct words and their hit counts), from which the inverter
plans its word ranges without reading the runs or holding every run's table at once.

The inverter (the sorter) then takes each barrel in turn.  When all its runs fit in memory it
loads them and sorts by word ID (a stable radix sort, so document and position order survive);
when they do not, it merges the runs sequentially, one word-ID range at a time, so memory stays
within the budget; a word too common for one range comes in pieces cut between documents.  Its
output is a sequence of hit arrays sorted by (word, doc, field, position) over increasing
words, each within the budget (indexer/segment_writer.py's postings writer carries a word cut in
pieces over to the next array).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from websift.indexer.settings import BARREL_WORDS, HIT_BYTES

_CONVERT_EVERY = 1 << 16  # buffered hits turned into one numpy chunk at this count
FLUSH_SHARE = 4
INVERT_SHARE = 8  # a barrel is sorted in memory when its hits are at most 1/8 of the budget
# The postings built from a chunk of hits take ~9x its bytes at their peak (int64 columns, the
# (postings, fields) tf matrix, block impacts): a chunk is 1/16 of the budget.
CHUNK_SHARE = 16


class ForwardBarrels:
    """Buffers hits and writes them as forward barrel runs under ``directory``."""

    def __init__(self, directory: Path, ram_bytes: int, barrel_words: int = BARREL_WORDS, *,
                 kill_after: int | None = None) -> None:
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.ram_bytes = max(ram_bytes, HIT_BYTES)
        # Flushing holds the buffer, its concatenation, a sort order and the sorted copy at
        # once: buffering a quarter of the budget keeps that peak within it.
        self.buffer_bytes = max(self.ram_bytes // FLUSH_SHARE, HIT_BYTES)
        self.barrel_words = barrel_words
        self._convert_every = max(1, min(_CONVERT_EVERY, self.buffer_bytes // HIT_BYTES))
        self._wids: list[np.ndarray] = []
        self._pos: list[np.ndarray] = []
        self._docs: list[int] = []
        self._fields: list[int] = []
        self._counts: list[int] = []
        self._pending = 0
        self._chunks: list[np.ndarray] = []
        self._chunk_hits = 0
        self.runs: dict[int, list[Path]] = {}
        self.run_count = 0
        self.files_written = 0
        self.hits_total = 0
        self._kill_after = kill_after  # the crash tests' hook (IndexSettings)

    def add(self, doc: int, field: int, wids: np.ndarray, positions: np.ndarray) -> None:
        """The hits of one field of one document (documents in increasing ordinal)."""
        if len(wids) == 0:
            return
        # Converted (and flushed) only between documents: no document spans two runs, which
        # the inverter relies on to cut a common word's hits between documents.
        if self._pending >= self._convert_every and doc != self._docs[-1]:
            self._convert()
        self._wids.append(wids)
        self._pos.append(positions)
        self._docs.append(doc)
        self._fields.append(field)
        self._counts.append(len(wids))
        self._pending += len(wids)

    def add_hits(self, hits: np.ndarray) -> None:
        """A block of hits (n, 4) holding every hit of its words (a segment merge's batch):
        no word of it may appear in another block, so block order is free."""
        self._convert(may_flush=False)
        self._chunks.append(np.ascontiguousarray(hits, dtype=np.int32))
        self._chunk_hits += len(hits)
        if self._chunk_hits * HIT_BYTES >= self.buffer_bytes:
            self.flush()

    def add_block(self, hits: np.ndarray) -> None:
        """The hits (n, 4) of whole documents, in document order, after every document added
        before (a worker's batch)."""
        self._convert(may_flush=False)
        if len(hits) == 0:
            return
        self._chunks.append(np.ascontiguousarray(hits, dtype=np.int32))
        self._chunk_hits += len(hits)
        if self._chunk_hits * HIT_BYTES >= self.buffer_bytes:
            self.flush()

    def _convert(self, may_flush: bool = True) -> None:
        if not self._wids:
            return
        counts = np.asarray(self._counts, dtype=np.int64)
        chunk = np.empty((self._pending, 4), dtype=np.int32)
        chunk[:, 0] = np.concatenate(self._wids)
        chunk[:, 1] = np.repeat(np.asarray(self._docs, dtype=np.int32), counts)
        chunk[:, 2] = np.repeat(np.asarray(self._fields, dtype=np.int32), counts)
        chunk[:, 3] = np.minimum(np.concatenate(self._pos), np.iinfo(np.int32).max)
        self._chunks.append(chunk)
        self._chunk_hits += len(chunk)
        self._wids, self._pos, self._docs, self._fields, self._counts = [], [], [], [], []
        self._pending = 0
        if may_flush and self._chunk_hits * HIT_BYTES >= self.buffer_bytes:
            self.flush()

    def flush(self) -> None:
        """Write the buffered hits as one run per barrel they touch."""
        self._convert(may_flush=False)
        if not self._chunks:
            return
        hits = np.concatenate(self._chunks)
        self._chunks, self._chunk_hits = [], 0
        # Sorted by word (stably: documents stay in order), which sorts them by barrel too:
        # each run is written in word order, so the inverter merges runs without sorting each
        # one again.
        hits = _by_word(hits)
        barrel = hits[:, 0] // self.barrel_words
        bounds = np.flatnonzero(np.diff(barrel)) + 1
        starts = np.concatenate([[0], bounds])
        ends = np.concatenate([bounds, [len(hits)]])
        for s, e in zip(starts, ends, strict=True):
            b = int(barrel[s])
            path = self.directory / f"fwd-{b:05d}-{self.run_count:05d}.npy"
            np.save(path, hits[s:e])
            # The run's words and their hit counts beside it: the inverter plans its word
            # ranges from these small tables, not from the runs (:func:`invert`).
            np.save(words_path(path), np.vstack(_word_counts(hits[s:e, 0])).astype(np.int64))
            self.runs.setdefault(b, []).append(path)
            self.files_written += 1
            if self._kill_after is not None and self.files_written >= self._kill_after:
                os.kill(os.getpid(), signal.SIGKILL)
        self.hits_total += len(hits)
        self.run_count += 1

    def close(self) -> None:
        self.flush()


def stable_order(keys: np.ndarray) -> np.ndarray:
    """``np.argsort(keys, kind="stable")``, as a radix sort when the keys span fewer than 2**32
    values: numpy sorts 16-bit keys by radix, O(n), and wider ones by timsort, O(n log n),
    three times slower on a barrel's hits.  Keys spanning fewer than 2**16 values (a barrel's
    word IDs do: BARREL_WORDS) take one pass; wider ones (the hit buffer of a run, every
    barrel's words) two, low 16 bits then high 16 bits, each stable: least significant digit
    first, so the second pass keeps the first's order among equal high halves."""
    if len(keys) == 0:
        return np.zeros(0, dtype=np.intp)
    lo, hi = int(keys.min()), int(keys.max())
    if lo >> 16 == hi >> 16 and lo >= 0:  # one barrel: the low 16 bits order them, no copy
        return np.argsort(keys.astype(np.uint16), kind="stable")
    if hi - lo < 1 << 16:
        return np.argsort((keys - lo).astype(np.uint16), kind="stable")
    if hi - lo < 1 << 32:
        shifted = (keys.astype(np.int64) - lo).astype(np.uint32)
        low = np.argsort((shifted & 0xFFFF).astype(np.uint16), kind="stable")
        return low[np.argsort((shifted >> 16).astype(np.uint16)[low], kind="stable")]
    return np.argsort(keys, kind="stable")


def _by_word(hits: np.ndarray) -> np.ndarray:
    """Hits (n, 4) in stable word order. ``np.take`` gathers the rows several times faster
    than fancy indexing ``hits[order]``, which takes the general n-dimensional path."""
    return np.take(hits, stable_order(hits[:, 0]), axis=0)


def invert(runs: list[Path], ram_bytes: int) -> Iterator[np.ndarray]:
    """Hits of one barrel (its runs, each in word order: :meth:`ForwardBarrels.flush`) sorted by (word, doc, field, position), in chunks of at most the
    inversion's share of ``ram_bytes`` (:func:`chunk_hits`).  A chunk ends at the end of a word
    or, inside a word too common for one chunk, at the end of a document: the postings writer
    carries such a word over to the next chunk (indexer/segment_writer.py), so memory stays
    within the budget however common a word is."""
    limit = chunk_hits(ram_bytes)
    sizes = [os.path.getsize(p) for p in runs]
    # Sorting in memory holds the hits, the order and the sorted copy, and building postings
    # from them several int64 columns: a barrel is sorted in memory up to 1/8 of the budget.
    if len(runs) == 1:  # sorted already (a run is a quarter of the budget)
        yield from _cut(np.load(runs[0]), limit)
        return
    if sum(sizes) <= ram_bytes // INVERT_SHARE:
        yield from _cut(_by_word(np.concatenate([np.load(p) for p in runs])), limit)
        return
    # Too big for memory: merge word ranges of the (sorted) runs sequentially, reading each
    # run's slice of the range with plain reads (a memory map would keep every page read
    # resident).  The ranges are planned from the runs' word tables, one at a time: what stays
    # in memory is the barrel's words (at most BARREL_WORDS) and, per run, where each range
    # starts in it, not every run's table (their number grows with the collection).
    words = np.zeros(0, dtype=np.int64)
    totals = np.zeros(0, dtype=np.int64)
    for path in runs:
        w, n = _run_words(path)
        merged = np.union1d(words, w)
        t = np.zeros(len(merged), dtype=np.int64)
        t[np.searchsorted(merged, words)] += totals
        t[np.searchsorted(merged, w)] += n
        words, totals = merged, t
    ranges = list(_ranges(totals, ram_bytes))
    edges = np.array([words[lo] for lo, _ in ranges] + [words[-1] + 1], dtype=np.int64)
    sorted_runs: list[tuple[Path, int, np.ndarray]] = []
    for path in runs:
        w, n = _run_words(path)
        starts = np.zeros(len(n) + 1, dtype=np.int64)
        np.cumsum(n, out=starts[1:])
        sorted_runs.append((path, _data_offset(path), starts[np.searchsorted(w, edges)]))
    del words
    for r, (lo_idx, hi_idx) in enumerate(ranges):
        slices = []
        for path, offset, at in sorted_runs:
            a, b = int(at[r]), int(at[r + 1])
            if b > a:
                slices.append((path, offset, a, b))
        if hi_idx - lo_idx == 1 and totals[lo_idx] > limit:
            # One word over the budget: its hits run by run (runs hold whole documents in
            # document order, so this is its sorted order), cut at documents.
            yield from _cut_runs(slices, limit)
            continue
        parts = [_read(path, offset, a, b) for path, offset, a, b in slices]
        # One copy of the range alive while the caller builds its postings (not the parts,
        # their concatenation and the sorted copy: 3x).
        hits = parts[0] if len(parts) == 1 else np.concatenate(parts)
        del parts
        if len(slices) > 1:  # a slice of one sorted run is sorted
            hits = _by_word(hits)
        yield hits
        del hits
    for path, *_ in sorted_runs:
        path.unlink()
        words_path(path).unlink(missing_ok=True)


def words_path(run: Path) -> Path:
    """Where a forward barrel run's word table is: (2, words) int64, its distinct words and
    their hit counts."""
    return run.with_name(run.stem + "-words.npy")


def _run_words(run: Path) -> tuple[np.ndarray, np.ndarray]:
    """A run's distinct words and their hit counts: its word table, or counted from the run."""
    table = words_path(run)
    if table.exists():
        got = np.load(table)
        return got[0], got[1]
    w, n = _word_counts(np.load(run)[:, 0])
    return w.astype(np.int64), n


def chunk_hits(ram_bytes: int) -> int:
    """Hits in one chunk of the inversion (see CHUNK_SHARE)."""
    return max(ram_bytes // CHUNK_SHARE, HIT_BYTES) // HIT_BYTES


def _read(path: Path, offset: int, a: int, b: int) -> np.ndarray:
    """Rows [a, b) of a sorted run's (n, 4) int32 hits, read plainly."""
    with open(path, "rb") as fh:
        fh.seek(offset + a * HIT_BYTES)
        return np.fromfile(fh, dtype=np.int32, count=(b - a) * 4).reshape(-1, 4)


def _doc_cut(hits: np.ndarray, end: int) -> int:
    """The last place in ``1 ... end`` between two (word, doc) postings of sorted ``hits``; the
    first one past ``end`` (or ``len(hits)``) when there is none."""
    if end >= len(hits):
        return len(hits)
    w, d = hits[:, 0], hits[:, 1]
    head = np.flatnonzero((w[1 : end + 1] != w[:end]) | (d[1 : end + 1] != d[:end]))
    if len(head):
        return int(head[-1]) + 1
    later = np.flatnonzero((w[end + 1 :] != w[end:-1]) | (d[end + 1 :] != d[end:-1]))
    return end + 1 + int(later[0]) if len(later) else len(hits)


def _cut(hits: np.ndarray, limit: int) -> Iterator[np.ndarray]:
    """Sorted ``hits`` in slices of about ``limit`` hits, each ending between two postings."""
    lo = 0
    while lo < len(hits):
        hi = lo + _doc_cut(hits[lo:], min(limit, len(hits) - lo))
        yield hits[lo:hi]
        lo = hi


def _cut_runs(slices: list[tuple[Path, int, int, int]], limit: int) -> Iterator[np.ndarray]:
    """One word's hits from the sorted runs' slices, in run order, at most ~``limit`` hits
    read at a time and cut between documents (no document spans two runs)."""
    for path, offset, start, b in slices:
        a = start
        while a < b:
            hits = _read(path, offset, a, min(b, a + limit))
            while True:
                complete = a + len(hits) == b  # else the last hit's posting may go on
                cut = _doc_cut(hits, min(limit, len(hits) - (not complete)))
                if cut < len(hits) or complete:
                    break
                # One document longer than what was read: read on to its end.
                hits = _read(path, offset, a, min(b, a + 2 * len(hits)))
            yield hits[:cut]
            a += cut


def _word_counts(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of sorted ``keys`` and how often each occurs (np.unique without its
    sort)."""
    if len(keys) == 0:
        return keys[:0], np.zeros(0, dtype=np.int64)
    first = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
    return keys[first], np.diff(np.append(first, len(keys)))


def _ranges(counts: np.ndarray, ram_bytes: int) -> Iterator[tuple[int, int]]:
    """Consecutive word index ranges [lo, hi) whose hits fit the inversion's share of
    ``ram_bytes`` (at least one word each)."""
    cum = np.cumsum(counts) * HIT_BYTES
    budget = chunk_hits(ram_bytes) * HIT_BYTES
    lo_idx = 0
    while lo_idx < len(counts):
        base = cum[lo_idx - 1] if lo_idx else 0
        hi_idx = max(lo_idx + 1, int(np.searchsorted(cum, base + budget, side="right")))
        yield lo_idx, hi_idx
        lo_idx = hi_idx


def _data_offset(path: Path) -> int:
    """Where the data of a C-ordered (n, 4) int32 .npy file starts."""
    with open(path, "rb") as fh:
        np.lib.format.read_magic(fh)
        np.lib.format.read_array_header_1_0(fh)
        return fh.tell()
