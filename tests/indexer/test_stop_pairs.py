"""Stop words next to the other query words (issue 12, item 2): proximity evidence between a
stop word that is not scored and its neighbour ("if statement"), exact in the pruned search
(indexer/topk.py takes the stop word as present anywhere in its bounds), and ``explain`` adds
up with it."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testkit.corpus import make_index
from websift.indexer import searcher as searcher_module
from websift.indexer import topk
from websift.indexer.manifest import Manifest
from websift.indexer.query import parse_query
from websift.indexer.searcher import IndexQuery, Searcher
from websift.indexer.segment import SegmentReader
from websift.indexer.segment_writer import SegmentWriter
from websift.indexer.settings import IndexSettings

WORDS = ["alpha", "beta", "gamma", "delta", "if", "not", "in", "for", "statement", "loop"]


def test_the_stop_pairs_of_a_query() -> None:
    assert parse_query("if statement").stop_pairs() == [("if", "statement")]
    assert parse_query("arguments in function call").stop_pairs() == [
        ("argument", "in"), ("in", "function")]
    assert parse_query("not in").stop_pairs() == []  # scored as words already
    assert parse_query("tkinter font").stop_pairs() == []
    assert parse_query("if OR while statement").stop_pairs() == []  # OR breaks adjacency
    # The stop word's idf is looked up (for the pair's weight), but it is no scoring unit.
    q = parse_query("if statement")
    assert q.units() == [("statement",)] and q.idf_terms() == ["statement", "if"]


PAGES = [  # (title, body): "if" and "statement" on pages 1 and 2, next to each other on 2
    ("Running", "a statement runs here and holds if it likes to"),
    ("Conditionals", "the if statement runs a block when its test holds"),
    ("Filler", "nothing here about it"),
    ("More", "more text to read"),
]


def test_a_stop_word_next_to_the_query_word_ranks_its_page_first(tmp_path: Path) -> None:
    s = Searcher.open(make_index(tmp_path / "d", PAGES))
    hits = s.search(IndexQuery("if statement", explain=True)).hits
    assert hits[0].doc_id == 2
    for h in hits:
        assert h.explain is not None
        assert h.explain["text_score"] == pytest.approx(h.text_score, rel=1e-6)
    assert hits[0].explain is not None and hits[0].explain["proximity"] > 0
    assert "if" not in hits[0].explain["terms"]  # evidence of adjacency, not a scored word
    # An index built with IndexSettings(stop_pairs=False) records it, and its searcher pairs
    # no stop word.
    off = Searcher.open(make_index(tmp_path / "off", PAGES, IndexSettings(stop_pairs=False)))
    assert not off.index_settings.stop_pairs
    first = off.search(IndexQuery("if statement")).hits
    assert {h.doc_id for h in first[:2]} == {1, 2}
    assert first[0].text_score < hits[0].text_score  # the pair is what lifted page 2


@pytest.fixture(autouse=True)
def small_rounds() -> Iterator[None]:
    """Small indexes take the pruned path, in rounds of one block (as tests/indexer/test_topk)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(topk, "PRUNE_FIRST_POSTINGS", 1)
        mp.setattr(searcher_module, "EXHAUSTIVE_MAX_DOCS", 0)
        mp.setattr(searcher_module, "EXHAUSTIVE_MAX_POSTINGS", -1)  # few postings too
        mp.setattr(topk, "PRUNE_VERIFY_FIRST", 2)
        yield


def _searcher(root: Path, seed: int, n_docs: int) -> Searcher:
    rng = random.Random(seed)
    w = SegmentWriter(root / "seg-1", ram_bytes=1 << 20)
    weights = [1 / (i + 1) for i in range(len(WORDS))]
    for i in range(1, n_docs + 1):
        title = " ".join(rng.choices(WORDS, weights=weights, k=rng.randint(0, 4)))
        body = " ".join(rng.choices(WORDS, weights=weights, k=rng.randint(1, 40)))
        w.add_document(i, host="h.example", url=f"http://h.example/{i}", title=title, text=body,
                       fields=[title, "", body])
    w.finish()
    return Searcher(Manifest(generation=1, last_seq=0), [SegmentReader(root / "seg-1")])


QUERY = st.builds(lambda a, b, c, form: form.format(a=a, b=b, c=c),
                  st.sampled_from(WORDS), st.sampled_from(WORDS), st.sampled_from(WORDS),
                  st.sampled_from(["{a} {b}", "{a} {b} {c}", '{a} "{b} {c}"']))


@pytest.mark.slow
@given(seed=st.integers(0, 2**31), n_docs=st.integers(50, 400),
       queries=st.lists(QUERY, min_size=1, max_size=5), k=st.integers(1, 10))
@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
def test_pruned_equals_exhaustive_with_stop_pairs(tmp_path_factory: pytest.TempPathFactory, *,
                                                  seed: int, n_docs: int, queries: list[str],
                                                  k: int) -> None:
    s = _searcher(tmp_path_factory.mktemp("idx"), seed, n_docs)
    for q in queries:
        want = s.search(IndexQuery(q, k=k, exhaustive=True, snippets=False))
        got = s.search(IndexQuery(q, k=k, snippets=False))
        assert [h.doc_id for h in got.hits] == [h.doc_id for h in want.hits], q
        for g, w in zip(got.hits, want.hits, strict=True):
            assert g.text_score == pytest.approx(w.text_score, rel=1e-9, abs=1e-12), q
