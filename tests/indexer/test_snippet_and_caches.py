"""Query-biased snippets (partial decompression, byte-wise lower case, the best window) and
the query side's caches (core/cache.py, tested in tests/core/test_cache.py; a warm searcher
answers exactly as a cold one)."""

from __future__ import annotations

import zlib
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testkit.corpus import build_data_dir
from websift.core.datadir import DataDir
from websift.indexer.analysis import Analyzer
from websift.indexer.build import build_index
from websift.indexer.errors import IndexCorrupt
from websift.indexer.folding import fold_term, fold_text
from websift.indexer.searcher import IndexQuery, Searcher
from websift.indexer.snippet import SnippetMaker, best_window, read_text


def maker(query: str) -> SnippetMaker:
    analyzer = Analyzer()
    words = query.split()
    return SnippetMaker(set(analyzer.terms(query)), words, analyzer)


# ------------------------------------------------------------------ reading the stored text
@settings(max_examples=60, deadline=None)
@given(text=st.text(alphabet=st.sampled_from("aZéÉß—𝄞 ._\nﬁ€İ\u0301"), max_size=400),
       chars=st.integers(min_value=0, max_value=420))
def test_read_text_gives_the_prefix_and_its_folded_view_with_offsets_into_it(
        text: str, chars: int) -> None:
    blob = zlib.compress(text.encode("utf-8"), 3)
    got, view, offsets = read_text(blob, chars)
    assert got == text[:chars]
    # Each character of the text, ASCII letters lower-cased and the others folded as the
    # analyzer folds them, stands in the view at its offset.
    def fold(c: str) -> str:  # a lone combining mark folds to nothing, "ß" to "ss"
        return c.lower() if c.isascii() else fold_term(fold_text(c))
    assert view == "".join(fold(c) for c in got)
    if offsets is None:
        assert len(view) == len(got)
    else:
        assert len(offsets) == len(view) + 1 and offsets[-1] == len(got)
        assert offsets == sorted(offsets)
        assert all(view[i] in fold(got[offsets[i]]) for i in range(len(view)))
        assert set(offsets[:-1]) == {i for i, c in enumerate(got) if fold(c)}


def test_read_text_stops_early_on_a_long_page() -> None:
    text = "word " * 200_000  # 1 MB
    got, _, _ = read_text(zlib.compress(text.encode(), 3), 1000)
    assert got == text[:1000]


def test_a_corrupt_stored_text_is_a_clear_error() -> None:
    with pytest.raises(IndexCorrupt, match="corrupt"):
        read_text(b"not zlib at all", 100, name="seg-1/7")
    blob = zlib.compress(("x" * 5000).encode())
    with pytest.raises(IndexCorrupt, match="corrupt"):
        read_text(blob[: len(blob) // 2], 10_000)


# ------------------------------------------------------------------ matches and window
def test_matches_find_word_forms_in_any_case_and_confirm_them_through_the_analyzer() -> None:
    m = maker("PyConfig tulips")
    text = "See PyConfig and PYCONFIG; a tulip, Tulips, tulipomania; myPyConfig is not one."
    snippet, spans = m.make(text)
    words = [snippet[a:b] for a, b in spans]
    assert words == ["PyConfig", "PYCONFIG", "tulip", "Tulips"]


def test_a_query_without_accents_highlights_the_accented_words() -> None:
    m = maker("reseau naive strasse")
    text = "Le réseau et le RÉSEAU; une idée naïve; die Straße, the strasse; rese"
    for view in (None, read_text(zlib.compress(text.encode()), 1000)):
        snippet, spans = m.make(text) if view is None else m.make(*view)
        assert [snippet[a:b] for a, b in spans] == [
            "réseau", "RÉSEAU", "naïve", "Straße", "strasse"]


def test_a_query_with_accents_highlights_the_words_written_without_them() -> None:
    m = maker("Réseau")
    snippet, spans = m.make("un reseau, des Réseaux, RESEAU")
    assert [snippet[a:b] for a, b in spans] == ["reseau", "RESEAU"]


def test_a_query_without_harakat_or_points_highlights_the_words_written_with_them() -> None:
    text = "تعلم اللغة العَرَبِيَّة سهل، لימוד עִבְרִית"
    for query, word in (("العربية", "العَرَبِيَّة"), ("עברית", "עִבְרִית")):
        m = maker(query)
        snippet, spans = m.make(*read_text(zlib.compress(text.encode()), 1000))
        assert [snippet[a:b] for a, b in spans] == [word]  # its marks inside the highlight


def test_a_cjk_word_of_three_characters_is_highlighted_whole() -> None:
    m = maker("管理器")  # bigrams 管理 and 理器 overlap in the text
    snippet, spans = m.make("使用包管理器安装")
    assert [snippet[a:b] for a, b in spans] == ["管理器"]


def test_a_word_after_an_expanding_character_is_highlighted_where_it_stands() -> None:
    # "ß" and "ﬁ" are two characters each when folded: the spans are the text's own.
    m = maker("tulip")
    text = "ßßß ﬁﬁ tulip Straße tulips"
    snippet, spans = m.make(*read_text(zlib.compress(text.encode()), 1000))
    assert [snippet[a:b] for a, b in spans] == ["tulip", "tulips"]


def test_a_part_inside_a_compound_already_matched_is_one_match() -> None:
    m = maker("fs_errors errors")
    snippet, spans = m.make("the fs_errors member and errors")
    assert [snippet[a:b] for a, b in spans] == ["fs_errors", "errors"]


def test_the_window_with_most_distinct_terms_wins_over_an_earlier_one() -> None:
    m = maker("tulip frost")
    filler = "lorem ipsum " * 60
    text = f"tulip tulip tulip {filler} plant the tulip before the frost {filler}"
    snippet, spans = m.make(text)
    assert {snippet[a:b] for a, b in spans} == {"tulip", "frost"}


def brute_best(found: list[tuple[int, int, int]], width: int) -> int:
    best, best_key = 0, (-1, -1)
    for i, (start, _, _) in enumerate(found):
        inside = [t for _, e, t in found[i:] if e - start <= width]
        # found is sorted without overlaps: the window is a prefix of found[i:]
        key = (len(set(inside)), len(inside))
        if key > best_key:
            best, best_key = i, key
    return best


@settings(max_examples=80, deadline=None)
@given(gaps=st.lists(st.tuples(st.integers(0, 50), st.integers(1, 12), st.integers(0, 3)),
                     min_size=1, max_size=40),
       width=st.integers(5, 120))
def test_best_window_agrees_with_brute_force(gaps: list[tuple[int, int, int]],
                                             width: int) -> None:
    found, at = [], 0
    for gap, length, term in gaps:
        at += gap
        found.append((at, at + length, term))
        at += length
    assert best_window(found, 4, width) == brute_best(found, width)


# ------------------------------------------------------------------ searcher with caches
A = "http://a.example"
PAGES = {
    f"{A}/{i}": (f"<html><head><title>Page {i}</title></head><body><main><h1>Garden {i}</h1>"
                 f"<p>{' '.join(['tulip bulbs in autumn'] * (i % 3 + 1))} and roses {i} "
                 f"{'frost ' * (i % 4)} garden care</p></main></body></html>")
    for i in range(12)
}


@pytest.fixture()
def data(tmp_path: Path) -> DataDir:
    d = build_data_dir(tmp_path / "data", PAGES)
    build_index(d)
    return d


def answers(s: Searcher, queries: list[str]) -> list[list[tuple[int, float, str, list]]]:
    return [[(h.doc_id, h.score, h.snippet, h.highlights)
             for h in s.search(IndexQuery(q, k=5)).hits] for q in queries]


def test_a_warm_searcher_answers_exactly_as_a_cold_one(data: DataDir) -> None:
    queries = ["tulip autumn", "roses frost", '"tulip bulbs" garden', "garden -frost",
               "autumn OR frost", "tulip"]
    warm = Searcher.open(data)
    caches = warm.caches()
    first = answers(warm, queries)
    hits = caches["postings"].hits, caches["texts"].hits, caches["phrases"].hits
    assert len(caches["postings"]) > 0 and len(caches["texts"]) > 0
    assert len(caches["phrases"]) > 0  # "tulip bulbs"
    again = answers(warm, queries)
    assert caches["postings"].hits > hits[0] and caches["texts"].hits > hits[1]
    assert caches["phrases"].hits > hits[2]
    cold = answers(Searcher.open(data), queries)
    assert first == again == cold
    warm.close()
    assert len(caches["postings"]) == len(caches["pairs"]) == len(caches["texts"]) == 0
    assert len(caches["phrases"]) == 0
    assert all(hits for hits in first)
    top = first[0][0]
    assert "tulip" in top[2].lower() and top[3]


def test_proximity_and_scores_do_not_depend_on_the_cache_order(data: DataDir) -> None:
    a = Searcher.open(data)
    b = Searcher.open(data)
    a.search(IndexQuery("autumn"))  # warms one term's postings only
    for q in ["tulip autumn", "bulbs autumn frost"]:
        ra, rb = a.search(IndexQuery(q)), b.search(IndexQuery(q))
        assert [h.doc_id for h in ra.hits] == [h.doc_id for h in rb.hits]
        assert np.allclose([h.score for h in ra.hits], [h.score for h in rb.hits])


def test_a_word_found_inside_another_after_its_combining_mark_is_not_a_match() -> None:
    # "भाषा" stands alone once, and once after the vowel sign of a longer word's first part.
    m = maker("भाषा")
    snippet, spans = m.make("हिन्दीभाषा और भाषा")
    assert [snippet[a:b] for a, b in spans] == ["भाषा"] and spans[0][0] == len("हिन्दीभाषा और ")


_SCRIPTS = st.text(alphabet=st.sampled_from(
    "aeZé .-\u0301\u064b\u0640\u00adिहन्दीภาษ่空间ßİ\ufb01"), max_size=60)


@settings(max_examples=150, deadline=None)
@given(text=_SCRIPTS, query=_SCRIPTS)
def test_highlights_are_query_words_of_the_snippet_in_any_script(text: str, query: str) -> None:
    analyzer = Analyzer()
    terms = set(analyzer.terms(query))
    m = SnippetMaker(terms, query.split(), analyzer)
    for got in (m.make(text), m.make(*read_text(zlib.compress(text.encode("utf-8")), 1000))):
        snippet, spans = got
        assert all(0 <= a < b <= len(snippet) for a, b in spans)
        assert all(b <= c for (_, b), (c, _) in pairwise(spans))
        for a, b in spans:  # each mark is a word that analyses to a query term
            assert terms & set(analyzer.terms(snippet[a:b])), (snippet, snippet[a:b])


def test_a_snippet_cut_by_characters_keeps_each_letter_with_its_marks() -> None:
    # Thai is cut by characters (no spaces between words), never between a consonant and its
    # vowel sign or tone mark.
    text = "ก่" * 400 + " คำค้น " + "ก่" * 400
    m = SnippetMaker(set(Analyzer().terms("คำค้น")), ["คำค้น"], Analyzer(), width=101)
    snippet, spans = m.make(text)
    body = snippet.strip("…")
    assert body[0] == "ก" and body[-1] == "่"
    assert "คำค้น" in snippet and spans


def test_a_word_with_an_invisible_joiner_or_soft_hyphen_is_highlighted_whole() -> None:
    for query, text, word in (("hyphenation", "a hyphen\u00adation rule", "hyphen\u00adation"),
                              ("میخواهم", "من می\u200cخواهم بروم", "می\u200cخواهم")):  # noqa: RUF001
        snippet, spans = maker(query).make(*read_text(zlib.compress(text.encode()), 1000))
        assert [snippet[a:b] for a, b in spans] == [word]
