"""Unicode folding and CJK bigrams (indexer/folding.py): a query without accents finds the
accented word, full-width and ligatures are their plain letters, a CJK word is found inside a
longer run, a Korean word with its particle attached."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testkit.corpus import make_index
from websift.indexer.analysis import Analyzer
from websift.indexer.folding import fold_term, fold_text
from websift.indexer.searcher import IndexQuery, Searcher


def test_folding_of_text_and_terms() -> None:
    assert fold_text("\uff30\uff39\uff34\uff28\uff2f\uff2e ﬁle Straße") == "python file strasse"
    assert fold_term("réseau") == "reseau"
    assert fold_term("naïve") == "naive"
    assert fold_term("søren") == "soren"
    # Kana with dakuten and Hangul syllables stay whole (their marks are not Latin accents).
    assert fold_term("パッケージ") == "パッケージ"
    assert fold_term("학교") == "학교"


def test_accents_case_and_width_give_one_term() -> None:
    a = Analyzer()
    assert a.terms("naïve") == a.terms("naive") == a.terms("NAÏVE")
    assert a.terms("Réseau") == a.terms("reseau")
    assert a.terms("\uff30\uff39\uff34\uff28\uff2f\uff2e") == a.terms("python")


def test_a_word_keeps_its_combining_marks_in_any_script() -> None:
    a = Analyzer()
    # Vowel signs and viramas are part of a Devanagari or Tamil word (no \w of their own).
    assert a.terms("हिन्दी भाषा") == ["हिन्दी", "भाषा"]
    assert a.terms("தமிழ் மொழி") == ["தமிழ்", "மொழி"]
    assert a.terms("ქართული ენა") == ["ქართული", "ენა"]
    # Arabic's harakat and tatweel and Hebrew's points are diacritics: folded away.
    assert a.terms("العَرَبِيَّة العربـية") == a.terms("العربية العربية") == ["العربية"] * 2
    assert a.terms("עִבְרִית") == a.terms("עברית")
    assert a.terms("ज़रूरत") == a.terms("जरूरत")  # Devanagari's nukta, as Lucene's HindiNormalizer
    # Invisible characters inside a word join it: a soft hyphen, a zero-width non-joiner.
    assert a.terms("hyphen\u00adation") == a.terms("hyphenation")
    assert a.terms("می\u200cخواهم") == a.terms("میخواهم")  # noqa: RUF001
    # Compounds and technical terms are as they were.
    assert a.terms("os.path --set") == ["os.path", "os", "path", "--set", "set"]


# Letters, marks alone and after letters, tatweel, invisible joiners, CJK and Thai, symbols.
_ANY_SCRIPT = st.text(alphabet=st.sampled_from(
    "aZé .-_\u0301\u064b\u0640\u05b0\u00ad\u200c\u200dिहन्दीภาษ่空间ßİ\ufb01"), max_size=40)


@settings(max_examples=200, deadline=None)
@given(text=_ANY_SCRIPT)
def test_no_text_gives_an_empty_term(text: str) -> None:
    for lang in ("en", "ar", "hi"):
        a = Analyzer(lang=lang)
        terms, positions, end = a.positions(text)
        # (an operator sits at the next word's position: at the end when none follows)
        assert all(terms) and positions == sorted(positions) and all(p <= end for p in positions)
        assert all(a.terms(text))


def test_thai_lao_khmer_and_myanmar_runs_are_bigrams_like_cjk() -> None:
    a = Analyzer()
    run = a.terms("ภาษาไทยง่ายมาก")  # "the Thai language is very easy", no spaces
    for word in ("ภาษา", "ไทย", "ง่าย"):
        grams = a.terms(word)
        assert len(grams) == len(word) - 1 and set(grams) <= set(run)
    assert a.terms("ພາສາລາວ")[:2] == ["ພາ", "າສ"]
    assert a.terms("ភាសាខ្មែរ")[0] == "ភា"


def test_cjk_runs_are_bigrams_at_consecutive_positions() -> None:
    terms, positions, end = Analyzer().positions("我们的空间管理。python3の設定")
    assert terms[:6] == ["我们", "们的", "的空", "空间", "间管", "管理"]
    assert positions == list(range(len(terms)))
    assert "python3" in terms and "設定" in terms and end == len(terms)
    assert Analyzer().terms("水") == ["水"]  # a one-character run is itself


PAGES = [
    ("Réseau", "la configuration du réseau et des paquets"),
    ("Naïve", "a naïve datetime has no time zone"),
    ("空间", "我们的空间管理工具很好用"),
    ("학교", "학교에서 공부합니다"),
    ("パッケージ", "パッケージの管理をします"),
    ("Filler", "nothing here to see at all"),
    ("हिन्दी", "हिन्दी भाषा का व्याकरण"),
    ("ไทย", "ภาษาไทยง่ายมาก"),
    ("عربي", "تعلم اللغة العَرَبِيَّة"),
]


def test_search_without_accents_and_inside_cjk_runs(tmp_path: Path) -> None:
    s = Searcher.open(make_index(tmp_path / "d", PAGES))

    def first(q: str) -> int:
        hits = s.search(IndexQuery(q)).hits
        assert hits, q
        return hits[0].doc_id

    assert first("reseau") == first("réseau") == first("RESEAU") == 1
    assert first("naive") == first("naïve") == 2
    assert first("空间") == 3  # inside the run 我们的空间管理工具很好用
    assert first("학교") == 4  # the word, its particle attached in the page
    assert first("パッケージの管理") == 5
    assert first("管理") in (3, 5)
    assert first("व्याकरण") == first("हिन्दी") == 7  # a Devanagari word, found whole
    assert first("ง่าย") == first("ภาษาไทย") == 8  # a Thai word inside its run
    assert first("العربية") == first("العَرَبِيَّة") == 9  # typed without harakat, or with
    scores = [s.search(IndexQuery(q)).hits[0].text_score for q in ("reseau", "réseau")]
    assert scores[0] == scores[1]  # no lower without accents


def test_a_search_without_accents_highlights_the_accented_words(tmp_path: Path) -> None:
    s = Searcher.open(make_index(tmp_path / "d", PAGES))
    for q, word in (("reseau", "réseau"), ("RESEAU", "réseau"), ("naive", "naïve")):
        hit = s.search(IndexQuery(q)).hits[0]
        assert [hit.snippet[a:b] for a, b in hit.highlights] == [word], q


# Words in many scripts, some with their marks (Devanagari's vowel signs, Thai's tone marks,
# Arabic's harakat, Hebrew's points, Latin's accents), some CJK or Thai runs.
_SCRIPT_WORDS = st.sampled_from([
    "réseau", "naïve", "Straße", "Ελληνική", "установка", "ქართული", "हिन्दी", "व्याकरण",
    "தமிழ்", "ภาษาไทย", "ง่าย", "العَرَبِيَّة", "العربية", "עִבְרִית", "空间管理", "パッケージ",
    "학교에서", "Tiếng", "İstanbul", "hyphen\u00adation", "می\u200cخواهم"])  # noqa: RUF001


@settings(max_examples=25, deadline=None)
@given(words=st.lists(_SCRIPT_WORDS, min_size=3, max_size=8), pick=st.integers(0, 7))
def test_every_word_a_page_holds_finds_it_in_any_script(
        tmp_path_factory: pytest.TempPathFactory, words: list[str], pick: int) -> None:
    # What the index makes of a page's words and what a query makes of the same word agree,
    # in any script, typed with or without its accents and marks folded away.
    pages = [("page", " ".join(words)), ("filler", "nothing to see here at all")]
    s = Searcher.open(make_index(tmp_path_factory.mktemp("w") / "d", pages))
    word = words[pick % len(words)]
    for query in {word, fold_term(fold_text(word))}:
        assert 1 in [h.doc_id for h in s.search(IndexQuery(query)).hits], query
