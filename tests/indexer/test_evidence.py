"""What a query's deadline refuses (a pair's proximity evidence, a phrase's pages) is learned in
the background for the next time the query is asked (indexer/evidence.py): into the pairs and
phrases caches, not the postings cache, with the same hits before and after."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.indexer.test_topk import QUERY3, _searcher
from websift.indexer import evidence, topk
from websift.indexer import searcher as searcher_module
from websift.indexer.searcher import IndexQuery, Searcher
from websift.indexer.settings import BLOCK

PAIRS = (("alpha", "beta"), ("beta", "gamma"))
PHRASE = '"alpha beta gamma"'


@pytest.fixture
def refusing() -> Iterator[pytest.MonkeyPatch]:
    """The pruned path with its candidates' positions, and a deadline that affords nothing
    no deadline interrupts (a key costing a day)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(searcher_module, "EXHAUSTIVE_MAX_DOCS", 0)  # small indexes prune too
        mp.setattr(searcher_module, "EXHAUSTIVE_MAX_POSTINGS", -1)  # few postings too
        mp.setattr(topk, "PRUNE_VERIFY_FIRST", 2)
        mp.setattr(topk, "PRUNE_DENSE_SHARE", 0.125)
        mp.setattr(topk, "PRUNE_FIRST_POSTINGS", BLOCK)
        mp.setattr(topk, "PRUNE_WHOLE_LIST", 1 << 30)  # a whole list would serve, if afforded
        mp.setattr(topk, "PRUNE_EVIDENCE_KEY_SECONDS", 86_400.0)
        yield mp
    evidence.disable()


def _pairs_ready(s: Searcher) -> list[bool]:
    view = s.postings.query()
    return [all(view.near_pairs_cached(a, b, si) for a, b in PAIRS) for si in range(2)]


def _keys_decoded(s: Searcher) -> bool:
    view = s.postings.query()
    return any(view.has_position_keys(t, si) for t in ("alpha", "beta", "gamma")
               for si in range(2))


def _ask(s: Searcher, q: str) -> list[tuple[int, float]]:
    got = s.search(IndexQuery(q, k=10, snippets=False, deadline=time.monotonic() + 600.0))
    assert got.hits and not got.partial
    return [(h.doc_id, h.text_score) for h in got.hits]


def _exhaustive(s: Searcher, q: str) -> list[tuple[int, float]]:
    return [(h.doc_id, h.text_score)
            for h in s.search(IndexQuery(q, k=10, snippets=False, exhaustive=True)).hits]


def test_pairs_the_deadline_refused_are_learned_for_the_next_query(
        tmp_path: Path, refusing: pytest.MonkeyPatch) -> None:
    s = _searcher(tmp_path, 3, 2000)
    whole: list[int] = []
    score_segment = topk._Evaluation._score_segment

    def counted(self: topk._Evaluation, si: int, seen: topk._Seen) -> None:
        whole.append(si)
        score_segment(self, si, seen)

    refusing.setattr(topk._Evaluation, "_score_segment", counted)
    learner = evidence.enable()
    cold = _ask(s, QUERY3)
    assert whole == []  # refused: the rounds served
    assert learner.settle(60.0)
    assert learner.stats()["learned"] == 2 and learner.stats()["failed"] == 0  # a job a segment
    assert _pairs_ready(s) == [True, True]
    assert not _keys_decoded(s)  # the whole occurrences were the job's own
    warm = _ask(s, QUERY3)
    assert sorted(set(whole)) == [0, 1]  # now scored whole with the learned evidence
    assert cold == warm == _exhaustive(s, QUERY3)
    asked = learner.asked
    _ask(s, QUERY3)
    assert learner.asked == asked  # nothing left to learn


def test_a_phrase_the_deadline_refused_is_learned(tmp_path: Path,
                                                  refusing: pytest.MonkeyPatch) -> None:
    s = _searcher(tmp_path, 7, 2000)
    store = s.postings
    learner = evidence.enable()
    cold = _ask(s, PHRASE)
    assert learner.settle(60.0)
    held = [(store.serials[si], ("alpha", "beta", "gamma"), (0, 1, 2)) in store.phrases
            for si in range(2)]
    assert held == [True, True]
    checked: list[int] = []
    phrase = topk._Evaluation._phrase

    def counted(self: topk._Evaluation, ph: object, si: int, docs: np.ndarray) -> np.ndarray:
        checked.append(len(docs))
        return phrase(self, ph, si, docs)  # type: ignore[arg-type]

    refusing.setattr(topk._Evaluation, "_phrase", counted)
    warm = _ask(s, PHRASE)
    assert checked == []  # the learned pages are the candidates: no phrase checked
    assert cold == warm == _exhaustive(s, PHRASE)


def test_nothing_is_learned_unless_enabled(tmp_path: Path,
                                           refusing: pytest.MonkeyPatch) -> None:
    s = _searcher(tmp_path, 3, 2000)
    assert evidence.learner() is None
    _ask(s, QUERY3)
    assert _pairs_ready(s) == [False, False]


def test_a_job_that_fails_is_counted_and_logged_and_the_learner_goes_on(
        tmp_path: Path, refusing: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    s = _searcher(tmp_path, 3, 2000)
    real = evidence.compute
    calls = []

    def first_fails(job: evidence.Job) -> None:
        calls.append(job.si)
        if len(calls) == 1:
            raise OSError("segment file gone")
        real(job)

    refusing.setattr(evidence, "compute", first_fails)
    learner = evidence.enable()
    with caplog.at_level(logging.ERROR, logger="websift.indexer.evidence"):
        _ask(s, QUERY3)
        assert learner.settle(60.0)
    assert learner.stats()["failed"] == 1 and learner.stats()["learned"] == 1
    assert "segment file gone" in caplog.text
    assert _pairs_ready(s).count(True) == 1  # the other segment's job went through
    _ask(s, QUERY3)  # asked again: the failed one is handed over again, and learned
    assert learner.settle(60.0)
    assert _pairs_ready(s) == [True, True]


def test_a_full_queue_drops_jobs_and_counts_them(tmp_path: Path,
                                                 refusing: pytest.MonkeyPatch) -> None:
    s = _searcher(tmp_path, 3, 2000)
    gate = evidence.threading.Event()
    real = evidence.compute

    def held(job: evidence.Job) -> None:
        gate.wait(60.0)
        real(job)

    refusing.setattr(evidence, "compute", held)
    learner = evidence.enable(queue=1)
    try:
        _ask(s, QUERY3)  # two jobs: one taken by the thread (held), one queued
        _ask(s, "alpha beta")  # the queue is full: dropped
        assert learner.stats()["dropped"] >= 1
    finally:
        gate.set()
    assert learner.settle(60.0)
