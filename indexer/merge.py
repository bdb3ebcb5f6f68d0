"""Merging segments: many live segments -> one, without going back to the crawl store.

Each source segment's postings are read back as hits, word range by word range (every stream
of every word of the range decoded at once, indexer/codec.decode_groups), restricted to its
live documents and renumbered into the merged document order (ascending URL ID); each range's
hits, sorted by (word, doc, field, position), go to the merged segment's barrels, and the usual
inverter and postings writer finish it.  Stored texts are copied as they are (no re-parsing).
Word IDs of the merged segment are the positions of its words in sorted order, so a word range
is a row range of every source lexicon.  Memory: one word range at a time, sized from the words'
collection frequencies to stay within the budget.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from pyroaring import BitMap

from websift.indexer.codec import decode_groups, delta_decode_groups
from websift.indexer.errors import IndexInterrupted
from websift.indexer.segment import SegmentReader
from websift.indexer.segment_format import CF, DF
from websift.indexer.segment_writer import SegmentWriter
from websift.indexer.settings import DEFAULT_INDEX_SETTINGS

_BYTES_PER_VALUE = 160  # scratch memory of decode_groups and the hit arrays, per position


def merge_segments(segments: list[SegmentReader], live: list[np.ndarray], directory: Path,
                   ram_bytes: int, *, drops: BitMap | None = None,
                   should_stop: Callable[[], bool] = lambda: False) -> dict[str, Any]:
    """Write one segment holding the live documents of ``segments``; returns its meta.  It
    records the settings of the newest of them (the analysis they all share: indexer/build.py
    checks it before a run).  ``drops``: URL IDs the merged segment masks in segments older
    than it (those its sources masked).  ``should_stop`` is asked between word ranges; True
    raises IndexInterrupted (the caller removes ``directory``)."""
    writer = SegmentWriter(directory, ram_bytes,
                           settings=segments[-1].index_settings if segments else
                           DEFAULT_INDEX_SETTINGS)
    if drops is not None:
        writer.drops = BitMap(drops)
    # Documents in ascending URL ID; new_ord[i][old ordinal] = merged ordinal (-1: dead).
    ids = np.concatenate([seg.doc_ids[m] for seg, m in zip(segments, live, strict=True)])
    src = np.concatenate([np.full(int(m.sum()), i) for i, m in enumerate(live)])
    old = np.concatenate([np.flatnonzero(m) for m in live])
    order = np.argsort(ids, kind="stable")
    ids, src, old = ids[order], src[order], old[order]
    new_ord = [np.full(len(seg.doc_ids), -1, dtype=np.int64) for seg in segments]
    for i in range(len(segments)):
        sel = np.flatnonzero(src == i)
        new_ord[i][old[sel]] = sel
    for url_id, i, o in zip(ids.tolist(), src.tolist(), old.tolist(), strict=True):
        seg = segments[i]
        head = seg.head(o)
        writer.add_copied_document(url_id, url=head["url"], title=head["title"],
                                   lang=head["lang"] or None,
                                   text_blob=seg.text_blob(o), field_lens=seg.field_lens[o],
                                   frags_blob=seg.frags_blob(o), prior=float(seg.prior[o]))
    for seg, m in zip(segments, live, strict=True):
        pairs = seg.anchor_pairs
        if len(pairs):
            writer.add_anchor_pairs(pairs[np.isin(pairs[:, 1], seg.doc_ids[m])])
    # Words: the sorted union; word ID = rank, so each source's rows map increasingly.
    seg_terms = [seg.terms() for seg in segments]
    union = sorted(set().union(*seg_terms))
    for t in union:
        writer.lexicon[t] = len(writer.lexicon)
    row_wid = [np.fromiter((writer.lexicon[t] for t in terms), dtype=np.int64, count=len(terms))
               for terms in seg_terms]
    cf = np.zeros(len(union), dtype=np.int64)
    for seg, rw in zip(segments, row_wid, strict=True):
        cf[rw] += seg.lexicon[:, CF]
    cum = np.cumsum(cf)
    budget = max(ram_bytes // _BYTES_PER_VALUE, 1)
    lo = 0
    while lo < len(union):
        if should_stop():
            raise IndexInterrupted("stopped before the merge was complete")
        base = cum[lo - 1] if lo else 0
        hi = max(lo + 1, int(np.searchsorted(cum, base + budget, side="right")))
        parts = [_hits(seg, rw, no, lo, hi)
                 for seg, rw, no in zip(segments, row_wid, new_ord, strict=True)]
        hits = np.concatenate([p for p in parts if len(p)] or [np.zeros((0, 4), np.int32)])
        if len(hits):
            order = np.lexsort((hits[:, 3], hits[:, 2], hits[:, 1], hits[:, 0]))
            writer.barrels.add_hits(hits[order])
        lo = hi
    # Text sizes are kept per segment only: the merged figure counts the live share.
    writer.text_bytes = int(sum(
        seg.meta.get("text_bytes", 0) * (int(m.sum()) / max(len(m), 1))
        for seg, m in zip(segments, live, strict=True)))
    return writer.finish()


def _hits(seg: SegmentReader, row_wid: np.ndarray, new_ord: np.ndarray, lo: int, hi: int
          ) -> np.ndarray:
    """Hits (word, merged doc, field, position) of the words with IDs in [lo, hi) in ``seg``,
    live documents only."""
    r0, r1 = np.searchsorted(row_wid, [lo, hi])
    if r1 <= r0:
        return np.zeros((0, 4), dtype=np.int32)
    lex = seg.lexicon[r0:r1]
    df, cf = lex[:, DF], lex[:, CF]

    def stream(name: str, counts: np.ndarray) -> np.ndarray:
        data, widths, c = seg.stream(name)
        return decode_groups(data, widths, lex[:, c], lex[:, c + 2], counts)

    p_doc = delta_decode_groups(stream("docs", df), df)
    nf = seg.n_fields  # a segment written with fewer fields: its columns map into FIELDS
    tf = stream("tfs", df * nf).astype(np.int64).reshape(-1, nf)
    pos = delta_decode_groups(stream("pos", cf), tf.ravel())
    n_post = len(p_doc)
    posting = np.repeat(np.arange(n_post, dtype=np.int64), tf.sum(axis=1))
    field = np.repeat(np.tile(seg.field_columns, n_post), tf.ravel())
    doc = new_ord[p_doc][posting]
    keep = doc >= 0
    wid = np.repeat(row_wid[r0:r1], df)[posting]
    return np.stack([wid[keep], doc[keep], field[keep], pos[keep]], axis=1).astype(np.int32)
