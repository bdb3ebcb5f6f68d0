"""The pruned top-k evaluation (indexer/topk.py) gives the hits of the exhaustive one.

Random small indexes (a few words drawn Zipf-like, so lists run over several 128-posting
blocks; two segments, the newer replacing some pages of the older and dropping others), random
queries with phrases, OR, exclusions and site: filters, other collection statistics (as a
shard scoring with the global ones), priors bounded by ``w`` (small beside the text scores, or
as large as they are, some pages at the bound itself): the top k of text + prior over every
match, as the exhaustive evaluation computes it, and of the pruned one must be the same pages
with the same scores.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from websift.indexer import postings as postings_module
from websift.indexer import searcher as searcher_module
from websift.indexer import topk
from websift.indexer.manifest import Manifest
from websift.indexer.query import parse_query
from websift.indexer.searcher import CollectionStats, IndexQuery, Searcher
from websift.indexer.segment import SegmentReader
from websift.indexer.segment_writer import SegmentWriter
from websift.indexer.settings import BLOCK, FIELDS

WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa"]
HOSTS = ["a.example", "b.example", "c.example"]
W = 0.7  # the prior bound
BIG_W = 6.0  # a prior bound as large as the text scores: the prior reorders deep matches


def _text(rng: random.Random, n: int) -> str:
    # Zipf-like: word i drawn with weight 1 / (i + 1).
    return " ".join(rng.choices(WORDS, weights=[1 / (i + 1) for i in range(len(WORDS))], k=n))


def _segment(path: Path, rng: random.Random, ids: list[int], drops: list[int]) -> SegmentReader:
    w = SegmentWriter(path, ram_bytes=1 << 20)
    for i in ids:
        host = HOSTS[i % len(HOSTS)]
        title = _text(rng, rng.randint(0, 4))
        body = _text(rng, rng.randint(1, 40))
        w.add_document(i, host=host, url=f"http://{host}/{_text(rng, 1)}/{i}", title=title,
                       text=body, fields=[title, _text(rng, rng.randint(0, 3)), body, "",
                                          [_text(rng, 2) for _ in range(rng.randint(0, 2))]])
    for d in drops:
        w.add_drop(d)
    w.finish()
    return SegmentReader(path)


def _searcher(root: Path, seed: int, n_docs: int) -> Searcher:
    rng = random.Random(seed)
    first = _segment(root / "seg-1", rng, list(range(1, n_docs + 1)), [])
    again = sorted(rng.sample(range(1, n_docs + 1), n_docs // 4))
    gone = [i for i in rng.sample(range(1, n_docs + 1), n_docs // 10) if i not in again]
    second = _segment(root / "seg-2", rng, [*again, n_docs + 1, n_docs + 2], gone)
    return Searcher(Manifest(generation=1, last_seq=0), [first, second])


def _prior(ids: np.ndarray) -> np.ndarray:
    return W * ((ids * 2654435761) % 1000) / 1000.0


def _big_prior(ids: np.ndarray) -> np.ndarray:
    """Up to BIG_W, exactly BIG_W for every seventh page (the bound is inclusive)."""
    return np.where(ids % 7 == 0, BIG_W, BIG_W * ((ids * 40503) % 997) / 997.0)


QUERY = st.builds(
    lambda a, b, c, form: form.format(a=a, b=b, c=c),
    st.sampled_from(WORDS), st.sampled_from(WORDS), st.sampled_from(WORDS),
    st.sampled_from(["{a}", "{a} {b}", "{a} {b} {c}", '"{a} {b}"', '{c} "{a} {b}"',
                     "{a} -{b}", '{a} {c} -"{b} {a}"', "{a} site:a.example",
                     "{a} {b} -site:b.example", "{a} OR {b} {c}", '"{a} {b} {c}"',
                     '"{a}" {b} {c}', '{a} {b} "{c}" -{b}', '{a} "{b} absent"']))


@pytest.fixture(autouse=True)
def small_rounds() -> Iterator[None]:
    """Small indexes take the pruned path, in rounds of one block and checks of two
    candidates, so that they go through many rounds and batches."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(topk, "PRUNE_FIRST_POSTINGS", 1)
        mp.setattr(searcher_module, "EXHAUSTIVE_MAX_DOCS", 0)  # small indexes prune too
        mp.setattr(searcher_module, "EXHAUSTIVE_MAX_POSTINGS", -1)  # few postings too
        mp.setattr(topk, "PRUNE_VERIFY_FIRST", 2)
        mp.setattr(topk, "PRUNE_DENSE_SHARE", 2.0)  # no segment scored whole (but below)
        yield


def _same(s: Searcher, q: str, **kw: object) -> None:
    want = s.search(IndexQuery(q, exhaustive=True, snippets=False, **kw))  # type: ignore[arg-type]
    got = s.search(IndexQuery(q, snippets=False, **kw))  # type: ignore[arg-type]
    assert [h.doc_id for h in got.hits] == [h.doc_id for h in want.hits], q
    for g, w in zip(got.hits, want.hits, strict=True):
        assert g.score == pytest.approx(w.score, rel=1e-9, abs=1e-12), q
        assert g.text_score == pytest.approx(w.text_score, rel=1e-9, abs=1e-12), q
    assert not got.partial
    if got.total_exact:
        assert got.total == want.total, q
    else:
        assert got.total <= want.total, q


@pytest.mark.slow
@given(seed=st.integers(0, 2**31), n_docs=st.integers(20, 500), queries=st.lists(QUERY,
       min_size=1, max_size=6), k=st.integers(1, 12), offset=st.integers(0, 3),
       dense=st.booleans(), whole=st.sampled_from([2.0, 0.125, 0.0]))
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
def test_pruned_equals_exhaustive(tmp_path_factory: pytest.TempPathFactory, *, seed: int,
                                  n_docs: int, queries: list[str], k: int, offset: int,
                                  dense: bool, whole: float) -> None:
    with pytest.MonkeyPatch.context() as mp:
        # Every list of these small segments is dense: without the maps, probes search.
        mp.setattr(postings_module, "DENSE_POSTINGS_SHARE", 0.25 if dense else 2.0)
        # Segments scored whole once T is known: never, as by default, every time.
        mp.setattr(topk, "PRUNE_DENSE_SHARE", whole)
        _pruned_equals_exhaustive(tmp_path_factory.mktemp("idx"), seed=seed, n_docs=n_docs,
                                  queries=queries, k=k, offset=offset)


def _pruned_equals_exhaustive(root: Path, *, seed: int, n_docs: int, queries: list[str],
                              k: int, offset: int) -> None:
    s = _searcher(root, seed, n_docs)
    stats_args = {"n_docs": s.n_docs * 3, "field_lengths": tuple(
        int(x) * 2 for x in s.field_length_sums)}
    for q in queries:
        _same(s, q, k=k, offset=offset)
        _same(s, q, k=k, offset=offset, prior=_prior, prior_bound=W)
        _same(s, q, k=k, offset=offset, prior=_big_prior, prior_bound=BIG_W)
        # Named priors: each block's largest prior kept with the cached lists, per name.
        _same(s, q, k=k, offset=offset, prior=_prior, prior_bound=W, prior_key="small")
        _same(s, q, k=k, offset=offset, prior=_big_prior, prior_bound=BIG_W, prior_key="big")
        _same(s, q, k=k, offset=offset, prior=_prior, prior_bound=W, prior_key="small")
        local = s.collection_stats(q)
        stats = CollectionStats(df={t: 2 * n + 1 for t, n in local.df.items()}, **stats_args)
        _same(s, q, k=k, offset=offset, prior=_prior, prior_bound=W, stats=stats)
        # A deadline far off, as a request has: segments scored whole compute their pairs'
        # evidence when it fits the time left (or the rounds serve): the same answer.
        _same(s, q, k=k, offset=offset, prior=_prior, prior_bound=W,
              deadline=time.monotonic() + 600.0)


def test_segments_without_stored_impacts_prune_the_same(tmp_path: Path) -> None:
    """A segment from before block impacts (version 2) derives them from its postings."""
    s = _searcher(tmp_path, 7, 400)
    for seg in s.segments:
        assert seg.impacts(0) is not None
        seg._impacts = None  # as an old segment reads
    for q in ["alpha", "beta gamma", '"alpha beta"', "gamma -alpha"]:
        _same(s, q, k=5, prior=_prior, prior_bound=W)


def test_stored_impacts_bound_every_posting(tmp_path: Path) -> None:
    """Each block's impacts: no posting has a larger tf or a shorter field holding the word."""
    seg = _searcher(tmp_path, 3, 500).segments[0]
    for row in range(len(seg.terms())):
        docs, tfs = seg.postings(row)
        imp = seg.impacts(row)
        assert imp is not None and len(imp) == (len(docs) + BLOCK - 1) // BLOCK
        for j in range(len(imp)):
            block_tfs = tfs[j * BLOCK : (j + 1) * BLOCK]
            lens = seg.field_lens[docs[j * BLOCK : (j + 1) * BLOCK]]
            assert (block_tfs.max(axis=0) == imp[j, : len(FIELDS)]).all()
            for f in range(len(FIELDS)):
                held = block_tfs[:, f] > 0
                if held.any():
                    assert lens[held, f].min() == imp[j, len(FIELDS) + f]


def test_pruning_skips_blocks_and_counts_honestly(tmp_path: Path) -> None:
    """A word in every page's body, in the title of a few early pages only: the blocks of the
    others cannot reach the top 5 and are never scored; the count is then a lower bound."""
    w = SegmentWriter(tmp_path / "seg-1", ram_bytes=1 << 20)
    n = 30 * BLOCK
    for i in range(1, n + 1):
        title = "needle" if i <= 5 else "hay"
        body = f"needle {_text(random.Random(i), 20)}"
        w.add_document(i, host="a.example", url=f"http://a.example/{i}", title=title,
                       text=body, fields=[title, "", body, "", []])
    w.finish()
    s = Searcher(Manifest(generation=1, last_seq=0), [SegmentReader(tmp_path / "seg-1")])
    got = s.search(IndexQuery("needle", k=5, snippets=False))
    want = s.search(IndexQuery("needle", k=5, snippets=False, exhaustive=True))
    assert got.blocks == 30 and got.blocks_read < got.blocks
    assert [h.doc_id for h in got.hits] == [h.doc_id for h in want.hits] == [1, 2, 3, 4, 5]
    assert not got.total_exact and got.total == want.total == n  # the word's df: exact here
    # A prior bounded well below what the title adds (the word is everywhere: a small idf):
    # still skipped, the same top 5.
    sixth = s.search(IndexQuery("needle", k=6, snippets=False)).hits[5]
    title_gain = got.hits[4].text_score - sixth.text_score

    def tiny(ids: np.ndarray) -> np.ndarray:
        return _prior(ids) * (title_gain / 4 / W)

    fused = s.search(IndexQuery("needle", k=5, snippets=False, prior=tiny,
                                prior_bound=title_gain / 4))
    assert fused.blocks_read < fused.blocks
    assert [h.doc_id for h in fused.hits] == [
        h.doc_id for h in s.search(IndexQuery("needle", k=5, snippets=False, prior=tiny,
                                              exhaustive=True)).hits]
    # Every block read: the count is exact.
    full = s.search(IndexQuery("needle hay", k=n, snippets=False))
    assert full.total_exact and full.total == n


def test_explain_adds_up_to_the_text_score(tmp_path: Path) -> None:
    s = _searcher(tmp_path, 5, 300)
    for q in ["alpha beta", "beta gamma delta", '"alpha beta" gamma', "eps OR zeta alpha"]:
        for h in s.search(IndexQuery(q, k=5, explain=True, snippets=False)).hits:
            assert h.explain is not None
            assert h.explain["text_score"] == pytest.approx(h.text_score, rel=1e-6), q


def test_a_deadline_past_gives_a_partial_answer_not_an_error(tmp_path: Path) -> None:
    s = _searcher(tmp_path, 13, 400)
    late = s.search(IndexQuery('"alpha beta" gamma', deadline=time.monotonic() - 1.0,
                               snippets=False))
    assert late.partial and not late.total_exact
    assert late.hits  # the best found so far, never an empty answer while pages match
    on_time = s.search(IndexQuery('"alpha beta" gamma', deadline=time.monotonic() + 600.0,
                                  snippets=False))
    assert not on_time.partial
    assert on_time.hits == s.search(IndexQuery('"alpha beta" gamma', snippets=False,
                                               exhaustive=True)).hits


def test_the_prior_ranks_over_every_match_not_a_text_window(tmp_path: Path) -> None:
    """The answer is the top k of text + prior over every matching page: a page far down the
    text order that the prior lifts above the rest is found by the pruned evaluation too (a
    re-rank of the top N text matches would miss it), and the bound lets it skip blocks."""
    w = SegmentWriter(tmp_path / "seg-1", ram_bytes=1 << 20)
    n = 40 * BLOCK
    deep = n - 3  # the page the prior favours: one mention in a long body
    for i in range(1, n + 1):
        reps = 1 if i == deep else 1 + (i % 5)
        body = " ".join(["needle"] * reps + ["hay"] * (30 if i == deep else 3))
        w.add_document(i, host="a.example", url=f"http://a.example/{i}", title="",
                       text=body, fields=["", "", body, "", []])
    w.finish()
    s = Searcher(Manifest(generation=1, last_seq=0), [SegmentReader(tmp_path / "seg-1")])
    texts = s.search(IndexQuery("needle", k=n, snippets=False, exhaustive=True)).hits
    assert [h.doc_id for h in texts][-1] == deep  # the weakest text match

    def prior(ids: np.ndarray) -> np.ndarray:
        return np.where(ids == deep, 5.0, 0.0)

    got = s.search(IndexQuery("needle", k=3, prior=prior, prior_bound=5.0, snippets=False))
    want = s.search(IndexQuery("needle", k=3, prior=prior, prior_bound=5.0, snippets=False,
                    exhaustive=True))
    assert [h.doc_id for h in got.hits] == [h.doc_id for h in want.hits]
    assert got.hits[0].doc_id == deep
    # A prior without a bound is added to every match: the same answer, every block read.
    unbounded = s.search(IndexQuery("needle", k=3, prior=prior, snippets=False))
    assert [h.doc_id for h in unbounded.hits] == [h.doc_id for h in want.hits]


SPARSE_QUERIES = ["alpha", "kappa", "iota kappa", "alpha beta gamma", '"alpha beta"',
                  'kappa "theta iota"', "theta -kappa", 'alpha -"beta gamma"',
                  "iota site:a.example", "theta OR iota kappa", "eta -site:b.example"]


@pytest.mark.parametrize("seed", [3, 11])
def test_sparse_sums_equal_the_dense_ones(tmp_path: Path, seed: int) -> None:
    """Summed over the matches alone (a segment whose lists are short beside it, or over the
    pages holding a required phrase) or over arrays as long as the segment: the same pages,
    the same float scores, the same count."""
    s = _searcher(tmp_path, seed, 400)
    for q in SPARSE_QUERIES:
        answers = []
        for sparse in (False, True):  # never, always (phrases: their pages' sums)
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(Searcher, "_sparse_fits", lambda *_a, _s=sparse: _s)
                r = s.search(IndexQuery(q, k=20, snippets=False, exhaustive=True,
                                        prior=_prior, prior_bound=W))
            answers.append((r.total, [(h.doc_id, h.score, h.text_score) for h in r.hits]))
        assert answers[0] == answers[1], q
        assert answers[0][0] > 0, q  # every query matches pages


def test_a_timed_query_of_many_postings_is_pruned_until_its_positions_are_decoded(
        tmp_path: Path) -> None:
    """Words placed together (a proximity pair) past EXHAUSTIVE_FEW_POSTINGS: with a deadline
    the pruned path (which watches it) serves until the pair's occurrences are decoded whole;
    then every posting is scored, the same answer.  One word alone is pruned."""
    s = _searcher(tmp_path, 17, 400)
    q = "alpha beta"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(searcher_module, "EXHAUSTIVE_MAX_POSTINGS", 1 << 19)
        mp.setattr(searcher_module, "EXHAUSTIVE_FEW_POSTINGS", 0)
        untimed = IndexQuery(q, k=5, snippets=False)
        timed = IndexQuery(q, k=5, snippets=False, deadline=time.monotonic() + 600.0)
        first = s.search(timed)
        assert first.blocks > 0  # pruned: positions not decoded yet
        for term in ("alpha", "beta"):  # the untimed search decodes them whole
            assert not all(s.postings.query().has_position_keys(term, si) for si in range(2))
        every = s.search(untimed)
        assert every.blocks == 0 and every.total_exact
        again = s.search(timed)
        assert again.blocks == 0
        assert [h.doc_id for h in first.hits] == [h.doc_id for h in every.hits] == [
            h.doc_id for h in again.hits]
        assert s.search(IndexQuery("alpha", k=5, snippets=False)).blocks > 0


@pytest.mark.parametrize("over_all", [True, False])
def test_phrases_checked_candidate_by_candidate_or_over_every_page_holding_the_words(
        tmp_path: Path, over_all: bool) -> None:
    """The pruned path checks a required phrase rarest word first, either for a batch of
    candidates or (past a share of them) over every page of the segment holding all its
    words, then kept in the phrases cache: the same pages as the exhaustive path's phrase
    over the whole lists, and the same hits."""
    queries = ['"alpha beta"', '"beta alpha gamma"', 'delta "gamma alpha"', '"eps beta"',
               '"alpha alpha"', 'alpha -"beta gamma" "gamma delta"']
    reference = _searcher(tmp_path / "ref", 5, 400)
    pruned = _searcher(tmp_path / "pruned", 5, 400)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(topk, "PRUNE_WHOLE_LIST", 0)  # candidates' positions, not whole lists
        mp.setattr(topk, "PRUNE_PHRASE_ALL", 1 << 30 if over_all else 0)
        for q in queries:
            want = reference.search(IndexQuery(q, exhaustive=True, snippets=False))
            got = pruned.search(IndexQuery(q, snippets=False))
            assert got.blocks > 0, q  # pruned
            assert [h.doc_id for h in got.hits] == [h.doc_id for h in want.hits], q
            assert [h.text_score for h in got.hits] == pytest.approx(
                [h.text_score for h in want.hits], rel=1e-9, abs=1e-12), q
    held = 0
    for q in queries:
        for phrase in parse_query(q, pruned.analyzer).required:
            for si in range(len(pruned.segments)):
                docs = pruned.postings.query().cached_phrase_docs(phrase, si)
                if docs is not None and len(phrase.terms) > 1:
                    held += 1
                    assert np.array_equal(docs, reference.postings.query().phrase_docs(
                        phrase, si)), q
    assert (held > 0) == over_all


@pytest.mark.parametrize("exhaustive", [True, False])
def test_a_named_prior_read_from_its_table_gives_the_same_floats(tmp_path: Path,
                                                                 exhaustive: bool) -> None:
    """Both paths read a named prior from a table of each segment's pages, filled on its
    first use: the very floats of the prior over the matches (the pruned path's candidates
    and its blocks' largest priors), key or no key (the searcher's language and fetched
    priors are layered on it, as on every query)."""
    s = _searcher(tmp_path, 5, 300)
    for q in SPARSE_QUERIES:
        # Once first: its pairs' evidence then in the pairs cache for all three, as the pruned
        # path takes a pair at hand as exact at once (it may then stop sooner, its total an
        # estimate), which is not what this compares.
        s.search(IndexQuery(q, k=15, offset=2, snippets=False, exhaustive=exhaustive,
                            prior=_big_prior, prior_bound=BIG_W))
        answers = []
        for key in (None, "named", "named"):  # computed per query, the table filled, read
            r = s.search(IndexQuery(q, k=15, offset=2, snippets=False, exhaustive=exhaustive,
                                    prior=_big_prior, prior_bound=BIG_W, prior_key=key))
            answers.append((r.total, [(h.doc_id, h.score, h.text_score, h.prior_score)
                                      for h in r.hits]))
        assert answers[0] == answers[1] == answers[2], q
    assert len(s.caches()["priors"]) == len(s.segments)
    assert s.caches()["priors"].hits > 0


def test_a_pair_at_hand_is_exact_at_once_and_bounds_its_blocks(tmp_path: Path) -> None:
    """Two words in every page, next to each other in the first five only: once the pair's
    evidence is in the pairs cache (the exhaustive path put it there), the pruned path gives
    candidates their exact bonus without reading positions, and skips the blocks whose pages
    never stand near (the block's largest bonus of the pair, not the pair's largest)."""
    w = SegmentWriter(tmp_path / "seg-1", ram_bytes=1 << 20)
    n = 30 * BLOCK
    for i in range(1, n + 1):
        body = "alpha beta x y z v w" if i <= 5 else "alpha x y z v w beta"  # same length
        w.add_document(i, host="a.example", url=f"http://a.example/{i}", title="hay",
                       text=body, fields=["hay", "", body, "", []])
    w.finish()
    s = Searcher(Manifest(generation=1, last_seq=0), [SegmentReader(tmp_path / "seg-1")])
    want = s.search(IndexQuery("alpha beta", k=5, snippets=False, exhaustive=True))
    assert [h.doc_id for h in want.hits] == [1, 2, 3, 4, 5]
    checks: list[int] = []
    check = topk._Evaluation._check

    def counted(self: topk._Evaluation, pend: topk._Pending) -> None:
        checks.append(len(pend.ords))
        check(self, pend)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(topk._Evaluation, "_check", counted)
        got = s.search(IndexQuery("alpha beta", k=5, snippets=False))
        assert checks == []
        mp.setattr(topk._Evaluation, "_pair_gaps", lambda self, read: [])
        flat = s.search(IndexQuery("alpha beta", k=5, snippets=False))
    for r in (got, flat):
        assert [(h.doc_id, h.text_score) for h in r.hits] == [
            (h.doc_id, h.text_score) for h in want.hits]
    assert got.blocks_read < flat.blocks_read


@pytest.mark.parametrize("seed", [3, 11])
def test_a_segment_whose_blocks_mostly_matter_is_scored_whole(tmp_path: Path,
                                                             seed: int) -> None:
    """Common words, scores flat: once T is known most blocks can still reach it, so each
    segment is scored whole at once (its pairs' evidence from whole occurrence lists), with
    no candidate's positions read, and gives the exhaustive hits, scores and count."""
    s = _searcher(tmp_path, seed, 2000)
    whole: list[int] = []
    score_segment = topk._Evaluation._score_segment
    check = topk._Evaluation._check

    def counted(self: topk._Evaluation, si: int, seen: topk._Seen) -> None:
        whole.append(si)
        score_segment(self, si, seen)

    def no_check(self: topk._Evaluation, pend: topk._Pending) -> None:
        raise AssertionError("a candidate's positions read")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(topk, "PRUNE_DENSE_SHARE", 0.125)
        mp.setattr(topk, "PRUNE_FIRST_POSTINGS", BLOCK)  # T known after a first block
        mp.setattr(topk._Evaluation, "_score_segment", counted)
        for q in ("alpha beta", "alpha beta gamma", "beta OR gamma alpha",
                  "alpha beta site:a.example"):
            whole.clear()
            want = s.search(IndexQuery(q, k=10, snippets=False, exhaustive=True))
            mp.setattr(topk._Evaluation, "_check", no_check)
            got = s.search(IndexQuery(q, k=10, snippets=False, prior=_prior, prior_bound=W))
            fused = s.search(IndexQuery(q, k=10, snippets=False, prior=_prior, prior_bound=W,
                                        exhaustive=True))
            mp.setattr(topk._Evaluation, "_check", check)
            assert sorted(set(whole)) == [0, 1], q
            assert [(h.doc_id, h.score) for h in got.hits] == [
                (h.doc_id, h.score) for h in fused.hits], q
            assert got.total_exact and got.total == want.total == fused.total, q


QUERY3 = "alpha beta gamma"


@pytest.mark.parametrize("affordable", [True, False])
def test_with_a_deadline_a_segment_is_scored_whole_when_its_pairs_fit_the_time_left(
        tmp_path: Path, affordable: bool) -> None:
    """A request's deadline: a segment to be scored whole whose pairs' evidence is not at
    hand has it computed then (and kept for the next queries) when its estimated cost fits
    the share of the time left; otherwise the rounds serve until the pairs cache holds it
    (here the exhaustive path put it there).  The hits are the exhaustive ones either way."""
    s = _searcher(tmp_path, 3, 2000)  # three common words: the first round leaves most blocks
    whole: list[int] = []
    score_segment = topk._Evaluation._score_segment

    def counted(self: topk._Evaluation, si: int, seen: topk._Seen) -> None:
        whole.append(si)
        score_segment(self, si, seen)

    def ready() -> list[bool]:
        q = s.postings.query()
        return [all(q.near_pairs_ready(a, b, si) for a, b in (("alpha", "beta"),
                                                              ("beta", "gamma")))
                for si in range(2)]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(topk, "PRUNE_DENSE_SHARE", 0.125)
        mp.setattr(topk, "PRUNE_FIRST_POSTINGS", BLOCK)
        mp.setattr(topk, "PRUNE_WHOLE_LIST", 0)  # candidates' positions, not whole lists
        # 600 s left: a key costing a second fits 600 * share keys; a day's, none.
        mp.setattr(topk, "PRUNE_EVIDENCE_KEY_SECONDS", 1e-9 if affordable else 86_400.0)
        mp.setattr(topk._Evaluation, "_score_segment", counted)
        later = time.monotonic() + 600.0
        assert ready() == [False, False]
        cold = s.search(IndexQuery(QUERY3, k=10, snippets=False, deadline=later))
        if affordable:
            assert sorted(set(whole)) == [0, 1]
            assert ready() == [True, True]  # kept for the next queries
        else:
            assert whole == []
            assert ready() == [False, False]
        want = s.search(IndexQuery(QUERY3, k=10, snippets=False, exhaustive=True))
        whole.clear()
        warm = s.search(IndexQuery(QUERY3, k=10, snippets=False, deadline=later))
        assert sorted(set(whole)) == [0, 1]
        for got in (cold, warm):
            assert [(h.doc_id, h.text_score) for h in got.hits] == [
                (h.doc_id, h.text_score) for h in want.hits]
            assert not got.partial


@pytest.mark.parametrize("at_once", [True, False])
def test_a_segment_whose_phrase_pages_are_cached_takes_them_as_candidates(
        tmp_path: Path, at_once: bool) -> None:
    """Once the phrases cache holds a required phrase's pages in a segment (here the
    exhaustive path put them there), those pages are that segment's candidates: all at once
    if few beside its blocks (no block read), else its blocks in rounds with only those pages
    kept; either way no candidate's phrase is checked, and the hits and scores are the
    exhaustive ones."""
    s = _searcher(tmp_path, 7, 600)
    checked: list[int] = []
    phrase = topk._Evaluation._phrase

    def counted(self: topk._Evaluation, ph: object, si: int, docs: np.ndarray) -> np.ndarray:
        checked.append(len(docs))
        return phrase(self, ph, si, docs)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(topk, "PRUNE_PHRASE_ALL", 0 if at_once else 1 << 30)
        for q in ['"alpha beta"', 'gamma "beta alpha"', '"alpha beta gamma" -delta']:
            first = s.search(IndexQuery(q, k=5, snippets=False))  # phrases not cached
            want = s.search(IndexQuery(q, k=5, snippets=False, exhaustive=True))
            checked.clear()
            mp.setattr(topk._Evaluation, "_phrase", counted)
            got = s.search(IndexQuery(q, k=5, snippets=False, prior=_prior, prior_bound=W))
            mp.setattr(topk._Evaluation, "_phrase", phrase)
            fused = s.search(IndexQuery(q, k=5, snippets=False, prior=_prior, prior_bound=W,
                                        exhaustive=True))
            assert first.blocks_read > 0 and got.blocks > 0, q
            assert (got.blocks_read == 0) == at_once, q
            assert checked == [], q
            assert [h.doc_id for h in first.hits] == [h.doc_id for h in want.hits], q
            assert [h.doc_id for h in got.hits] == [h.doc_id for h in fused.hits], q
            assert [h.score for h in got.hits] == pytest.approx(
                [h.score for h in fused.hits], rel=1e-9, abs=1e-12), q


@pytest.mark.parametrize("affordable", [True, False])
def test_with_a_deadline_a_word_is_decoded_whole_only_when_it_fits_the_time_left(
        tmp_path: Path, affordable: bool) -> None:
    """A word's whole position list is decoded in one step no deadline interrupts: with a
    deadline only when its estimated cost fits the share of the time left; otherwise the
    candidates' positions serve.  The hits are the exhaustive ones either way."""
    s = _searcher(tmp_path, 3, 2000)
    decoded: list[int] = []  # rows whose occurrences were decoded whole
    positions = SegmentReader.positions

    def counted(self: SegmentReader, row: int, tfs: np.ndarray) -> np.ndarray:
        decoded.append(row)
        return positions(self, row, tfs)

    queries = (QUERY3, '"alpha beta"', '"beta gamma" alpha')
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(topk, "PRUNE_FIRST_POSTINGS", BLOCK)
        mp.setattr(topk, "PRUNE_WHOLE_LIST", 1 << 30)  # any list is short beside its candidates
        mp.setattr(topk, "PRUNE_DENSE_SHARE", 2.0)  # no segment scored whole: the rounds
        # 600 s left: a key costing a nanosecond fits; a day's, none.
        mp.setattr(topk, "PRUNE_EVIDENCE_KEY_SECONDS", 1e-9 if affordable else 86_400.0)
        mp.setattr(SegmentReader, "positions", counted)
        got = [s.search(IndexQuery(q, k=10, snippets=False, deadline=time.monotonic() + 600.0))
               for q in queries]
    assert bool(decoded) == affordable
    for q, g in zip(queries, got, strict=True):
        want = s.search(IndexQuery(q, k=10, snippets=False, exhaustive=True))
        assert [(h.doc_id, h.text_score) for h in g.hits] == [
            (h.doc_id, h.text_score) for h in want.hits], q
        assert g.hits and not g.partial, q


@given(ops=st.lists(st.one_of(
    st.tuples(st.just("add"), st.lists(st.integers(0, 12), max_size=40)),
    st.tuples(st.just("rise"), st.integers(0, 12)),
    st.tuples(st.just("check"), st.integers(1, 9))), max_size=40))
@settings(max_examples=300, deadline=None)
def test_open_candidates_come_out_as_one_stable_sort_of_all_of_them(
        ops: list[tuple[str, object]]) -> None:
    """The open candidates (sorted front, unsorted pool) come out in the order a stable sort
    of every one by descending bound gives (ties in arrival order), less those below T, which
    only rises; at the end, any left unchecked that could reach T or whose match depended on
    a phrase is noted (the answer is then not known complete)."""
    t = [-np.inf]
    opened = topk._Open(lambda ub: np.asarray(ub) < t[0])
    model: list[tuple[float, int]] = []  # (bound, arrival) of each unchecked candidate
    n = 0
    for op, arg in ops:
        if op == "add":
            ub = np.array(arg, dtype=np.float64)
            seq = np.arange(n, n + len(ub), dtype=np.int64)
            n += len(ub)
            opened.add(topk._Pending(np.zeros(len(ub), np.int32), seq, ub, np.ones(len(ub)),
                                     ub, seq % 3 == 0, np.zeros(len(ub))))
            model += [(float(u), int(s)) for u, s in zip(ub, seq, strict=True)]
        elif op == "rise":
            t[0] = max(t[0], float(arg))  # type: ignore[arg-type]
        else:
            k = int(arg)  # type: ignore[call-overload]
            order = sorted((c for c in model if c[0] >= t[0]), key=lambda c: -c[0])
            top = opened.top()
            assert top == (order[0][0] if order else None)
            if order:
                got = opened.head(k)
                assert got.ords.tolist() == [s for _, s in order[:k]]
                assert got.ub.tolist() == [u for u, _ in order[:k]]
                opened.pop(k)
                done = {s for _, s in order[:k]}
                model = [c for c in model if c[1] not in done]
    open_ = any(u >= t[0] or s % 3 == 0 for u, s in model)
    assert (opened.left() or opened.unsure) == open_


def test_many_rounds_check_the_open_candidates_highest_bound_first(tmp_path: Path) -> None:
    """Two words common in a segment, candidates open (their pair's positions read per
    candidate), rounds of one block: many rounds over a large pool of open candidates.  Each
    batch checked is the highest bounds of every open candidate that can reach T, in
    descending order, and the answer is the exhaustive one."""
    reference = _searcher(tmp_path / "ref", 23, 3000)
    s = _searcher(tmp_path / "pruned", 23, 3000)  # no occurrences decoded whole by the other
    heads: list[tuple[np.ndarray, float]] = []  # each batch's bounds, the largest left out
    pooled = [0]
    adds = [0]
    head = topk._Open.head
    add = topk._Open.add

    def spy_add(self: topk._Open, new: topk._Pending | None) -> None:
        adds[0] += 1
        add(self, new)

    def spy(self: topk._Open, k: int) -> topk._Pending:
        got = head(self, k)
        others = [] if self.front is None else [self.front.ub[k:]]
        others += [c.ub[x] for c, x in zip(self.pool, self._live(), strict=True)]
        rest = np.concatenate([np.zeros(0), *others])
        pooled[0] = max(pooled[0], len(rest))
        heads.append((got.ub.copy(), float(rest.max()) if len(rest) else -np.inf))
        return got

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(topk, "PRUNE_WHOLE_LIST", 0)  # candidates' positions, not whole lists
        mp.setattr(topk, "PRUNE_MAX_ROUND_POSTINGS", 4 * BLOCK)
        mp.setattr(topk._Open, "head", spy)
        mp.setattr(topk._Open, "add", spy_add)
        for q, k in [("alpha beta", 10), ("beta alpha", 20), ("alpha gamma", 50), ("alpha beta gamma", 100)]:
            heads.clear()
            adds[0] = 0
            want = reference.search(IndexQuery(q, k=k, exhaustive=True, snippets=False))
            got = s.search(IndexQuery(q, k=k, snippets=False))
            assert got.blocks > 0, q
            assert [h.doc_id for h in got.hits] == [h.doc_id for h in want.hits], q
            assert [h.text_score for h in got.hits] == pytest.approx(
                [h.text_score for h in want.hits], rel=1e-9, abs=1e-12), q
            assert adds[0] >= 5 and len(heads) >= 4, q  # rounds, batches checked
            for ub, left in heads:
                assert np.all(np.diff(ub) <= 0), q
                assert len(ub) and ub[-1] >= left, q
    assert pooled[0] >= 500  # a pool far larger than a batch


@pytest.mark.parametrize("seed", range(3))
def test_the_pages_met_are_the_same_as_a_set_kept_sorted_or_as_a_mask(seed: int) -> None:
    """A segment's pages met (topk._Seen): each round's new pages are those no earlier round
    gave, in order, whether it keeps them as a sorted array or, once they are a share of the
    segment (SEEN_MASK_SHARE), as a mask; and a whole-segment mask is cleared at them."""
    rng = np.random.default_rng(seed)
    n = 5000
    seen = topk._Seen(n)
    met: set[int] = set()
    forms = set()
    for size in [3, 10, 40, 150, 400, 900, 1500, 2500]:
        docs = np.unique(rng.integers(0, n, size)).astype(np.int32)
        new = seen.new(docs)
        assert new.tolist() == [d for d in docs.tolist() if d not in met]
        assert new.dtype == docs.dtype
        met.update(docs.tolist())
        forms.add(seen.mask is not None)
    assert forms == {False, True}  # both forms were used
    held = np.ones(n, dtype=bool)
    seen.clear(held)
    assert set(np.flatnonzero(~held).tolist()) == met


def test_find_gives_the_postings_and_an_index_a_gather_can_read_elsewhere() -> None:
    """PostingList.find (through the dense map or by binary search): the hits and their
    postings; the index of a miss is one a gather can read (topk._score gathers through every
    index and masks the misses out); holds gives the hits alone."""
    docs = np.array([2, 5, 9, 30, 31], dtype=np.int32)
    asked = np.array([0, 2, 3, 9, 31, 39], dtype=np.int32)
    tfs = np.ones((len(docs), len(FIELDS)), dtype=np.uint8)
    for dense_n in (0, 40):
        p = postings_module.PostingList(docs, tfs, 0, tfs, docs, dense_n=dense_n)
        hit, j = p.find(asked)
        assert hit.tolist() == p.holds(asked).tolist() == [False, True, False, True, True, False]
        assert j[hit].tolist() == [0, 2, 4]
        assert np.take(docs, j).shape == asked.shape  # every index readable
        assert (p.dense is not None) == bool(dense_n)
