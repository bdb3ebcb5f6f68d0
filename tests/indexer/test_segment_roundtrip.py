"""A segment written then read back gives the same postings (property test), through every
path of the writer: several forward barrel runs, several barrels, and inversion by merging
sorted runs when a barrel does not fit the memory budget."""

from __future__ import annotations

from collections import defaultdict
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from websift.indexer.analysis import Analyzer
from websift.indexer.codec import (
    _pack_octets,
    decode,
    delta_decode_groups,
    delta_encode_groups,
    encode,
)
from websift.indexer.segment import SegmentReader, _Terms
from websift.indexer.segment_writer import SegmentWriter
from websift.indexer.settings import ANCHOR_GAP, FIELDS, N_FIELDS

WORDS = ["alpha", "beta", "gamma", "delta", "the", "of", "unittest.mock", "os.path.join",
         "running", "runs", "x", "zeta_eta", "Theta", "iota"]

field_text = st.lists(st.sampled_from(WORDS), max_size=12).map(" ".join)
document = st.tuples(field_text, field_text, field_text, field_text,
                     st.lists(field_text, max_size=3))


@given(values=st.lists(st.integers(0, 2**32 - 1), max_size=600),
       cuts=st.lists(st.integers(0, 600), max_size=6))
@settings(max_examples=60, deadline=None)
def test_bitpacking_round_trips(values: list[int], cuts: list[int]) -> None:
    bounds = sorted({0, len(values), *(c for c in cuts if c <= len(values))})
    lengths = np.diff(bounds)
    arr = np.asarray(values, dtype=np.uint64)
    enc = encode(arr, lengths)
    for g, (a, b) in enumerate(pairwise(bounds)):
        got = decode(enc.data, enc.widths, int(enc.byte_offsets[g]), int(enc.byte_offsets[g + 1]),
                     block0=int(enc.block_offsets[g]), n=b - a)
        assert got.tolist() == values[a:b]
    deltas = delta_encode_groups(arr.astype(np.int64), lengths)
    assert delta_decode_groups(deltas, lengths).tolist() == values
    # empty groups anywhere (a word absent from most of a page's fields) change nothing
    spaced = np.insert(lengths, np.arange(len(lengths) + 1), 0)
    assert delta_decode_groups(delta_encode_groups(arr.astype(np.int64), spaced),
                               spaced).tolist() == values


@given(widths=st.lists(st.integers(0, 32), min_size=1, max_size=9),
       seed=st.integers(0, 2**32 - 1), tail=st.integers(1, 128), cuts=st.integers(0, 3))
@settings(max_examples=80, deadline=None)
def test_blocks_of_mixed_widths_round_trip(widths: list[int], seed: int, tail: int,
                                           cuts: int) -> None:
    """Groups whose blocks have different widths (every width 0-32, each block's values below
    its own power of two, the last block partial) decode as encoded: the by-width unpacking
    of codec.decode, also when a group is not the stream's last."""
    rng = np.random.default_rng(seed)
    n = (len(widths) - 1) * 128 + tail
    high = np.repeat(np.array([1 << w for w in widths], dtype=np.uint64), 128)[:n]
    values = (rng.random(n) * high.astype(np.float64)).astype(np.uint64)
    values = np.minimum(values, high - np.uint64(1))
    lengths = np.array([n] + [5] * cuts, dtype=np.int64)  # short groups after it
    arr = np.concatenate([values, rng.integers(0, 1 << 20, 5 * cuts).astype(np.uint64)])
    enc = encode(arr, lengths)
    got = decode(enc.data, enc.widths, int(enc.byte_offsets[0]), int(enc.byte_offsets[1]),
                 block0=0, n=n)
    assert got.dtype == np.uint32
    assert got.tolist() == values.tolist()


@given(w=st.integers(1, 32), seed=st.integers(0, 2**32 - 1), rows=st.integers(0, 40))
@settings(max_examples=100, deadline=None)
def test_octets_pack_as_little_endian_bit_planes(w: int, seed: int, rows: int) -> None:
    """The on-disk layout of a block: 8 values of w bits as w bytes, value j at bits j*w...
    in little-endian bit order (what ``packbits`` of the values' bits in order gives), also
    for the values that cross a 64-bit lane of the packer."""
    vals = np.random.default_rng(seed).integers(0, 1 << w, size=(rows, 8), dtype=np.uint64)
    bits = (vals[:, :, None] >> np.arange(w, dtype=np.uint64)) & np.uint64(1)
    want = np.packbits(bits.astype(np.uint8).reshape(rows, 8 * w), axis=1, bitorder="little")
    assert np.array_equal(_pack_octets(vals.astype(np.uint32), w), want.ravel())


def _expected(docs: list[tuple[str, str, str, str, list[str]]]
              ) -> dict[str, dict[int, list[list[int]]]]:
    """term -> ordinal -> per field, sorted positions (computed with the plain analyzer)."""
    an = Analyzer()
    out: dict[str, dict[int, list[list[int]]]] = defaultdict(dict)
    for ordinal, (*texts, anchors) in enumerate(docs):
        per_field: list[tuple[list[str], list[int]]] = [an.positions(t)[:2] for t in texts]
        terms: list[str] = []
        positions: list[int] = []
        pos = 0
        for a in anchors:
            t, p, pos = an.positions(a, pos)
            terms += t
            positions += p
            pos += ANCHOR_GAP
        per_field.append((terms, positions))
        for f, (terms, positions) in enumerate(per_field):
            for t, p in zip(terms, positions, strict=True):
                out[t].setdefault(ordinal, [[] for _ in FIELDS])[f].append(p)
    return out


@pytest.mark.slow
@given(docs=st.lists(document, min_size=1, max_size=12),
       ram=st.sampled_from([64, 400, 1 << 20]), barrel_words=st.sampled_from([2, 5, 1 << 16]))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_segment_round_trip(tmp_path: Path, docs: list[tuple[str, str, str, str, list[str]]],
                            ram: int, barrel_words: int) -> None:
    directory = tmp_path / f"seg-{len(list(tmp_path.iterdir()))}"
    writer = SegmentWriter(directory, ram_bytes=ram, barrel_words=barrel_words)
    for i, (title, headings, body, url, anchors) in enumerate(docs):
        writer.add_document(10 + 3 * i, host="h.example", url=f"http://h.example/{i}",
                            title=title, text=body, fields=[title, headings, body, url, anchors],
                            anchor_sources=[1] if anchors else [])
    writer.finish()
    assert not (directory / "barrels").exists()
    reader = SegmentReader(directory)
    expected = _expected(docs)
    assert sorted(reader.terms()) == sorted(expected)
    assert reader.doc_ids.tolist() == [10 + 3 * i for i in range(len(docs))]
    for term, by_doc in expected.items():
        row = reader.term_row(term)
        assert row >= 0
        ordinals, tfs = reader.postings(row)
        assert ordinals.tolist() == sorted(by_doc)
        want_tfs = [[len(by_doc[o][f]) for f in range(N_FIELDS)] for o in sorted(by_doc)]
        assert tfs.tolist() == want_tfs
        want_pos = [p for o in sorted(by_doc) for f in range(N_FIELDS) for p in by_doc[o][f]]
        assert reader.positions(row, tfs).tolist() == want_pos
    assert reader.term_row("no-such-term") == -1
    for i, (title, _, body, _, _) in enumerate(docs):
        assert reader.head(i)["title"] == title
        assert reader.text(i) == body


@pytest.mark.slow
@given(first=st.lists(document, min_size=1, max_size=8), second=st.lists(document, max_size=8),
       overlap=st.integers(0, 8), ram=st.sampled_from([200, 1 << 20]))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_merged_segments_equal_a_segment_built_from_the_live_documents(
        tmp_path: Path, first: list[tuple[str, str, str, str, list[str]]],
        second: list[tuple[str, str, str, str, list[str]]], overlap: int, ram: int) -> None:
    from websift.indexer.liveness import live_masks
    from websift.indexer.merge import merge_segments

    base = tmp_path / f"m-{len(list(tmp_path.iterdir()))}"
    # The second segment re-indexes the last `overlap` URLs of the first and adds new ones.
    ids_a = list(range(10, 10 + len(first)))
    start_b = max(10, 10 + len(first) - overlap)
    ids_b = list(range(start_b, start_b + len(second)))

    def write(name: str, ids: list[int], docs: list[tuple[str, str, str, str, list[str]]]
              ) -> SegmentReader:
        w = SegmentWriter(base / name, ram_bytes=ram, barrel_words=3)
        for url_id, (title, headings, body, url, anchors) in zip(ids, docs, strict=True):
            w.add_document(url_id, host="h.example", url=f"http://h.example/{url_id}",
                           title=title, text=body, fields=[title, headings, body, url, anchors],
                           anchor_sources=[1] if anchors else [])
        w.finish()
        return SegmentReader(base / name)

    segs = [write("a", ids_a, first), write("b", ids_b, second)]
    live = live_masks(segs)
    merge_segments(segs, live, base / "merged", ram_bytes=ram)
    merged = SegmentReader(base / "merged")
    final = dict(zip(ids_a, first, strict=True))
    final.update(zip(ids_b, second, strict=True))
    ids = sorted(final)
    direct = write("direct", ids, [final[i] for i in ids])
    assert merged.doc_ids.tolist() == direct.doc_ids.tolist() == ids
    assert merged.field_lens.tolist() == direct.field_lens.tolist()
    assert merged.terms() == direct.terms()
    for term in direct.terms():
        a, b = merged.term_row(term), direct.term_row(term)
        da, ta = merged.postings(a)
        db, tb = direct.postings(b)
        assert da.tolist() == db.tolist() and ta.tolist() == tb.tolist()
        assert merged.positions(a, ta).tolist() == direct.positions(b, tb).tolist()
    for o in range(len(ids)):
        assert merged.head(o) == direct.head(o) and merged.text(o) == direct.text(o)
    assert sorted(map(tuple, merged.anchor_pairs.tolist())) == sorted(
        map(tuple, direct.anchor_pairs.tolist()))
    assert merged.host_docs("h.example") == direct.host_docs("h.example")


@pytest.mark.slow
@given(docs=st.lists(document, min_size=1, max_size=12), ram=st.sampled_from([64, 400, 3000]),
       common=st.integers(0, 300))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_segment_files_do_not_depend_on_the_memory_budget(
        tmp_path: Path, docs: list[tuple[str, str, str, str, list[str]]], ram: int,
        common: int) -> None:
    """A small budget cuts common words' hits between documents (indexer/barrels.invert) and
    the postings writer carries them over, with the bit-packing in forked processes or not:
    the files are byte for byte those of one pass."""
    base = tmp_path / f"run-{len(list(tmp_path.iterdir()))}"
    for name, budget, procs in (("small", ram, 1), ("large", 1 << 24, 1), ("forked", ram, 2)):
        writer = SegmentWriter(base / name, ram_bytes=budget)
        for i, (title, headings, text, url, anchors) in enumerate(docs):
            body = f"{text} {'zz ' * ((common * (i + 1)) % 301)}"  # a word of many positions
            writer.add_document(10 + 3 * i, host="h.example", url=f"http://h.example/{i}",
                                title=title, text=body, fields=[title, headings, body, url,
                                                                anchors],
                                anchor_sources=[1] if anchors else [])
        writer.finish(procs)
    for f in sorted((base / "large").iterdir()):
        if f.name != "meta.json":
            assert (base / "small" / f.name).read_bytes() == f.read_bytes(), f.name
            assert (base / "forked" / f.name).read_bytes() == f.read_bytes(), f.name


@given(words=st.lists(st.binary(max_size=6) | st.text(max_size=4).map(str.encode), max_size=40),
       pad=st.integers(0, 3))
@settings(max_examples=200, deadline=None)
def test_a_lexicons_words_are_listed_as_sliced_one_by_one(words: list[bytes], pad: int) -> None:
    """_Terms.all cuts the words at 0xFF bytes it puts between them (none in UTF-8), and slices
    them one by one where a word holds one: either way the words the offsets name."""
    blob = b"\x01" * pad + b"".join(words) + b"\x02" * pad  # offsets need not span the blob
    offsets = np.cumsum([pad, *map(len, words)]).astype(np.int64)
    terms = _Terms(blob, offsets)
    assert terms.all() == words
    assert _Terms(blob, offsets[:0]).all() == []
    for size in (1, 3, 64):
        chunks = list(terms.chunks(size))
        assert [first for first, _ in chunks] == list(range(0, len(words), size))
        assert [w for _, part in chunks for w in part] == words
