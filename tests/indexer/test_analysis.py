"""The analyzer for technical text (issue 12, item 2): technical terms whole and in parts, stop
words kept and scored by the query's policy, the same terms at index and query time, and an
index analysed differently refused with a clear message."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testkit.corpus import make_index
from websift.indexer.analysis import PLAIN_TOKEN_RE, TECH_TOKEN_RE, Analyzer, is_operator
from websift.indexer.errors import IndexAnalyzerMismatch, QueryError
from websift.indexer.hits import HitMaker
from websift.indexer.query import parse_query
from websift.indexer.searcher import IndexQuery, Searcher
from websift.indexer.settings import (
    MAX_QUERY_TERMS,
    MAX_TOKEN_CHARS,
    MIN_TOKEN_CHARS,
    BM25FSettings,
)

TECHNICAL = ["~d", "--set", "%s", "#include", "c++", ".bashrc", "pg_dump", "a.b.c", "<=",
             "-site", "os.path.join", "__init__", "**kwargs", "std::vector", "x<=y"]

# Text made of words, technical tokens, stop words, punctuation and odd spacing.
_SYMBOLS = "~%#+-<>=!&|*^$@/\\.:,;()[]{}?`\"'_"
_word = st.sampled_from(["if", "not", "in", "the", "set", "running", "Path", "os", "x", "é",
                         "naïve", "42", "a", "to", "be"])
_piece = st.one_of(_word, st.sampled_from(TECHNICAL),
                   st.text(alphabet=_SYMBOLS, min_size=1, max_size=3),
                   st.sampled_from([" ", "  ", "\n", ". ", ", ", "... "]))
texts = st.lists(_piece, max_size=30).map("".join)


def _index_time(text: str, analyzer: Analyzer) -> tuple[list[str], list[int]]:
    maker = HitMaker(analyzer)
    wids, pos, _ = maker.field(text)
    names = {i: t for t, i in maker.lexicon.items()}
    return [names[int(w)] for w in wids], [int(p) for p in pos]


def _sorted_pairs(terms: list[str], positions: list[int]) -> list[tuple[int, str]]:
    return sorted(zip(positions, terms, strict=True))


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(texts, st.booleans(), st.booleans(), st.booleans())
def test_index_and_query_time_give_the_same_terms(text: str, technical: bool, stops: bool,
                                                  operators: bool) -> None:
    analyzer = Analyzer(technical=technical, keep_stops=stops, operators=operators)
    q_terms, q_pos, _ = analyzer.positions(text)
    i_terms, i_pos = _index_time(text, analyzer)
    assert _sorted_pairs(i_terms, i_pos) == _sorted_pairs(q_terms, q_pos)
    # The batch path of the indexer (every field of many pages at once) agrees too.
    maker = HitMaker(analyzer)
    wids, pos, slots = maker.batch([[text, "x"]])
    names = {i: t for t, i in maker.lexicon.items()}
    first = slots == 0
    assert _sorted_pairs([names[int(w)] for w in wids[first]],
                         [int(p) for p in pos[first]]) == _sorted_pairs(q_terms, q_pos)
    # A quoted query of the same text is the same phrase.
    if '"' not in text and q_terms:
        try:
            phrase = parse_query(f'"{text}"', analyzer)
        except QueryError:  # thirty pieces of compounds can pass the query's term limit
            assert len(q_terms) > MAX_QUERY_TERMS
            return
        got = phrase.required[0] if phrase.required else phrase.groups[0][0]
        assert list(got.terms) == q_terms
        assert list(got.offsets) == [p - q_pos[0] for p in q_pos]


_name = st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True)
_tech_token = st.builds(
    lambda pre, first, rest, post: pre + first + "".join(j + w for j, w in rest) + post,
    st.sampled_from(["", "-", "--", "%", "#", "~", ".", "**", "$", "@"]), _name,
    st.lists(st.tuples(st.sampled_from([".", "_", "-", "::", "/", "+", "<=", "="]), _name),
             max_size=2),
    st.sampled_from(["", "+", "++", "-", "%", "*"]))


# PLAIN_TOKEN_RE's language (words joined by single dots) without its nested quantifier:
# PLAIN_TOKEN_RE.fullmatch backtracks exponentially when it fails on a long word followed by a
# symbol (48 s for "z3wh3v021_z3wh3v021_z3wh3v021+", a token this test draws).
_PLAIN_WHOLE = re.compile(r"\w+(?:\.\w+)*")


@settings(max_examples=300, deadline=None)
@given(_tech_token, st.sampled_from([" ", "(", ", ", "\n"]), st.sampled_from([" ", ")", ". ", ","]))
def test_a_technical_token_round_trips_with_its_parts(token: str, before: str, after: str
                                                      ) -> None:
    analyzer = Analyzer(technical=True, keep_stops=True)
    raws = TECH_TOKEN_RE.findall(f"see{before}{token}{after}next")
    assert token in raws  # tokenised whole, whatever stands around it
    terms = set(analyzer.terms(f"see{before}{token}{after}next"))
    if MIN_TOKEN_CHARS <= len(token) <= MAX_TOKEN_CHARS and not _PLAIN_WHOLE.fullmatch(token):
        assert token in terms
    # The parts are always there too: whatever Whoosh's tokenizer finds inside the token.
    plain = Analyzer(technical=False, keep_stops=True)
    for part in PLAIN_TOKEN_RE.findall(token):
        assert set(plain.terms(part)) <= terms


def test_the_technical_tokens_of_the_issue_are_terms() -> None:
    terms = Analyzer().terms(" ".join(TECHNICAL) + " C++ and an OS.Path.Join().")
    for token in TECHNICAL:
        assert token in terms
    assert "c++" in terms and "os.path.join" in terms
    for part in ("set", "includ", "bashrc", "pg", "dump", "site", "kwarg", "init", "vector"):
        assert part in terms
    # A full stop, an ellipsis or a dash between words is not part of a word's token.
    v2 = Analyzer(operators=False)
    assert v2.terms("the end. ...and so - on") == ["the", "end", "and", "so", "on"]
    # Analyzer 2: symbols alone are a term when they look like an operator, not like a rule or a
    # shout.
    assert v2.terms("a <= b -> c <<= dd !!! ee --- ff ====") == [
        "<=", "->", "<<=", "dd", "ee", "ff"]
    # Analyzer 3: every run of up to three symbols is an operator term, brackets, commas and
    # semicolons one character each; a longer run is a rule.
    assert Analyzer().terms("the end. ...and so - on") == [
        "the", "end", ".", "...", "and", "so", "-", "on"]
    assert Analyzer().terms("a <= b -> c <<= dd !!! ee ---- ff ====") == [
        "<=", "->", "<<=", "dd", "!!!", "ee", "ff"]
    assert Analyzer().terms("x .^ y; c = {1, 'a'}; z = x.' #{") == [
        ".^", ";", "=", "{", ",", "'", "'", "}", ";", "=", ".'", "#", "{"]  # x: too short


def test_the_query_language_with_technical_words_and_stop_words() -> None:
    q = parse_query("--set -async c++ %s")
    assert [p.terms for p in q.excluded] == [("async",)]  # "-word" still excludes
    assert ("--set",) in q.units() and ("set",) in q.units() and ("c++",) in q.units()
    assert ("%s",) in q.units()
    quoted = parse_query('"-site" manual')
    assert quoted.excluded == [] and quoted.required[0].terms == ("-site", "site")
    # Stop words: scored when the query is mostly stop words, else left out of the units.
    assert parse_query("if").units() == [("if",)]
    assert parse_query("not in").units() == [("not",), ("in",)]
    assert parse_query("if statement").units() == [("statement",)]
    assert parse_query("if statement").word_terms() == ["statement"]
    assert parse_query('"to be or not to be"').required[0].offsets == (0, 1, 2, 3, 4, 5)
    # Unscored stop words do not count toward the query's term limit.
    long = " ".join(f"w{i} the" for i in range(MAX_QUERY_TERMS // 2 + 4))
    assert len(parse_query(long).units()) == MAX_QUERY_TERMS // 2 + 4


PAGES = [  # (title, body)
    ("The if statement", "if x: run the block; elif and else follow it"),
    ("Membership", "x not in s is true when x is absent"),
    ("Command line", "pass --set to change a value, -site turns site off, c++ also works"),
    ("Format", "old style %s formatting with the modulo operator"),
    ("Setting values", "set a value and change it, this page mentions no option"),
    ("Invoking", "start it with -q to stay quiet or -v for the version; -site also works"),
]



def test_technical_and_stop_word_queries_find_their_pages(tmp_path: Path) -> None:
    # The analysis alone: among six pages whose words' idfs barely differ, the title share
    # (BM25FSettings.title_share) would put "Setting values" first for "--set value" by its
    # title's "values", which a larger site's idf of "--set" outweighs.
    s = Searcher.open(make_index(tmp_path / "d", PAGES), settings=BM25FSettings(title_share=0))

    def top(q: str) -> int:
        return s.search(IndexQuery(q)).hits[0].doc_id

    assert top("if") == 1
    assert top("not in") == 2
    assert top("--set value") == 3  # the option beats the page that says "set a value"
    assert top("%s") == 4
    assert top("c++") == 3
    assert top('"-site"') == 3
    # exclusion of "site"
    assert 3 not in [h.doc_id for h in s.search(IndexQuery("value -site")).hits]
    # A query of exclusions only searches them as words (options): "-q -v", "-site".
    assert top("-q -v") == 6
    assert {h.doc_id for h in s.search(IndexQuery("-site")).hits} == {3, 6}
    # with a word: excluded
    assert 6 not in [h.doc_id for h in s.search(IndexQuery("quiet -site")).hits]
    # The snippet highlights the whole technical word.
    hit = s.search(IndexQuery("--set")).hits[0]
    assert any(hit.snippet[a:b] == "--set" for a, b in hit.highlights)


def test_an_index_from_another_analyzer_is_refused(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("websift.indexer.segment_writer.analyzer_version", lambda *_: "1")
    data = make_index(tmp_path / "d", PAGES)
    monkeypatch.undo()
    with pytest.raises(IndexAnalyzerMismatch, match="reindex with websift index --rebuild"):
        Searcher.open(data)


def test_stop_words_and_operators_are_indexed_but_add_no_field_length(tmp_path: Path) -> None:
    data = make_index(tmp_path / "d", PAGES)
    seg = Searcher.open(data).segments[0]
    analyzer = Analyzer()
    for ordinal, (_title, body) in enumerate(PAGES):
        terms = analyzer.terms(body)
        content = [t for t in terms if t not in analyzer.stop_terms and not is_operator(t)]
        assert int(seg.field_lens[ordinal][2]) == len(content)
    assert any(set(analyzer.terms(b)) & analyzer.stop_terms for _t, b in PAGES)
    assert any(is_operator(t) for _t, b in PAGES for t in analyzer.terms(b))


_ops = st.text(alphabet="~%#+-<>=!&|*^$@/\\.:,;()[]{}?`'", min_size=1, max_size=3)


@settings(max_examples=200, deadline=None)
@given(st.lists(_ops, min_size=1, max_size=4))
def test_a_query_of_symbols_alone_searches_them(runs: list[str]) -> None:
    query = " ".join(runs)
    analyzer = Analyzer()
    parsed = parse_query(query, analyzer)  # never refused
    expected = list(dict.fromkeys(analyzer.terms(query)))
    assert expected and all(is_operator(t) for t in expected)
    assert parsed.terms() == expected


def test_symbols_on_a_word_are_punctuation_apart_or_quoted_operators() -> None:
    assert parse_query("handle, function").units() == [("handl",), ("function",)]
    assert parse_query("@ function handle").units() == [("@",), ("function",), ("handl",)]
    assert parse_query("f(x)").units() == []
    phrase = parse_query('"xx + yy"').required[0]
    assert (phrase.terms, phrase.offsets) == (("xx", "+", "yy"), (0, 1, 1))
    assert parse_query("a .^ b").units() == [(".^",)]


OPERATOR_PAGES = [
    *PAGES,
    ("Arithmetic operators", "x + y adds, x .^ y raises each element, x .' transposes"),
    ("Comparison", "a <= b and a != b compare, equality a == b tests"),
    ("Cell arrays", "c = {1, 2} builds a cell array and c{1} indexes it"),
    ("Matrices", "a matrix is written in brackets [1, 2; 3, 4; 5, 6]"),
]


def test_operator_queries_find_their_pages(tmp_path: Path) -> None:
    s = Searcher.open(make_index(tmp_path / "d", OPERATOR_PAGES))

    def top(q: str) -> int:
        return s.search(IndexQuery(q)).hits[0].doc_id

    assert top("+") == 7
    assert top(".^") == 7
    assert top(".'") == 7
    assert top("!=") == 8
    assert top("<= compare") == 8
    assert top("{") == 9
    assert top(";") == 10
    assert top('"equality a == b"') == 8  # a phrase with an operator in it
    assert top("written brackets") == 10  # words as before: operators take no position
    assert s.search(IndexQuery('"written in brackets"')).hits[0].doc_id == 10
