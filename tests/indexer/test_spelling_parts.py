"""A query word's :class:`Near` of disjoint indexes adds up to that of one index over them all
(what a front server sums from its shards, api/fanout.py), and the speller's choice is the
same as before it was split in two (candidates, then the choice)."""

from __future__ import annotations

from collections import Counter
from functools import reduce

from hypothesis import given, settings
from hypothesis import strategies as st

from websift.indexer.analysis import Analyzer
from websift.indexer.spelling import MIN_DF, Near, Speller, correct_query

# Words of few letters, so that many are an edit or two apart.
WORDS = st.text(alphabet="abcd", min_size=3, max_size=7)
# A part holds a term in no document or in at least MIN_DF (a part offers no term it holds in
# fewer: the one approximation of the sum, stated in the module doc of api/fanout.py).
PART = st.dictionaries(WORDS, st.sampled_from([MIN_DF, 3, 5, 40, 200]), max_size=30)
ANALYZER = Analyzer()


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(PART, min_size=1, max_size=3), word=WORDS)
def test_the_parts_near_terms_add_up_to_the_whole_s(parts: list[dict[str, int]], word: str
                                                     ) -> None:
    whole: Counter[str] = Counter()
    for part in parts:
        whole.update(part)
    expected = Speller(dict(whole), {}).near(word, ANALYZER)
    got = [Speller(part, {}).near(word, ANALYZER) for part in parts]
    assert expected is not None and all(n is not None for n in got)
    summed = reduce(Near.plus, [n for n in got if n is not None])
    assert summed.df == expected.df
    assert summed.best() == expected.best()
    if expected.terms:  # the word is rare in the whole: so in every part, which all searched
        assert summed.terms == expected.terms
    # and the whole speller suggests exactly that term
    assert Speller(dict(whole), {}).nearest(word, ANALYZER) == expected.best()


def test_a_correction_keeps_the_query_s_other_words_quotes_and_filters() -> None:
    fixes = {"falcn": "falcon", "rivr": "river"}
    got = correct_query('"falcn rivr" -rivr site:rivr.test stone', fixes.get)
    assert got is not None
    assert got.query == '"falcon river" -rivr site:rivr.test stone'
    assert got.words == (("falcn", "falcon"), ("rivr", "river"))
    assert correct_query("stone", fixes.get) is None


def test_a_correction_is_shown_as_the_query_s_language_writes_it() -> None:
    # One lexicon holds every language's terms: English "interactive" and Spanish "interactivo"
    # are both "interact", and the titles write the English one more often.
    seen = {"interact": Counter({"interactive": 5, "interactivo": 2})}
    speller = Speller({"interact": 50}, {"interact": "interactive"}, seen=seen)
    spanish = ANALYZER.for_lang("es")
    assert speller.nearest("interactvo", spanish) == "interactivo"
    assert speller.nearest("interactve", ANALYZER) == "interactive"
    fix = speller.correct("solucionador interactvo", spanish)
    assert fix is not None and fix.query == "solucionador interactivo"
    # without the counts (or a language none of its words is in) the most common one
    assert Speller({"interact": 50}, {"interact": "interactive"}).nearest(
        "interactvo", spanish) == "interactive"
