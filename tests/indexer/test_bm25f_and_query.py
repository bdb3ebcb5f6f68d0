"""BM25F against a hand-computed example; the query language; the parser under fuzzing."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testkit.corpus import make_index
from websift.indexer import bm25f
from websift.indexer.analysis import Analyzer, analyze
from websift.indexer.errors import QueryError
from websift.indexer.query import parse_query
from websift.indexer.searcher import IndexQuery, Searcher
from websift.indexer.settings import FIELDS, MAX_QUERY_CHARS, MAX_QUERY_TERMS, BM25FSettings

DOCS = [  # (title, body)
    ("apple", "apple banana apple"),
    ("banana", "cherry apple"),
    ("cherry", "cherry cherry banana date"),
]
SETTINGS = BM25FSettings(
    k1=1.2,
    weights={"title": 2.0, "headings": 0.0, "body": 1.0, "url": 0.0, "anchor": 0.0},
    b={"title": 0.5, "headings": 0.0, "body": 0.75, "url": 0.0, "anchor": 0.0},
    coord_power=1.0,
    fetched_prior=0.0,  # BM25F alone (every page here is fetched: the prior moves all alike)
)



def test_bm25f_matches_a_hand_computed_example(tmp_path: Path) -> None:
    s = Searcher.open(make_index(tmp_path / "d", DOCS), settings=SETTINGS)
    res = s.search(IndexQuery("apple", explain=True))
    # N = 3, df(apple) = 2: idf = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln(1.6).
    # avg title length 1, avg body length 3.
    # doc 1: title tf 1, len 1 -> 2 * 1 / (0.5 + 0.5 * 1/1) = 2; body tf 2, len 3 ->
    #        1 * 2 / (0.25 + 0.75 * 3/3) = 2; tf~ = 4 (fields summed before saturation).
    # doc 2: body tf 1, len 2 -> 1 / (0.25 + 0.75 * 2/3) = 4/3.
    doc1 = math.log(1.6) * 4 / (1.2 + 4)
    doc2 = math.log(1.6) * (4 / 3) / (1.2 + 4 / 3)
    # and the title share: doc 1's title is "apple" alone (share 1): + title_share * idf
    titled = doc1 + SETTINGS.title_share * math.log(1.6)
    assert [h.doc_id for h in res.hits] == [1, 2]
    assert res.hits[0].score == pytest.approx(titled, rel=1e-6)
    assert res.hits[1].score == pytest.approx(doc2, rel=1e-6)
    ex = res.hits[0].explain
    assert ex is not None
    assert ex["terms"]["appl"]["tf"] == {"title": 1, "body": 2}
    assert ex["terms"]["appl"]["weighted_tf"] == {"title": pytest.approx(2.0),
                                                  "body": pytest.approx(2.0)}
    assert ex["terms"]["appl"]["title_share"] == 1.0
    assert ex["terms"]["appl"]["score"] == pytest.approx(titled, rel=1e-6)
    untitled = Searcher.open(make_index(tmp_path / "e", DOCS),
                             settings=replace(SETTINGS, title_share=0))
    assert untitled.search(IndexQuery("apple")).hits[0].score == pytest.approx(doc1, rel=1e-6)
    # The pure function agrees.
    tfs = np.array([[1, 0, 2, 0, 0], [0, 0, 1, 0, 0]])
    lens = np.array([[1, 0, 3, 0, 0], [1, 0, 2, 0, 0]], dtype=np.float64)
    got = bm25f.bm25f(tfs, lens, avg_lens=np.array([1, 0, 3, 0, 0.0]),
                      weights=np.array([SETTINGS.weights[f] for f in FIELDS[:5]]),
                      b=np.array([SETTINGS.b[f] for f in FIELDS[:5]]), k1=1.2, n_docs=3, df=2)
    assert got == pytest.approx([doc1, doc2], rel=1e-6)


def test_coordination_prefers_pages_with_more_of_the_query(tmp_path: Path) -> None:
    s = Searcher.open(make_index(tmp_path / "d", DOCS), settings=SETTINGS)
    res = s.search(IndexQuery("banana date", explain=True))
    assert res.hits[0].doc_id == 3
    assert res.hits[0].explain is not None and res.hits[0].explain["matched_units"] == 2
    assert all(h.explain and h.explain["coord"] == 0.5 for h in res.hits[1:])


def test_proximity_prefers_query_words_close_together(tmp_path: Path) -> None:
    docs = [("one", "green tea filler filler filler filler filler filler kettle"),
            ("two", "green kettle filler filler filler filler filler filler tea"),
            ("three", "filler")]
    data = make_index(tmp_path / "d", docs)
    near = Searcher.open(data, settings=replace(SETTINGS, proximity_weight=1.0))
    far = Searcher.open(data, settings=replace(SETTINGS, proximity_weight=0.0))
    # Without proximity both documents score the same; with it "green tea" side by side wins.
    plain = far.search(IndexQuery("green tea")).hits
    assert plain[0].score == pytest.approx(plain[1].score)
    hits = near.search(IndexQuery("green tea")).hits
    assert [h.doc_id for h in hits] == [1, 2]
    assert hits[0].score > hits[1].score == pytest.approx(plain[1].score)
    # Typed in the other order, the words standing together are evidence all the same
    # ("kettle green" finds "green kettle"), unless only the query's order counts.
    reversed_hits = near.search(IndexQuery("kettle green")).hits
    assert [h.doc_id for h in reversed_hits] == [2, 1]
    assert reversed_hits[0].score > far.search(IndexQuery("kettle green")).hits[0].score
    ordered = Searcher.open(data, settings=replace(SETTINGS, proximity_weight=1.0,
                                                    proximity_reverse=0.0))
    assert ordered.search(IndexQuery("kettle green")).hits[0].score == pytest.approx(
        far.search(IndexQuery("kettle green")).hits[0].score)


def test_query_language() -> None:
    q = parse_query('tkinter "event loop" -async -"bad thing" site:Docs.Python.org a OR b2')
    assert q.required[0].terms == ("event", "loop") and q.required[0].offsets == (0, 1)
    assert [p.terms for p in q.excluded] == [("async",), ("bad", "thing")]
    assert q.sites == ["docs.python.org"]
    assert q.units() == [("tkinter",), ("b2",), ("event",), ("loop",)]  # "a" is a stop word
    assert parse_query("--verbose flag").excluded == []  # an option name, not an exclusion
    assert parse_query("fft ====").units() == [("fft",)]  # a rule beside a word is left out
    # "-c" would exclude nothing (a one-letter word is no term): it is the option's name;
    # "-pdb" excludes a word.
    c = parse_query("-c command line option")
    assert c.units()[0] == ("-c",) and c.excluded == []
    assert parse_query("-pdb debugger").excluded[0].terms == ("pdb",)
    assert parse_query("unittest.mock").units() == [("unittest.mock",), ("unittest",), ("mock",)]
    assert analyze("PyConfig.filesystem_errors") == [
        "pyconfig.filesystem_errors", "pyconfig", "filesystem", "error"]
    # Stop words are terms of the phrase (kept in the index); with the stop-word policy off they
    # are left out but keep their positions, so phrases keep their gaps.
    assert parse_query('"state of the art"').required[0].terms == ("state", "of", "the", "art")
    old = Analyzer(keep_stops=False)
    assert parse_query('"state of the art"', old).required[0].offsets == (0, 3)


@pytest.mark.parametrize("bad, message", [
    ("", "nothing to search for"),
    ('-"only phrases" -"excluded"', "nothing to search for"),
    ("====", "a run of more than 3 symbols"),  # a rule, not an operator
    ("----- -====", "a run of more than 3 symbols"),
    ('"unclosed', "not closed"),
    ("OR alone", "OR must stand"),
    ("word OR", "OR must stand"),
    ("site:", "site: needs a host"),
    ("x" * (MAX_QUERY_CHARS + 1), "limit"),
    (" ".join(f"w{i}" for i in range(MAX_QUERY_TERMS + 1)), "limit"),
])
def test_bad_queries_get_a_clear_error(bad: str, message: str) -> None:
    with pytest.raises(QueryError, match=message):
        parse_query(bad)


@pytest.fixture(scope="module")
def fuzz_searcher(tmp_path_factory: pytest.TempPathFactory) -> Searcher:
    return Searcher.open(make_index(tmp_path_factory.mktemp("fuzz") / "d", DOCS))


_PIECES = [*'ab -"():.*_\\\x00é日', "OR", "site:", "apple", "cherry", " ", "-", '"']


@given(q=st.lists(st.sampled_from(_PIECES), max_size=25).map("".join) | st.text(max_size=40))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_only_query_errors_escape(fuzz_searcher: Searcher, q: str) -> None:
    try:
        res = fuzz_searcher.search(IndexQuery(q, explain=True))
    except QueryError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert res.total >= len(res.hits)
