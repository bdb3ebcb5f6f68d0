"""What a decoded posting list keeps (indexer/postings.py): narrow types where the values fit,
the same scores as the wide ones, and a size (``nbytes``, what the postings cache counts) that
is what its arrays really hold."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from websift.indexer import bm25f
from websift.indexer.manifest import Manifest
from websift.indexer.postings import PostingList, QueryPostings, nbytes
from websift.indexer.searcher import IndexQuery, Searcher
from websift.indexer.segment import SegmentReader, posting_starts
from websift.indexer.segment_writer import SegmentWriter
from websift.indexer.settings import BLOCK

N_DOCS = 3 * BLOCK + 17  # a few blocks, the last one partial
# A page where "loud" is 300 times in the body (more than a uint8 holds), one of ~200 pages
# holding it; "boom" is 300 times in two of the four pages holding it.
LOUD_PAGE = 5
BOOM_PAGES = (1, 2, 3, 4)


def _segment(path: Path) -> SegmentReader:
    w = SegmentWriter(path, ram_bytes=1 << 20)
    for i in range(1, N_DOCS + 1):
        body = f"common word {'common ' * (i % 4)}page{i}"
        if i % 3 == 0:
            body += " quiet " * (1 + i % 5)
        if i % 2 == 0 or i == LOUD_PAGE:
            body += " loud" * (300 if i == LOUD_PAGE else 1 + i % 7)
        if i in BOOM_PAGES:
            body += " boom" * (300 if i <= 2 else 1)
        title = "common title" if i % 5 == 0 else ""
        w.add_document(i, host="a.example", url=f"http://a.example/{i}", title=title,
                       text=body, fields=[title, "", body, "", []])
    w.finish()
    return SegmentReader(path)


@pytest.fixture(scope="module")
def searcher(tmp_path_factory: pytest.TempPathFactory) -> Searcher:
    seg = _segment(tmp_path_factory.mktemp("lean") / "seg-1")
    return Searcher(Manifest(generation=1, last_seq=0), [seg])


def _made(view: QueryPostings, term: str) -> PostingList:
    """The word's list with everything it makes on first use made."""
    p = view.get(term, 0)
    assert p is not None
    view.block_max(p, 0, p.block_starts())
    p.block_prior_max("prior", p.block_starts(), lambda: np.zeros(len(p.block_starts()) - 1))
    p.find(p.docs[:3])  # the dense map, for a list most pages hold
    view.weighted_tf(p, np.arange(3))
    view.position_keys_in(p, 0, p.docs[:5])  # the positions' starts and blocks
    return p


def _held(p: PostingList) -> int:
    """Bytes of the arrays ``p`` holds, each once."""
    arrays = [p.docs, p.tfs, p.all_tfs, p.all_docs, p.saturated, p.pos_starts, p.dense,
              p.weighted_tf,
              p.block_max, *(p.pos_blocks or ()), *(p.block_prior[1:] if p.block_prior else ()),
              *(p.tf_wide or ()), *(p.all_tf_wide or ())]
    return sum({id(a): a.nbytes for a in arrays if a is not None}.values())


def test_a_decoded_common_list_keeps_narrow_types_and_few_bytes_per_posting(
        searcher: Searcher) -> None:
    view = searcher.postings.query()
    p = _made(view, "common")
    n = len(p.docs)
    assert n == N_DOCS and p.dense is not None
    assert p.docs.dtype == np.int32 and p.all_docs.dtype == np.int32
    assert p.tfs.dtype == np.uint8
    assert p.pos_starts is not None and p.pos_starts.dtype == np.int32
    assert p.pos_blocks is not None  # per block of positions: its width, its first bit
    assert p.pos_blocks[0].dtype == np.uint8 and p.pos_blocks[1].dtype == np.uint32
    assert p.saturated is not None and p.saturated.dtype == np.float32  # as bm25f makes it
    assert p.weighted_tf is not None and p.weighted_tf.dtype == np.uint16
    # ordinal 4 + tf matrix 6 + saturation 4 + positions' start 4 + weighted tfs 2 + dense
    # map 4 (every page holds it), + per block bounds, priors and position blocks' bits.
    assert nbytes(p) / n <= 25.0


def test_nbytes_is_what_the_arrays_hold_and_what_it_said_before_they_were_made(
        searcher: Searcher) -> None:
    for term in ("common", "quiet", "loud", "boom"):
        searcher.postings.decoded.clear()
        view = searcher.postings.query()
        p = view.get(term, 0)  # decoded now, nothing made yet
        assert p is not None and p.saturated is None and p.pos_starts is None
        before = nbytes(p)
        _made(view, term)
        assert nbytes(p) == _held(p) == before, term


def test_occurrence_keys_are_counted_alone(searcher: Searcher) -> None:
    view = searcher.postings.query()
    p = view.get("common", 0)
    assert p is not None
    keys = view.position_keys(p, 0, "common")
    kept = searcher.postings.decoded.get((searcher.postings.serials[0], "\x00pos:common"))
    assert kept is not None and kept.docs is keys
    assert nbytes(kept) == keys.nbytes  # not the list's tf matrix and ordinals again


def test_a_tf_past_255_keeps_the_wide_type_and_every_score_is_the_wide_ones(
        searcher: Searcher) -> None:
    """A matrix with many rows past 255 is kept wide; one with a few keeps them apart
    (indexer/narrow_tfs.py); either way the true tfs, and every score, sum and position made
    of them, are those of the matrix as decoded (uint32)."""
    view = searcher.postings.query()
    seg = searcher.postings.segments[0]
    kept = {"boom": (np.uint16, False), "loud": (np.uint8, True), "quiet": (np.uint8, False),
            "common": (np.uint8, False)}
    for term, (narrow, apart) in kept.items():
        p = view.get(term, 0)
        assert p is not None and p.tfs.dtype == narrow, term
        assert (p.tf_wide is not None) == apart, term
        docs, wide = seg.postings(p.row)  # as decoded: uint32
        assert wide.dtype == np.uint32 and np.array_equal(wide, p.tf_matrix())
        assert p.occurrence_count() == int(wide.sum())
        want = bm25f.term_parts(wide, view.coefficients[0][docs], searcher.postings.k1,
                                np.take(seg.field_lens[:, bm25f.TITLE], docs),
                                searcher.postings.title_share)
        assert np.array_equal(view.saturated(p, 0), want), term  # bit for bit
        every = np.arange(len(docs))
        assert np.array_equal(p.tf_rows(every[::-1]), wide[::-1])
        assert np.array_equal(view.saturated_at(p, 0, every[1::2], docs[1::2]), want[1::2])
        assert np.array_equal(view.weighted_tf(p, every),
                              wide[:, searcher.postings.weighted_field[:6]].sum(axis=1))
        # (the sums of six uint8 tfs, or of a few wide rows under 256 * 6: uint16)
        assert p.weighted_tf is not None
        assert p.weighted_tf.dtype == (np.uint32 if term == "boom" else np.uint16), term
        # Positions read per page and whole, against a list keeping the decoded matrix.
        plain = PostingList(docs, wide, p.row, wide, docs)
        for pages in (docs[:3], docs[::2], docs):
            assert np.array_equal(view.position_keys_in(p, 0, pages),
                                  view.position_keys_in(plain, 0, pages)), term
        keys = view.position_keys(p, 0, term)
        assert np.array_equal(keys, np.sort(view.position_keys_in(plain, 0, docs)))
    loud = view.get("loud", 0)
    assert loud is not None and int(loud.tf_matrix().max()) == 300
    # The page holding it 300 times ranks first, scored as the wide tf gives it.
    docs, wide = seg.postings(loud.row)
    at = int(np.searchsorted(docs, np.flatnonzero(seg.doc_ids == LOUD_PAGE)[0]))
    sat = bm25f.saturate(bm25f.pseudo_tf(wide[at:at + 1], view.coefficients[0][docs[at:at + 1]]),
                         searcher.postings.k1)
    hits = searcher.search(IndexQuery("loud", k=3, snippets=False, fragments=False)).hits
    assert hits[0].doc_id == LOUD_PAGE
    # (idf times the float32 saturation, in float32, as the searcher sums them)
    assert hits[0].text_score == float(bm25f.idf_one(N_DOCS, len(docs)) * sat[0])


def test_positions_starts_are_int64_past_2_31_occurrences() -> None:
    tfs = np.array([[3, 0], [1, 2], [0, 0], [4, 4]], dtype=np.uint8)
    assert posting_starts(tfs).tolist() == [0, 3, 6, 6]
    assert posting_starts(tfs).dtype == np.int32
    assert posting_starts(tfs, occurrences=2**31).dtype == np.int64
    assert posting_starts(tfs, occurrences=2**31).tolist() == [0, 3, 6, 6]


def test_wide_rows_follow_the_live_postings_when_a_newer_segment_replaces_pages(
        tmp_path: Path) -> None:
    """Pages 2 and 4 (holding "loud", before the page holding it 300 times) and 1 (300 times
    "boom") replaced by a newer segment: the live tf rows, made from the decoded postings or
    carried from the list of a generation where every page was live, are the true ones."""
    first = _segment(tmp_path / "seg-1")
    w = SegmentWriter(tmp_path / "seg-2", ram_bytes=1 << 20)
    for i in (1, 2, 4):
        w.add_document(i, host="a.example", url=f"http://a.example/{i}", title="",
                       text="replaced", fields=["", "", "replaced", "", []])
    w.finish()
    before = Searcher(Manifest(generation=1, last_seq=0), [first])
    old_view = before.postings.query()
    for term in ("loud", "boom"):
        assert old_view.get(term, 0) is not None
    after = Searcher(Manifest(generation=2, last_seq=0),
                     [first, SegmentReader(tmp_path / "seg-2")])
    fresh = after.postings.query()
    made = {term: fresh.get(term, 0) for term in ("loud", "boom")}  # decoded here
    assert after.postings.decodes == 2
    after.postings.adopt(before.postings)  # its lists, carried to this generation on use
    carried = after.postings.query()
    for term in ("loud", "boom"):
        docs, wide = first.postings(fresh.get(term, 0).row)  # type: ignore[union-attr]
        live = ~np.isin(first.doc_ids[docs], [1, 2, 4])
        for view in (fresh, carried):
            p = made[term] if view is fresh else view.get(term, 0)
            assert p is not None and np.array_equal(p.docs, docs[live])
            assert np.array_equal(p.tf_matrix(), wide[live]), term
            assert np.array_equal(p.tf_rows(np.arange(len(p.docs))), wide[live]), term
            want = bm25f.saturate(bm25f.pseudo_tf(wide[live], view.coefficients[0][docs[live]]),
                                  after.postings.k1)
            assert np.array_equal(view.saturated(p, 0), want), term
    assert after.postings.carried >= 2
