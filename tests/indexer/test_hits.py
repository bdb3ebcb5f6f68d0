"""HitMaker.batch (whitespace chunks memoised whole) gives the hits of the plain analyzer chain:
the same terms at the same positions as ``Analyzer.positions`` on each field, the anchors of a
field laid out ``ANCHOR_GAP`` apart, whatever punctuation glues tokens together."""

from __future__ import annotations

import gc
import random
import weakref

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from websift.indexer import hits
from websift.indexer.analysis import Analyzer
from websift.indexer.hits import HitMaker
from websift.indexer.settings import ANCHOR_GAP, FIELDS, IndexSettings

WORDS = ["os.path", "f(x)", "--set", "a,b", "the", "Run", "runs,", "x", "é", "unittest.mock.",
         "—", "()", "pg_dump", "a..b", "(foo)", "_", "3.11", "C++", "#include", "%s"]
text = st.lists(st.sampled_from(WORDS) | st.text(max_size=6),
                max_size=30).map(" ".join)
field = text | st.lists(text, max_size=3)


def reference(value: str | list[str]) -> list[tuple[str, int]]:
    """(term, position) of one field by the regex tokenizer and the analyzer, no memo."""
    an = Analyzer()
    if isinstance(value, str):
        terms, pos, _ = an.positions(value.lower())
        return list(zip(terms, pos, strict=True))
    out: list[tuple[str, int]] = []
    start = 0
    for t in value:
        terms, pos, start = an.positions(t.lower(), start)
        out.extend(zip(terms, pos, strict=True))
        start += ANCHOR_GAP
    return out


@pytest.mark.slow
@pytest.mark.parametrize("small", [0, 10**9])  # new chunks composed with numpy, in Python
@settings(max_examples=200, deadline=None)
@given(docs=st.lists(st.lists(field, min_size=2, max_size=2), max_size=4))
def test_batch_gives_the_analyzers_terms_and_positions(
        small: int, docs: list[list[str | list[str]]]) -> None:
    hm = HitMaker()
    for _ in range(2):  # learning, then from the memo
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(hits, "SMALL_LEARN", small)
            wids, pos, slots = hm.batch(docs, limit=10**6)
        words = {v: k for k, v in hm.lexicon.items()}
        for d, fields in enumerate(docs):
            for f, value in enumerate(fields):
                mine = sorted((words[int(w)], int(p)) for w, p, s in
                              zip(wids, pos, slots, strict=True) if s == d * 2 + f)
                assert mine == sorted(reference(value)), (value, mine)


def test_the_limit_counts_raw_tokens() -> None:
    hm = HitMaker()
    wids, pos, _ = hm.batch([["alpha beta,gamma delta epsilon"]], limit=2)
    words = {v: k for k, v in hm.lexicon.items()}
    assert [words[int(w)] for w in wids] == ["alpha"]  # 'beta,gamma' straddles it: left out
    wids, pos, _ = hm.batch([["alpha beta,gamma delta epsilon"]], limit=3)
    assert [words[int(w)] for w in wids] == ["alpha"]  # 'beta' ',' 'gamma': 3 raw tokens
    wids, pos, _ = hm.batch([["alpha beta,gamma delta epsilon"]], limit=4)
    words = {v: k for k, v in hm.lexicon.items()}
    assert [words[int(w)] for w in wids] == ["alpha", "beta", ",", "gamma"]
    assert pos.tolist() == [0, 1, 2, 2]  # an operator takes no position of its own


def test_operator_fields_keep_every_operator_hit_elsewhere_the_first() -> None:
    hm = HitMaker(operator_fields=("defs",))
    text = "x + y + z, then a .^ b .^ c"
    docs = [[text if f in ("body", "defs") else "" for f in FIELDS]] * 2

    def got(maker: HitMaker) -> dict[str, list[str]]:
        wids, _, slots = maker.batch(docs)
        words = {v: k for k, v in maker.lexicon.items()}
        return {f: [words[int(w)] for w in wids[slots == i]] for i, f in enumerate(FIELDS)}

    assert got(hm)["defs"] == ["+", "+", ",", "then", ".^", ".^"]
    assert got(hm)["body"] == ["+", ",", "then", ".^"]  # the first hit of each operator
    # The per-field path (SegmentWriter) keeps the same hits.
    body_w, body_p, _ = hm.field(text)
    kept, _ = hm.in_field(FIELDS.index("body"), body_w, body_p)
    words = {v: k for k, v in hm.lexicon.items()}
    assert sorted(words[int(w)] for w in kept) == sorted(["+", ",", "then", ".^"])
    assert got(HitMaker(operator_fields=None))["body"] == got(hm)["defs"]
    # IndexSettings(operator_elsewhere="none"): no operator hit outside the operator fields.
    none = HitMaker.of(IndexSettings(operator_fields="defs", operator_elsewhere="none"))
    assert got(none)["body"] == ["then"]
    body_w, body_p, _ = none.field(text)
    kept, _ = none.in_field(FIELDS.index("body"), body_w, body_p)
    words = {v: k for k, v in none.lexicon.items()}
    assert [words[int(w)] for w in kept] == ["then"]


def test_words_get_ids_in_first_seen_order_and_each_chunk_is_learned_once() -> None:
    hm = HitMaker()
    hm.batch([["zeta alpha zeta os.path, alpha", ["beta zeta"]]], limit=10**6)
    # "os.path," is one chunk: the compound, its parts, then the operator ","
    assert hm.words == ["zeta", "alpha", "os.path", "os", "path", ",", "beta"]
    # sentinels (2) + zeta, alpha, "os.path," and its raw tokens "os.path" and ",", beta: a
    # repeated chunk is memoised once
    assert hm.memo_size() == 2 + 6


def test_a_dropped_hitmaker_is_freed_without_the_cycle_collector() -> None:
    gc.disable()
    try:
        hm = HitMaker()
        hm.batch([["some words here", []]], limit=10**6)
        ref = weakref.ref(hm)
        del hm
        assert ref() is None  # the memo holds no reference to its HitMaker: no cycle
    finally:
        gc.enable()


@pytest.mark.parametrize("lang", ["en", "fr", "none"])
@pytest.mark.parametrize("keep_stops", [True, False])
def test_a_plain_word_is_learned_as_its_languages_analyzer_analyses_it(
        lang: str, keep_stops: bool) -> None:
    # Plain ASCII words are learned without the token's analysis: the same terms, positions
    # and IDs as the analyzer's own chain (stemmed per language, short, long and stop words).
    text = ("Running the x les mangeront 3d python311 " + "a" * 65
            + " donnees runs os.path running")
    hm = HitMaker(Analyzer(keep_stops=keep_stops, lang=lang))
    wids, pos, _ = hm.batch([[text]], limit=10**6)
    words = {v: k for k, v in hm.lexicon.items()}
    terms, positions, _ = Analyzer(keep_stops=keep_stops, lang=lang).positions(text)
    assert [(words[int(w)], int(p)) for w, p in zip(wids, pos, strict=True)] == list(
        zip(terms, positions, strict=True))
    assert hm.words == list(dict.fromkeys(terms))  # first-seen order


def test_many_and_few_new_chunks_are_learned_alike() -> None:
    # A batch's new chunks are composed with numpy, a few in Python: the same hits and the
    # same word IDs in the same (first-seen) order either way, also when the words come a
    # few at a time (the field path, SegmentWriter's, learns its raw tokens the same way).
    rng = random.Random(7)
    pool = [*WORDS, "alpha", "beta.gamma", "x:", "a.b.c,", "(y)", "zz_top", "--opt=os.path"]
    texts = [" ".join(rng.choice(pool) + rng.choice(["", "", ",", ".", ")"])
                      for _ in range(rng.randint(0, 60))) for _ in range(40)]
    docs = [[t.lower(), [texts[(i + 1) % len(texts)].lower()]] for i, t in enumerate(texts)]
    got = []
    for small in (0, 10**9):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(hits, "SMALL_LEARN", small)
            hm = HitMaker()
            w, p, s = hm.batch(docs, limit=10**6)
            field = hm.field(texts[3] + " new.words here, (f)")
            got.append((hm.words, w.tolist(), p.tolist(), s.tolist(),
                        [a.tolist() for a in field[:2]], field[2]))
    assert got[0] == got[1]
