"""Reading one index segment: what the searcher, the top-k collector and a merge use.

``SegmentReader(directory)`` checks meta.json and the analyzer version
(:mod:`indexer.segment_format`), then memory-maps the segment's files: a word's lexicon row,
its postings, positions and block impacts, a document's head, stored text and fragments, the
docs / drops / per-host bitmaps.  A segment is immutable, so the reader never sees it change.
"""

from __future__ import annotations

import itertools
import zlib
from bisect import bisect_left
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path

import numpy as np
from pyroaring import BitMap

from websift.indexer.codec import block_bits, decode, decode_at, delta_decode_groups
from websift.indexer.errors import REBUILD_ADVICE, IndexAnalyzerMismatch, IndexCorrupt
from websift.indexer.segment_format import (
    CF,
    COL,
    DF,
    SEP,
    STREAMS,
    analysis_mismatch,
    read_meta,
    recorded_settings,
)
from websift.indexer.settings import (
    BLOCK,
    DEFAULT_INDEX_SETTINGS,
    FIELDS,
    LEGACY_FIELDS,
    LEXICON_CHUNK,
    LEXICON_DICT_MAX,
    N_FIELDS,
    IndexSettings,
)


def _map(path: Path) -> np.ndarray:
    """A read-only memory map of a raw file, as a plain ndarray (no memmap overhead per slice)."""
    if path.stat().st_size == 0:
        return np.zeros(0, dtype=np.uint8)
    return np.asarray(np.memmap(path, dtype=np.uint8, mode="r"))


def _load(path: Path) -> np.ndarray:
    return np.asarray(np.load(path, mmap_mode="r"))


# lang_ordinals: a language of at most this many bytes is read as one int64 (its length above)
_LANG_KEY_BYTES = 7
_CUT = b"\xff"  # never in UTF-8 (nor in surrogatepass's): what _words cuts the words at


class _Terms(Sequence[bytes]):
    """The sorted words of a segment, as a sequence of bytes for binary search."""

    def __init__(self, blob: bytes, offsets: np.ndarray) -> None:
        self._blob = blob
        self._off = offsets

    def __len__(self) -> int:
        return len(self._off) - 1

    def __getitem__(self, i: int) -> bytes:  # type: ignore[override]
        return self._blob[self._off[i] : self._off[i + 1]]

    def all(self) -> list[bytes]:
        """Every word in order (:func:`_words`)."""
        return _words(self._blob, self._off)

    def chunks(self, size: int) -> Iterator[tuple[int, list[bytes]]]:
        """(first row, its words and those after it) of ``size`` words at a time, in order:
        each a short call into C, so a thread opening a large lexicon lets the others (a
        server's searches) take the GIL between them."""
        for lo in range(0, len(self), size):
            yield lo, _words(self._blob, self._off[lo: lo + size + 1])


def _words(blob: bytes, off: np.ndarray) -> list[bytes]:
    """The words at ``off`` (each from one offset to the next) in ``blob``.  UTF-8 never holds
    the byte 0xFF: they are cut by one ``bytes.split`` at a 0xFF put between each two (about
    half the time of slicing them one by one in Python, which words holding one anyway
    still are)."""
    if len(off) < 2:
        return []
    lo, hi = int(off[0]), int(off[-1])
    if _CUT not in blob[lo:hi]:
        cut = np.insert(np.frombuffer(blob, dtype=np.uint8)[lo:hi],
                        (off[1:-1] - lo).astype(np.intp), _CUT[0])
        return cut.tobytes().split(_CUT)
    # indexing the offsets array one element at a time costs a numpy scalar each
    return [blob[a:b] for a, b in itertools.pairwise(off.tolist())]


_INT32_MAX = int(np.iinfo(np.int32).max)


def posting_starts(tfs: np.ndarray, occurrences: int = -1) -> np.ndarray:
    """Where each posting's positions start in its word's position stream: the exclusive
    cumulative sum of its tf matrix's row sums (positions are stored by posting, then field),
    int32 when the word's ``occurrences`` (its tf matrix summed; -1: count them) fit, as they
    do but for a word of more than 2**31 occurrences in one segment, else int64.  Column by
    column: a row sum over a few narrow columns is slow in numpy.  A row sum fits int32: a
    field holds fewer than 2**25 positions."""
    per = np.zeros(len(tfs), dtype=np.int32)
    for f in range(tfs.shape[1]):
        np.add(per, tfs[:, f], out=per, casting="unsafe")
    if occurrences < 0:
        occurrences = int(per.sum(dtype=np.int64))
    starts = np.cumsum(per, dtype=starts_type(occurrences))
    return np.subtract(starts, per, out=starts)


def starts_type(occurrences: int) -> type[np.signedinteger]:
    """The type of :func:`posting_starts` for a word of ``occurrences`` in the segment."""
    return np.int32 if occurrences <= _INT32_MAX else np.int64


def ordinal_type(n_docs: int) -> type[np.signedinteger]:
    """The type of a segment's ordinals in decoded postings: int32 for a segment of fewer
    than 2**31 pages (every one), else int64.  Shifting them into occurrence keys
    (indexer/postings.py) needs int64 first."""
    return np.int32 if n_docs <= _INT32_MAX else np.int64


_READER_SERIALS = itertools.count()


def hosts_under(reversed_names: Sequence[str], domain: str) -> list[str]:
    """The hosts that are ``domain`` or one of its subdomains, of host names given reversed
    (``org.python.docs`` as ``gro.nohtyp.scod``) and sorted: by binary search, so the cost
    does not grow with the number of hosts.  The subdomains, reversed, are the names that
    begin with the reversed domain and ``"."``, and ``"/"`` is the character after ``"."``."""
    rev = domain[::-1]
    at = bisect_left(reversed_names, rev)
    exact = [domain] if at < len(reversed_names) and reversed_names[at] == rev else []
    lo, hi = bisect_left(reversed_names, rev + "."), bisect_left(reversed_names, rev + "/")
    return exact + [n[::-1] for n in reversed_names[lo:hi]]


class SegmentReader:
    """A read-only, memory-mapped segment."""

    def __init__(self, directory: Path, *, outdated_ok: bool = False) -> None:
        """IndexAnalyzerMismatch when another analyzer version built the segment, but with
        ``outdated_ok`` (a server, while ``websift index`` rebuilds the index: its queries
        are analysed as this websift analyses, and words the analysis changed may not be
        found): then ``outdated`` says so."""
        self.directory = directory
        self.name = directory.name
        # Unique to this opened reader in the process (a name may come back with other
        # contents, an ``id`` be reused): what caches shared across generations key by.
        self.serial = next(_READER_SERIALS)
        self.meta = meta = read_meta(directory)
        self.index_settings = recorded_settings(directory.name, meta)
        self.outdated = analysis_mismatch(directory.name, meta, self.index_settings)
        if self.outdated is not None and not outdated_ok:
            raise IndexAnalyzerMismatch(self.outdated)
        try:
            self._terms = _Terms(np.load(directory / "terms.npy").tobytes(),
                                 np.load(directory / "term_off.npy"))
            self.lexicon = _load(directory / "lexicon.npy")
            self.doc_ids = np.load(directory / "doc_ids.npy")
            self.field_lens = np.load(directory / "field_lens.npy")
            self._store_off = np.load(directory / "store_off.npy")
            self._store = _map(directory / "store.bin")
            self._head_off = np.load(directory / "head_off.npy")
            self._head = _map(directory / "head.bin")
            # a hit's head read through memoryviews: Python ints and a buffer slice, no numpy
            # scalar or array made per hit
            self._head_view = self._head.data
            self._head_off_view = self._head_off.data
            has_frags = (directory / "frags_off.npy").exists()
            self._frags_off = np.load(directory / "frags_off.npy") if has_frags else None
            self._frags = _map(directory / "frags.bin") if has_frags else None
            self._streams = {s: (_map(directory / f"post_{s}.bin"),
                                 np.fromfile(directory / f"post_{s}_w.bin", dtype=np.uint8))
                             for s in STREAMS}
            self.docs = BitMap.deserialize((directory / "docs.roar").read_bytes())
            self.drops = BitMap.deserialize((directory / "drops.roar").read_bytes())
            self._hosts_blob = (directory / "hosts.roar").read_bytes()
            self._reversed_hosts: list[str] | None = None  # hosts_under's sorted list
            # lang_ordinals' (language -> code, each document's code), read on first use
            self._lang_codes: tuple[dict[str, int], np.ndarray] | None = None
            self.anchor_pairs = np.load(directory / "anchor_pairs.npy")
            # Provisional priors (indexer/segment_writer.py); segments written before have none.
            self.prior = (np.load(directory / "prior.npy") if (directory / "prior.npy").exists()
                          else np.zeros(len(self.doc_ids), dtype=np.float32))
            # Segments written before version 3 have none: the searcher derives a word's
            # block bounds from its decoded postings instead.
            self._impacts = (_load(directory / "post_impacts.npy")
                             if meta.get("block_impacts") else None)
        except (OSError, ValueError) as exc:
            raise IndexCorrupt(f"segment {directory.name}: unreadable file ({exc})") from None
        self.doc_count = int(meta["doc_count"])
        self.ordinals = ordinal_type(len(self.doc_ids))  # the type of decoded ordinals
        # The tf columns as written (segments before "fields" have LEGACY_FIELDS); a field of
        # FIELDS the segment lacks reads as zero tf and zero length.
        stored = tuple(meta.get("fields", LEGACY_FIELDS))
        if not set(stored) <= set(FIELDS) or len(self.field_lens.shape) != 2 \
                or self.field_lens.shape[1] != len(stored):
            raise IndexCorrupt(f"segment {directory.name}: fields {list(stored)} do not match "
                               f"its files or this websift's fields {list(FIELDS)}")
        self.n_fields = len(stored)
        self.field_columns = np.array([FIELDS.index(f) for f in stored], dtype=np.int64)
        self._same_fields = stored == FIELDS
        if not self._same_fields:
            self.field_lens = self._pad(self.field_lens)
        # A hash table over the sorted words when it is small enough; binary search otherwise.
        n = len(self._terms)
        self._term_dict: dict[bytes, int] | None = None
        if n <= LEXICON_DICT_MAX:
            self._term_dict = {}
            for first, words in self._terms.chunks(LEXICON_CHUNK):
                self._term_dict.update(zip(words, range(first, first + len(words)),
                                           strict=True))
        # Whether term_row is one hash lookup (else a binary search in Python): a cache of the
        # words a segment lacks pays only where it is not (indexer/postings.py).
        self.lexicon_hashed = self._term_dict is not None
        self.field_length_sums = self._pad(
            np.asarray(meta["field_length_sums"], dtype=np.float64)[None, :])[0]

    def _pad(self, matrix: np.ndarray) -> np.ndarray:
        """A (rows, stored fields) matrix as (rows, FIELDS), zero in the fields not stored."""
        if self._same_fields:
            return matrix
        out = np.zeros((matrix.shape[0], N_FIELDS), dtype=matrix.dtype)
        out[:, self.field_columns] = matrix
        return out

    def term_row(self, term: str) -> int:
        """Row of ``term`` in the lexicon, or -1."""
        return self.row_of_key(term.encode("utf-8", "surrogatepass"))

    def row_of_key(self, key: bytes) -> int:
        """Row of the word whose UTF-8 (surrogatepass) bytes are ``key``, or -1: one word
        looked up in many segments is encoded (and its bytes hashed) once."""
        if self._term_dict is not None:
            return self._term_dict.get(key, -1)
        i = bisect_left(self._terms, key)
        if i < len(self._terms) and self._terms[i] == key:
            return i
        return -1

    def _decode(self, stream: str, row: int, n: int) -> np.ndarray:
        data, widths = self._streams[stream]
        c = COL[stream]
        r = self.lexicon[row]
        return decode(data, widths, int(r[c]), int(r[c + 1]), block0=int(r[c + 2]), n=n)

    def postings(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        """Doc ordinals (ascending, :attr:`ordinals`: int32) and the (df, fields) tf matrix
        (uint32) of a lexicon row."""
        df = int(self.lexicon[row, DF])
        docs = np.cumsum(self._decode("docs", row, df), dtype=self.ordinals)
        tfs = self._decode("tfs", row, df * self.n_fields).reshape(df, self.n_fields)
        return docs, self._pad(tfs)

    def positions(self, row: int, tfs: np.ndarray) -> np.ndarray:
        """Positions of a row, grouped by (doc, field) in the order of ``tfs.ravel()`` (the
        (df, FIELDS) matrix of :meth:`postings`: a field the segment lacks has none)."""
        cf = int(self.lexicon[row, CF])
        if not self._same_fields:  # stored in (doc, stored field) order, the same groups
            tfs = tfs[:, self.field_columns]
        return delta_decode_groups(self._decode("pos", row, cf), tfs.ravel())

    def impacts(self, row: int) -> np.ndarray | None:
        """The block impacts of a lexicon row (:func:`indexer.segment_writer.block_impacts`), or
        None (an older segment)."""
        if self._impacts is None:
            return None
        k0 = int(self.lexicon[row, COL["docs"] + 2])
        nb = (int(self.lexicon[row, DF]) + BLOCK - 1) // BLOCK
        if k0 + nb > len(self._impacts):
            raise IndexCorrupt(f"segment {self.name}: block impacts end before the postings")
        return np.asarray(self._impacts[k0 : k0 + nb])

    def position_blocks(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        """(width, first bit) of each block of a row's positions (codec.block_bits)."""
        _data, widths = self._streams["pos"]
        c = COL["pos"]
        r = self.lexicon[row]
        return block_bits(widths, int(r[c]), block0=int(r[c + 2]), n=int(r[CF]))

    def positions_of(self, row: int, tfs: np.ndarray, starts: np.ndarray, *,
                     blocks: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """Positions of some of the row's postings only, grouped by (posting, field) in the
        order of ``tfs.ravel()``, their tf rows (true values), where ``starts`` are where
        each one's positions start (:func:`posting_starts` of the row's tf matrix): the rest
        of the row's positions are never decoded.  ``blocks``: :meth:`position_blocks`, if the
        caller keeps them."""
        lengths2 = tfs.astype(np.int64)
        first = (starts[:, None] + (np.cumsum(lengths2, axis=1) - lengths2)).ravel()
        lengths = lengths2.ravel()
        total = int(lengths.sum())
        if total == 0:
            return np.zeros(0, dtype=np.int64)
        held = lengths > 0  # most (posting, field) groups are empty
        idx = np.repeat((first - (np.cumsum(lengths) - lengths))[held], lengths[held]) + np.arange(
            total, dtype=np.int64)
        data, widths = self._streams["pos"]
        c = COL["pos"]
        r = self.lexicon[row]
        values = decode_at(data, widths, int(r[c]), block0=int(r[c + 2]),
                           n=int(r[CF]), idx=idx, blocks=blocks)
        return delta_decode_groups(values, lengths)

    def head(self, ordinal: int) -> dict[str, str]:
        """URL, title and language (``""``: unknown) of a document."""
        off = self._head_off_view
        blob = self._head_view[off[ordinal] : off[ordinal + 1]]
        url, sep, rest = str(blob, "utf-8", "surrogatepass").partition(SEP)
        if not sep:
            raise IndexCorrupt(f"segment {self.name}: stored document {ordinal} is corrupt")
        title, _, lang = rest.partition(SEP)
        return {"url": url, "title": title, "lang": lang}

    def lang_ordinals(self, match: Collection[str | None]) -> np.ndarray:
        """The ordinals of the documents whose stored language (``""``: unknown, as
        :meth:`head` reads it) is in ``match``, ascending.  The heads are read once per
        reader (a language code per document), then kept: a reader serves generation after
        generation."""
        if self._lang_codes is None:
            self._lang_codes = self._read_lang_codes()
        names, codes = self._lang_codes
        wanted = [code for lang, code in names.items() if lang in match]
        return np.flatnonzero(np.isin(codes, wanted))

    def _read_lang_codes(self) -> tuple[dict[str, int], np.ndarray]:
        """(language -> code, each document's code) from the stored heads (``URL SEP title
        [SEP language]``), in array passes over head.bin: a head's language is what follows
        its second separator.  A language of more than :data:`_LANG_KEY_BYTES` bytes (none
        that lingua or a page's ``lang`` gives) is read head by head."""
        blob, off = self._head, np.asarray(self._head_off, dtype=np.int64)
        starts, ends = off[:-1], off[1:]
        seps = np.flatnonzero(blob == ord(SEP))
        first = np.searchsorted(seps, starts)
        seps_end = np.append(seps, np.iinfo(np.int64).max)  # past every head
        bad = np.flatnonzero(seps_end[first] >= ends)
        if len(bad):
            raise IndexCorrupt(f"segment {self.name}: stored document {int(bad[0])} is corrupt")
        second = seps_end[first + 1]
        begin = np.where(second < ends, second + 1, ends)  # no second separator: ""
        length = ends - begin
        width = int(length.max(initial=0))
        if width > _LANG_KEY_BYTES:
            return self._read_lang_codes_slowly()
        # Each language as one integer: its bytes, little end first, and its length on top.
        key = length << (8 * _LANG_KEY_BYTES)
        for j in range(width):
            has = length > j
            key[has] |= blob[begin[has] + j].astype(np.int64) << (8 * j)
        uniq, first_doc, codes = np.unique(key, return_index=True, return_inverse=True)
        names = {bytes(blob[begin[d]:ends[d]]).decode("utf-8", "surrogatepass"): code
                 for code, d in enumerate(first_doc.tolist())}
        if len(names) != len(uniq):
            raise IndexCorrupt(f"segment {self.name}: stored languages are not distinct")
        return names, codes.astype(np.int32).reshape(-1)

    def _read_lang_codes_slowly(self) -> tuple[dict[str, int], np.ndarray]:
        blob = self._head.tobytes()
        sep = SEP.encode()
        names: dict[str, int] = {}
        codes = np.empty(len(self._head_off) - 1, dtype=np.int32)
        for i, (a, b) in enumerate(itertools.pairwise(self._head_off.tolist())):
            parts = blob[a:b].split(sep, 2)
            if len(parts) < 2:
                raise IndexCorrupt(f"segment {self.name}: stored document {i} is corrupt")
            lang = parts[2].decode("utf-8", "surrogatepass") if len(parts) == 3 else ""
            codes[i] = names.setdefault(lang, len(names))
        return names, codes

    def urls(self) -> list[str]:
        """The URL of every document, in ordinal order (one pass over the stored heads)."""
        blob = self._head.tobytes()
        offsets = self._head_off.tolist()
        sep = SEP.encode()
        return [blob[a:b].partition(sep)[0].decode("utf-8", "surrogatepass")
                for a, b in itertools.pairwise(offsets)]

    def text_blob(self, ordinal: int) -> bytes:
        """The stored (compressed) snippet text, as written."""
        return self._store[self._store_off[ordinal] : self._store_off[ordinal + 1]].tobytes()

    def frags_blob(self, ordinal: int) -> bytes:
        """The stored (compressed) fragments of a document, b"" when it has none."""
        if self._frags is None or self._frags_off is None:
            return b""
        return self._frags[self._frags_off[ordinal] : self._frags_off[ordinal + 1]].tobytes()

    def stream(self, name: str) -> tuple[np.ndarray, np.ndarray, int]:
        """(data, block widths, lexicon column of its byte start) of a postings stream."""
        data, widths = self._streams[name]
        return data, widths, COL[name]

    def text(self, ordinal: int) -> str:
        """The text kept for snippets."""
        blob = self._store[self._store_off[ordinal] : self._store_off[ordinal + 1]].tobytes()
        try:
            return zlib.decompress(blob).decode("utf-8", "surrogatepass")
        except (zlib.error, UnicodeError) as exc:
            raise IndexCorrupt(f"segment {self.name}: stored document {ordinal} is corrupt "
                               f"({exc})") from None

    def hosts(self) -> list[str]:
        return list(self.meta["hosts"])

    def langs(self) -> dict[str, int]:
        """Documents per language (``""``: unknown); empty for a segment from before."""
        return {str(k): int(v) for k, v in self.meta.get("langs", {}).items()}

    def hosts_under(self, domain: str) -> list[str]:
        """This segment's hosts that are ``domain`` or one of its subdomains (``site:``);
        :func:`hosts_under` over its host names reversed and sorted (listed on first use)."""
        names = self._reversed_hosts
        if names is None:
            names = self._reversed_hosts = sorted(h[::-1] for h in self.meta["hosts"])
        return hosts_under(names, domain)

    def host_docs(self, host: str) -> BitMap:
        loc = self.meta["hosts"].get(host)
        if loc is None:
            return BitMap()
        start, length = loc
        return BitMap.deserialize(self._hosts_blob[start : start + length])

    def terms(self) -> list[str]:
        return [t.decode("utf-8", "surrogatepass") for t in self._terms.all()]


def query_settings(segments: Sequence[SegmentReader], expected: IndexSettings | None = None
                   ) -> IndexSettings:
    """The settings queries of ``segments`` are analysed with: those they were built with,
    whatever the environment says now (the defaults for none).  ``expected``: an indexing run's,
    which its older segments must share.  IndexAnalyzerMismatch when two differ in
    IndexSettings.query_part (a query analysed one way would find nothing in the others)."""
    first = expected or (segments[0].index_settings if segments else DEFAULT_INDEX_SETTINGS)
    want = first.query_part()
    for seg in segments:
        got = seg.index_settings.query_part()
        if got != want:
            diff = ", ".join(f"{k}={got[k]!r} (not {want[k]!r})" for k in got if got[k] != want[k])
            raise IndexAnalyzerMismatch(
                f"segment {seg.name} was analysed with {diff}: {REBUILD_ADVICE}")
    return first


def other_settings(segments: Sequence[SegmentReader], settings: IndexSettings) -> list[str]:
    """One line per segment built with other settings than ``settings`` (ones a run may mix:
    the analysis is :func:`query_settings`'), naming them."""
    want = settings.recorded()
    out = []
    for seg in segments:
        got = seg.index_settings.recorded()
        keys = [k for k in got if got[k] != want.get(k)]
        if keys:
            then = ", ".join(f"{k}={got[k]!r}" for k in keys)
            now = ", ".join(f"{k}={want.get(k)!r}" for k in keys)
            out.append(f"segment {seg.name} was built with {then}; this run's pages get {now} "
                       "(--rebuild gives every page this run's settings)")
    return out
