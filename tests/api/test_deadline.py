"""The search deadline (issue 11): past WEBSIFT_SEARCH_DEADLINE_MS a search answers with what it
has, ``partial: true`` in the JSON and a notice on the page, never an error, never cached; and
the server keeps answering another client while one sends the costliest phrase.

The index is small, so the tests make the pruned evaluation (the one that checks the deadline)
serve it and take its work in the smallest steps (indexer/topk.py).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx
import pytest

from testkit.corpus import build_data_dir
from tests.api.live import WAIT, live_server
from websift.core.datadir import DataDir
from websift.indexer import searcher, topk
from websift.indexer.build import build_index

pytestmark = pytest.mark.slow  # a live server and worst-case phrases

HOSTS, PER_HOST = 10, 200  # 2,000 pages, each with the two common words many times
WORST = '"garden note"'  # both words on every page: every page is a phrase candidate
RARE = "page7host3"
PHRASE_REQUESTS = 6


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> DataDir:
    docs = {
        f"http://h{h}.example/{i}.html": (
            f"<html><head><title>Note {h} {i}</title></head><body><p>"
            + " ".join(["garden", "note", "of", "the"][(i + j) % 4] for j in range(60))
            + f" page{i}host{h}</p></body></html>")
        for h in range(HOSTS) for i in range(PER_HOST)
    }
    d = build_data_dir(tmp_path_factory.mktemp("deadline") / "data", docs)
    build_index(d, procs=1)
    return d


@pytest.fixture(autouse=True)
def pruned_in_small_steps() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(searcher, "EXHAUSTIVE_MAX_DOCS", 0)
        mp.setattr(searcher, "EXHAUSTIVE_MAX_POSTINGS", -1)  # few postings too
        mp.setattr(topk, "PRUNE_FIRST_POSTINGS", 1)
        mp.setattr(topk, "PRUNE_VERIFY_FIRST", 1)
        yield


def test_past_the_deadline_the_answer_is_partial_not_an_error(pages: DataDir) -> None:
    with live_server(pages, search_deadline_ms=0.001) as base, httpx.Client(
            base_url=base, timeout=WAIT) as http:
        for _ in range(2):  # a partial answer is never cached: the second search runs again
            r = http.get("/search", params={"q": WORST})
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["partial"] is True and body["cached"] is False
            assert body["total_relation"] == "gte"
        page = http.get("/", params={"q": WORST})
        assert page.status_code == 200
        assert "Partial results: this query took longer than the search deadline" in page.text


def test_within_the_deadline_the_answer_is_whole(pages: DataDir) -> None:
    with live_server(pages, search_deadline_ms=60_000) as base, httpx.Client(
            base_url=base, timeout=WAIT) as http:
        body = http.get("/search", params={"q": RARE}).json()
        assert body["partial"] is False and body["total_relation"] == "eq"
        assert body["total"] == 1 and body["results"][0]["url"] == "http://h3.example/7.html"
        page = http.get("/", params={"q": RARE}).text
        assert "Partial results" not in page


def test_other_clients_are_answered_while_one_sends_the_worst_phrase(pages: DataDir) -> None:
    with live_server(pages, search_deadline_ms=50, result_cache_size=0) as base:
        worst: list[httpx.Response] = []

        def hammer() -> None:
            with httpx.Client(base_url=base, timeout=WAIT) as http:
                worst.extend(http.get("/search", params={"q": WORST})
                             for _ in range(PHRASE_REQUESTS))

        thread = threading.Thread(target=hammer)
        thread.start()
        answered = []
        with httpx.Client(base_url=base, timeout=WAIT) as http:
            while thread.is_alive() or not answered:
                answered.append(http.get("/search", params={"q": RARE}))
        thread.join(WAIT)
        assert len(worst) == PHRASE_REQUESTS
        assert all(r.status_code == 200 for r in worst + answered)
        # The rare word's answers were whole and right while the phrase ran.
        for r in answered:
            assert r.json()["results"][0]["url"] == "http://h3.example/7.html"
