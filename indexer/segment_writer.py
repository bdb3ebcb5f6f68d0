"""Writes one index segment (format: :mod:`indexer.segment_format`).

Documents go into forward barrels (indexer/barrels.py); :meth:`SegmentWriter.finish` inverts
them into sorted hit chunks, bit-packs each word's postings (indexer/codec.py, in spawned
processes when asked), and writes the lexicon, the stored texts, the bitmaps and meta.json,
then fsyncs every file.  The writer fills a fresh directory; the caller makes it live
(indexer/build.py renames ``tmp-*`` to ``seg-<generation>`` before the manifest names it).
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import zlib
from array import array
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import numpy as np
from pyroaring import BitMap

from websift.core import checked
from websift.core.lifetime import die_with_parent
from websift.indexer.analysis import analyzer_version
from websift.indexer.barrels import ForwardBarrels, invert, words_path
from websift.indexer.codec import Encoded, delta_decode_groups, delta_encode_groups, encode, narrow
from websift.indexer.hits import HitMaker
from websift.indexer.languages import analysis_language
from websift.indexer.segment_format import CF, COL, DF, META_FILE, SEP, STREAMS
from websift.indexer.settings import (
    BARREL_WORDS,
    BLOCK,
    DEFAULT_INDEX_SETTINGS,
    DOCSTORE_LEVEL,
    ENCODE_IN_FLIGHT,
    FIELDS,
    MAX_FIELD_TOKENS,
    MAX_POSITION,
    N_FIELDS,
    PAIRS_BUFFER,
    IndexSettings,
)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass
class _Stream:
    data: Any  # open binary file
    widths: Any
    nbytes: int = 0
    nblocks: int = 0

    def append(self, enc: Encoded) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        self.data.write(enc.data.tobytes())
        self.widths.write(enc.widths.tobytes())
        b0 = enc.byte_offsets[:-1] + self.nbytes
        b1 = enc.byte_offsets[1:] + self.nbytes
        k0 = enc.block_offsets[:-1] + self.nblocks
        self.nbytes += int(enc.byte_offsets[-1])
        self.nblocks += int(enc.block_offsets[-1])
        return b0, b1, k0


def postings_from_hits(hits: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                   dict[str, tuple[np.ndarray, np.ndarray]]]:
    """From hits sorted by (word, doc, field, position): the words, df, cf and the three
    streams (values, group lengths) to bit-pack."""
    wid, doc, fld, pos = hits[:, 0], hits[:, 1], hits[:, 2], hits[:, 3]
    n = len(hits)
    new_post = np.ones(n, dtype=bool)
    new_post[1:] = (wid[1:] != wid[:-1]) | (doc[1:] != doc[:-1])
    post_idx = np.cumsum(new_post) - 1
    first = np.flatnonzero(new_post)
    p_wid, p_doc = wid[first], doc[first]
    n_post = len(first)
    tf = np.bincount(post_idx * N_FIELDS + fld, minlength=n_post * N_FIELDS).reshape(
        n_post, N_FIELDS)
    new_term = np.ones(n_post, dtype=bool)
    new_term[1:] = p_wid[1:] != p_wid[:-1]
    t_first = np.flatnonzero(new_term)
    words = p_wid[t_first]
    df = np.diff(np.append(t_first, n_post))
    hit_term_first = first[t_first]
    cf = np.diff(np.append(hit_term_first, n))
    streams = {
        "docs": (delta_encode_groups(p_doc, df), df),
        "tfs": (tf.ravel(), df * N_FIELDS),
        "pos": (delta_encode_groups(np.minimum(pos, MAX_POSITION), tf.ravel()), cf),
    }
    return words, df, cf, streams


class _Open(NamedTuple):
    """A word held open between chunks: what it has that is not written yet."""

    word: int
    df: int
    cf: int
    tail: dict[str, np.ndarray]  # per stream, values of its last, partial block
    docs: np.ndarray  # postings not yet in a block impact
    tfs: np.ndarray


class _Plan(NamedTuple):
    """One chunk's postings, ready to encode (:func:`_encode_plan`) and then write in order."""

    closing: _Open | None  # the open word this chunk does not go on with
    merged: bool  # the chunk's first word is the open word, going on
    words: np.ndarray
    df: np.ndarray
    cf: np.ndarray
    values: dict[str, tuple[np.ndarray, np.ndarray]]  # per stream (values, group lengths)
    impacts: tuple[np.ndarray, np.ndarray, np.ndarray]  # block_impacts' docs, tfs, df


# The field lengths a spawned encoder process computes block impacts with: mapped from the
# segment's field_lens.npy by the pool's initializer (a pool's tasks are pickled, the lengths
# need not be).
_ENCODER: dict[str, np.ndarray] = {}


def _encoder_lens(lens_path: str, parent: int) -> None:
    die_with_parent(parent)
    _ENCODER["lens"] = np.load(lens_path, mmap_mode="r")


def _encode_plan(values: dict[str, tuple[np.ndarray, np.ndarray]],
                 impacts: tuple[np.ndarray, np.ndarray, np.ndarray],
                 lens: np.ndarray | None = None) -> tuple[dict[str, Encoded], np.ndarray]:
    """The pure, costly part of a chunk's postings: bit-packing and block impacts."""
    lens = _ENCODER["lens"] if lens is None else lens
    return ({s: encode(v, n) for s, (v, n) in values.items()}, block_impacts(*impacts, lens))


class _Postings:
    """Sorted hit chunks (indexer/barrels.invert) -> the three postings streams, the lexicon's
    columns and the block impacts.  A chunk's last word may go on in the next chunk (``invert``
    cuts a word too common for one chunk between documents), so it is held open: its full
    blocks are written, the values of each stream's last, partial block (fewer than BLOCK) and
    the postings not yet in a block impact are kept.  Every full block is byte-aligned and
    packed alone (indexer/codec.py), so the bytes are those of one encode of the whole word.

    :meth:`prepare` does the bookkeeping in chunk order, :func:`_encode_plan` the bit-packing
    (in another process when :meth:`write` has a pool), :meth:`commit` the writing, in chunk
    order again."""

    def __init__(self, streams: dict[str, _Stream], lex: np.ndarray, lens: np.ndarray,
                 impacts: _Column) -> None:
        self.streams, self.lex, self.lens = streams, lex, lens
        self.impacts = impacts  # written as they come: (blocks, 2 * fields) int32 rows
        self.open: _Open | None = None  # as far as prepare has gone
        self.last_doc = 0  # of the open word
        self.first: dict[str, tuple[int, int]] = {}  # open word: (first byte, first block)

    def prepare(self, hits: np.ndarray) -> _Plan:
        words, df, cf, raw = postings_from_hits(hits)
        vals = {s: np.asarray(raw[s][0], dtype=np.int64) for s in STREAMS}
        lens = {s: np.asarray(raw[s][1], dtype=np.int64).copy() for s in STREAMS}
        docs = delta_decode_groups(vals["docs"], df)
        tfs = vals["tfs"].reshape(-1, N_FIELDS)
        df = df.astype(np.int64)
        cf = cf.astype(np.int64)
        imp_df = df.copy()
        op = self.open
        merged = op is not None and int(words[0]) == op.word
        if merged:  # the open word goes on: its kept values come first
            assert op is not None
            vals["docs"][0] = docs[0] - self.last_doc
            for s in STREAMS:
                vals[s] = np.concatenate([op.tail[s], vals[s]])
                lens[s][0] += len(op.tail[s])
            docs = np.concatenate([op.docs, docs])
            tfs = np.concatenate([op.tfs, tfs])
            imp_df[0] += len(op.docs)
            df[0] += op.df
            cf[0] += op.cf
        # The chunk's last word stays open: only its full blocks are written now.
        g = len(words) - 1
        tail: dict[str, np.ndarray] = {}
        values: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for s in STREAMS:
            keep = int(lens[s][g] % BLOCK)
            lens[s][g] -= keep
            tail[s] = vals[s][len(vals[s]) - keep :].copy()  # not a view holding the chunk
            values[s] = (narrow(vals[s][: len(vals[s]) - keep]), lens[s])
        keep = int(imp_df[g] % BLOCK)
        imp_df[g] -= keep
        cut = len(docs) - keep
        self.open = _Open(int(words[g]), int(df[g]), int(cf[g]), tail, docs[cut:].copy(),
                          tfs[cut:].copy())
        self.last_doc = int(docs[-1])
        return _Plan(None if merged else op, merged, words, df, cf, values,
                     (narrow(docs[:cut]), narrow(tfs[:cut]), imp_df))

    def commit(self, plan: _Plan, encoded: dict[str, Encoded], impacts: np.ndarray) -> None:
        if plan.closing is not None:
            self._close(plan.closing)
        words, g = plan.words, len(plan.words) - 1
        for s in STREAMS:
            b0, b1, k0 = self.streams[s].append(encoded[s])
            c = COL[s]
            if plan.merged:  # the open word started in an earlier chunk
                b0[0], k0[0] = self.first[s]
            self.lex[words[:g], c] = b0[:g]
            self.lex[words[:g], c + 1] = b1[:g]
            self.lex[words[:g], c + 2] = k0[:g]
            self.first[s] = (int(b0[g]), int(k0[g]))
        self.lex[words[:g], DF] = plan.df[:g]
        self.lex[words[:g], CF] = plan.cf[:g]
        self.impacts.write_array(impacts)

    def _close(self, op: _Open) -> None:
        """Write an open word's last values and its lexicon row."""
        w = op.word
        for s in STREAMS:
            _, b1, _ = self.streams[s].append(encode(op.tail[s], np.array([len(op.tail[s])])))
            c = COL[s]
            self.lex[w, c], self.lex[w, c + 2] = self.first[s]
            self.lex[w, c + 1] = b1[0]
        self.lex[w, DF], self.lex[w, CF] = op.df, op.cf
        self.impacts.write_array(block_impacts(op.docs, op.tfs, np.array([len(op.docs)]),
                                               self.lens))

    def write(self, chunks: Iterable[np.ndarray], procs: int = 1,
              lens_path: Path | None = None) -> None:
        """Every chunk, then the last open word.  ``procs`` > 1: the chunks are bit-packed in
        that many spawned processes (they map the field lengths from ``lens_path``, an .npy
        file) while this one inverts and prepares the next ones (at most ENCODE_IN_FLIGHT per
        process waiting, so memory stays bounded).  Spawned, not forked: a forked process
        would share, and count in its resident size, all this process holds."""
        if procs <= 1 or lens_path is None:
            for hits in chunks:
                plan = self.prepare(hits)
                self.commit(plan, *_encode_plan(plan.values, plan.impacts, self.lens))
        else:
            pool = multiprocessing.get_context("spawn").Pool(
                procs, initializer=_encoder_lens, initargs=(str(lens_path), os.getpid()))
            try:
                pending: deque[tuple[_Plan, Any]] = deque()
                for hits in chunks:
                    plan = self.prepare(hits)
                    pending.append((plan, pool.apply_async(_encode_plan,
                                                           (plan.values, plan.impacts))))
                    if len(pending) >= procs * ENCODE_IN_FLIGHT:
                        done, res = pending.popleft()
                        self.commit(done, *res.get())
                while pending:
                    done, res = pending.popleft()
                    self.commit(done, *res.get())
            finally:
                pool.terminate()
                pool.join()
        if self.open is not None:
            self._close(self.open)
            self.open = None


_NO_FIELD = np.iinfo(np.int32).max  # smallest length of a field no posting of the block has


def block_impacts(docs: np.ndarray, tfs: np.ndarray, df: np.ndarray,
                  field_lens: np.ndarray) -> np.ndarray:
    """Per block of ``BLOCK`` postings (each word's postings cut as the docs stream is): the
    largest tf of each field, then the smallest length of each field over the postings that
    hold the word in that field (int32, (blocks, 2 * fields)).  Lucene's "impacts" (max freq,
    min norm) per field: tf~ <= sum_f w_f max_tf_f / (1 - b_f + b_f min_len_f / avg_f) for
    every average length, so the bound holds under any collection statistics."""
    df = np.asarray(df, dtype=np.int64)
    if len(docs) == 0:
        return np.zeros((0, 2 * N_FIELDS), dtype=np.int32)
    starts = np.cumsum(df) - df
    within = np.arange(len(docs), dtype=np.int64) - np.repeat(starts, df)
    nb = (df + BLOCK - 1) // BLOCK
    block = np.repeat(np.cumsum(nb) - nb, df) + within // BLOCK
    first = np.flatnonzero(np.diff(block, prepend=-1))
    max_tf = np.maximum.reduceat(tfs, first, axis=0)
    # np.take gathers rows about 3x faster than fancy indexing (its general n-d path)
    lens = np.where(tfs > 0, np.take(field_lens, docs, axis=0), _NO_FIELD)
    min_len = np.minimum.reduceat(lens, first, axis=0)
    return np.hstack([max_tf, min_len]).astype(np.int32)


class _Column:
    """A column of machine integers appended per document (or per anchor), buffered in an
    ``array`` of at most PAIRS_BUFFER values and written out to ``path`` (raw, native order)
    past that, so a run's memory does not grow with its documents.  :meth:`save` turns the
    raw file into a ``.npy`` file (copied PAIRS_BUFFER values at a time) and removes it."""

    def __init__(self, path: Path, code: str, first: int | None = None) -> None:
        self.path, self.code = path, code
        self._buf: array[Any] = array(code)
        self._fh = open(path, "wb")  # noqa: SIM115 - closed in save
        self.count = 0  # values appended, written or not
        self.last: float = 0  # the last value appended (0 before any)
        if first is not None:
            self.append(first)

    def append(self, value: float) -> None:
        self._buf.append(value)
        self.count += 1
        self.last = value
        if len(self._buf) >= PAIRS_BUFFER:
            self.spill()

    def extend(self, values: Iterable[int]) -> None:
        before = len(self._buf)
        self._buf.extend(values)
        self.count += len(self._buf) - before
        if len(self._buf) > before:
            self.last = self._buf[-1]
        if len(self._buf) >= PAIRS_BUFFER:
            self.spill()

    def write_array(self, values: np.ndarray) -> None:
        """Append the values of an array (row after row) straight to the file."""
        self.spill()
        self._fh.write(np.ascontiguousarray(values, dtype=self.code).tobytes())
        self.count += values.size

    def spill(self) -> None:
        self._buf.tofile(self._fh)
        self._buf = array(self.code)

    def save(self, out_path: Path, columns: int = 1) -> None:
        """``out_path`` as an .npy file of shape (count / columns, columns), or (count,)."""
        self.spill()
        self._fh.close()
        dtype = np.dtype(self.code)
        shape = (self.count,) if columns == 1 else (self.count // columns, columns)
        with open(out_path, "wb") as out, open(self.path, "rb") as src:
            np.lib.format.write_array_header_1_0(out, {
                "descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False,
                "shape": shape})
            while chunk := src.read(PAIRS_BUFFER * dtype.itemsize):
                out.write(chunk)
        self.path.unlink()

    def chunks(self) -> Iterator[np.ndarray]:
        """The values written so far (after :meth:`spill`), PAIRS_BUFFER at a time."""
        self.spill()
        self._fh.flush()
        with open(self.path, "rb") as src:
            while chunk := src.read(PAIRS_BUFFER * np.dtype(self.code).itemsize):
                yield np.frombuffer(chunk, dtype=self.code)


def _head(url: str, title: str, lang: str | None) -> bytes:
    """A document's stored head: URL, title and language (head.bin; SEP between)."""
    return f"{url}{SEP}{title.replace(SEP, ' ')}{SEP}{lang or ''}".encode(
        "utf-8", "surrogatepass")


class SegmentWriter:
    """Builds one segment from documents added in increasing URL ID.

    Its memory does not grow with the documents: every per-document value (URL
    ID, field lengths, the offsets into the stored texts) and every anchor pair goes to a raw
    file in the segment's directory past PAIRS_BUFFER values (:class:`_Column`), the block
    impacts are written as they are made, and the postings are bit-packed in spawned
    processes, which inherit none of this process's memory.  What it keeps is per word (the
    lexicon) and per host (``site:`` bitmaps)."""

    def __init__(self, directory: Path, ram_bytes: int, barrel_words: int = BARREL_WORDS,
                 settings: IndexSettings = DEFAULT_INDEX_SETTINGS) -> None:
        """``settings``: what the documents were (and :meth:`add_document` makes them)
        analysed with; recorded in meta.json."""
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=False)
        self.ram_bytes = ram_bytes
        self.settings = settings
        self.hits = HitMaker.of(settings)
        self.lexicon = self.hits.lexicon
        self.barrels = ForwardBarrels(directory / "barrels", ram_bytes, barrel_words,
                                      kill_after=settings.index_kill_after_barrels)
        self.doc_ids = _Column(directory / "doc_ids.raw", "q")
        self._lens = _Column(directory / "field_lens.raw", "i")  # N_FIELDS per document
        self._len_sums = [0] * N_FIELDS
        self._store = open(directory / "store.bin", "wb")  # noqa: SIM115 - closed in finish
        self._store_off = _Column(directory / "store_off.raw", "q", 0)
        self._head = open(directory / "head.bin", "wb")  # noqa: SIM115 - closed in finish
        self._head_off = _Column(directory / "head_off.raw", "q", 0)
        self._frags = open(directory / "frags.bin", "wb")  # noqa: SIM115 - closed in finish
        self._frags_off = _Column(directory / "frags_off.raw", "q", 0)
        # Per document, its provisional prior: OPIC importance scaled to mean one when it was
        # indexed (0: none known); the searcher's prior for pages the ranks do not know.
        self._prior = _Column(directory / "prior.raw", "f")
        self.text_bytes = 0
        self.hosts: dict[str, BitMap] = {}
        self.langs: dict[str, int] = {}  # documents per language ("": unknown)
        self.drops = BitMap()
        # (source, target) of the anchors, flattened.
        self._pairs = _Column(directory / "anchor_pairs.raw", "q")

    @property
    def doc_count(self) -> int:
        return self.doc_ids.count

    def _add_lens(self, lens: Sequence[int]) -> None:
        self._lens.extend(lens)
        for f, n in enumerate(lens):
            self._len_sums[f] += n

    def add_document(self, url_id: int, *, host: str, url: str, title: str, text: str,
                     fields: Sequence[str | Sequence[str]],
                     anchor_sources: Sequence[int] = (), lang: str | None = None) -> None:
        """One document; ``fields`` in FIELDS order, each a text or a list of texts (anchors,
        kept ANCHOR_GAP positions apart); fields left off the end are empty.  ``lang``: the
        page's language (indexer/languages.py; None: unknown), stored and analysed with."""
        if len(fields) > N_FIELDS:
            raise ValueError(f"{len(fields)} fields given, the index has {N_FIELDS}")
        fields = [*fields, *([""] * (N_FIELDS - len(fields)))]
        if self.doc_ids.count and url_id <= self.doc_ids.last:
            raise ValueError("documents must be added in increasing URL ID")
        ordinal = self.doc_ids.count
        self.doc_ids.append(url_id)
        lens = []
        self.hits.use(analysis_language(lang))
        for f, value in enumerate(fields):
            if isinstance(value, str):
                wids, positions, _ = self.hits.field(value, 0, MAX_FIELD_TOKENS)
            else:
                wids, positions = self.hits.fields(list(value), MAX_FIELD_TOKENS)
            wids, positions = self.hits.in_field(f, wids, positions)  # operator_fields
            self.barrels.add(ordinal, f, wids, positions)
            lens.append(int(self.hits.counted(wids).sum()))  # stop words are no length
        self._add_lens(lens)
        raw = text.encode("utf-8", "surrogatepass")
        self.text_bytes += len(raw)
        blob = zlib.compress(raw, DOCSTORE_LEVEL)
        self._store.write(blob)
        self._store_off.append(self._store_off.last + len(blob))
        self._frags_off.append(self._frags_off.last)
        self._prior.append(0.0)
        head = _head(url, title, lang)
        self._head.write(head)
        self._head_off.append(self._head_off.last + len(head))
        self.langs[lang or ""] = self.langs.get(lang or "", 0) + 1
        self.hosts.setdefault(host, BitMap()).add(url_id)
        for s in anchor_sources:
            self._pairs.extend((s, url_id))

    def add_copied_document(self, url_id: int, *, url: str, title: str, text_blob: bytes,
                            field_lens: Sequence[int], host: str | None = None,
                            anchor_sources: Sequence[int] = (), frags_blob: bytes = b"",
                            lang: str | None = None, prior: float = 0.0) -> int:
        """A document whose text is already compressed (a merge's copy, or a worker's batch):
        its hits come separately through ``barrels.add_hits`` / ``barrels.add_block``.
        Returns its ordinal."""
        if self.doc_ids.count and url_id <= self.doc_ids.last:
            raise ValueError("documents must be added in increasing URL ID")
        ordinal = self.doc_ids.count
        self.doc_ids.append(url_id)
        self._add_lens([int(x) for x in field_lens])
        self._store.write(text_blob)
        self._store_off.append(self._store_off.last + len(text_blob))
        self._frags.write(frags_blob)
        self._frags_off.append(self._frags_off.last + len(frags_blob))
        self._prior.append(prior)
        head = _head(url, title, lang)
        self._head.write(head)
        self._head_off.append(self._head_off.last + len(head))
        self.langs[lang or ""] = self.langs.get(lang or "", 0) + 1
        if host is None:
            host = (urlsplit(url).hostname or "").lower()
        self.hosts.setdefault(host, BitMap()).add(url_id)
        for s in anchor_sources:
            self._pairs.extend((s, url_id))
        return ordinal

    def add_anchor_pairs(self, pairs: np.ndarray) -> None:
        self._pairs.extend(np.asarray(pairs, dtype=np.int64).ravel().tolist())

    def add_drop(self, url_id: int) -> None:
        """This URL had a version in an older segment and has none now."""
        self.drops.add(url_id)

    def _inverted(self, procs: int) -> Iterator[np.ndarray]:
        """Every barrel's sorted hit chunks, each barrel's runs deleted once read.  With
        ``procs`` bit-packing processes, ``procs * (ENCODE_IN_FLIGHT + 1)`` chunks' postings
        are alive at once (waiting here, or being packed): each chunk gets that share of the
        budget."""
        share = 1 if procs <= 1 else procs * (ENCODE_IN_FLIGHT + 1)
        for b in sorted(self.barrels.runs):
            yield from invert(self.barrels.runs[b], self.ram_bytes // share)
            for p in self.barrels.runs[b]:
                p.unlink(missing_ok=True)
                words_path(p).unlink(missing_ok=True)

    def finish(self, procs: int = 1) -> dict[str, Any]:
        """Invert the barrels, write every file, fsync; returns meta.json's content.
        ``procs``: processes that bit-pack the postings (:meth:`_Postings.write`)."""
        d = self.directory
        self.barrels.close()
        self._store.close()
        self._head.close()
        self._frags.close()
        n_terms = len(self.lexicon)
        lex = np.zeros((n_terms, 2 + 3 * len(STREAMS)), dtype=np.int64)
        files = {s: (open(d / f"post_{s}.bin", "wb"), open(d / f"post_{s}_w.bin", "wb"))  # noqa: SIM115
                 for s in STREAMS}
        streams = {s: _Stream(*files[s]) for s in STREAMS}
        # The field lengths first: the postings' block impacts read them (mapped, here and in
        # the encoder processes), and the file is what the segment keeps anyway.
        self._lens.save(d / "field_lens.npy", N_FIELDS)
        lens = np.load(d / "field_lens.npy", mmap_mode="r")
        impacts = _Column(d / "post_impacts.raw", "i")
        out = _Postings(streams, lex, lens, impacts)
        scratch = d / "barrels"
        out.write(self._inverted(procs), procs, d / "field_lens.npy")
        for fh, wh in files.values():
            fh.close()
            wh.close()
        shutil.rmtree(scratch, ignore_errors=True)
        terms = list(self.lexicon)
        # Words with no hit left (a merge drops dead documents) leave the lexicon.
        order = sorted(np.flatnonzero(lex[:, DF] > 0).tolist(), key=terms.__getitem__)
        n_terms = len(order)
        encoded = [terms[i].encode("utf-8", "surrogatepass") for i in order]
        offsets = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum([len(t) for t in encoded], out=offsets[1:])
        np.save(d / "terms.npy", np.frombuffer(b"".join(encoded), dtype=np.uint8))
        np.save(d / "term_off.npy", offsets)
        np.save(d / "lexicon.npy", lex[np.asarray(order, dtype=np.int64)] if n_terms
                else lex[:0])
        # Rows follow the docs stream's blocks (words in barrel order, as they were written).
        impacts.save(d / "post_impacts.npy", 2 * N_FIELDS)
        docs = BitMap()
        for ids in self.doc_ids.chunks():
            docs.update(ids.tolist())
        docs.run_optimize()
        docs.shrink_to_fit()
        self.doc_ids.save(d / "doc_ids.npy")
        self._store_off.save(d / "store_off.npy")
        self._frags_off.save(d / "frags_off.npy")
        self._head_off.save(d / "head_off.npy")
        self._prior.save(d / "prior.npy")
        (d / "docs.roar").write_bytes(docs.serialize())
        (d / "drops.roar").write_bytes(self.drops.serialize())
        hosts_index: dict[str, list[int]] = {}
        with open(d / "hosts.roar", "wb") as fh:
            pos = 0
            for host in sorted(self.hosts):
                blob = self.hosts[host].serialize()
                fh.write(blob)
                hosts_index[host] = [pos, len(blob)]
                pos += len(blob)
        self._pairs.save(d / "anchor_pairs.npy", 2)
        del lens, out  # the map, before the file is fsynced and the directory renamed
        meta = {
            "doc_count": self.doc_ids.count,
            "term_count": n_terms,
            "hit_count": int(self.barrels.hits_total),
            "text_bytes": self.text_bytes,
            "field_length_sums": self._len_sums,
            "fields": list(FIELDS),
            "hosts": hosts_index,
            "analyzer_version": analyzer_version(self.settings),
            "index_settings": self.settings.recorded(),
            "block_impacts": True,
            "langs": dict(sorted(self.langs.items())),  # documents per language ("": unknown)
        }
        checked.write_json(d / "meta.json", META_FILE, meta)
        for p in d.iterdir():
            _fsync_file(p)
        return meta
