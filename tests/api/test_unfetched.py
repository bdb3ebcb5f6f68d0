"""Pages known only from links: labelled in JSON and on the page, and ranked below fetched
pages unless their text evidence is stronger by more than BM25FSettings.fetched_prior."""

from __future__ import annotations

import numpy as np
from fastapi.testclient import TestClient

from tests.api.site import CODE, DISALLOWED, HOME
from websift.core.datadir import DataDir
from websift.indexer.fetched import with_fetched
from websift.indexer.searcher import IndexQuery, Searcher
from websift.indexer.settings import BM25FSettings


def test_a_page_known_only_from_links_is_labelled(client: TestClient) -> None:
    hits = client.get("/search", params={"q": "secret"}).json()["results"]
    # The home page holds the word in the text of its link to the secret page.
    assert [(h["url"], h["fetched"]) for h in hits] == [(HOME, True), (DISALLOWED, False)]
    fetched = client.get("/search", params={"q": "generators"}).json()["results"]
    assert fetched and all(h["fetched"] for h in fetched)
    html = client.get("/", params={"q": "secret"}).text
    assert html.count('class="unfetched"') == 1 and "known only from links" in html


def test_fetched_pages_gain_the_prior_and_unfetched_do_not(site_data: DataDir) -> None:
    base = Searcher.open(site_data)
    assert len(base.unfetched) >= 1
    # "python tutorial" is the anchor text of links to CODE[0]; the secret page's anchor is
    # "secret": with fetched_prior 0 the scores are the text alone.
    for prior in (0.0, 3.0):
        s = Searcher(base.manifest, base.segments, BM25FSettings(fetched_prior=prior))
        hits = s.search(IndexQuery("secret OR python", k=50, snippets=False)).hits
        by_url = {h.url: h for h in hits}
        assert by_url[DISALLOWED].score == by_url[DISALLOWED].text_score
        assert by_url[CODE[0]].score - by_url[CODE[0]].text_score == prior
    s.close()


def test_with_fetched_adds_to_the_other_prior_and_its_bound() -> None:
    unfetched = np.array([3, 7], dtype=np.int64)
    prior, bound, key = with_fetched(unfetched, 2.0, lambda ids: np.full(len(ids), 0.5), 1.0,
                                     "pagerank")
    assert prior(np.array([1, 3, 7, 9])).tolist() == [2.5, 0.5, 0.5, 2.5]
    assert bound == 3.0 and key == ("pagerank", "fetched", 2.0)
    alone, bound, key = with_fetched(unfetched, 2.0, None, None, None)
    assert alone(np.array([3, 4])).tolist() == [0.0, 2.0] and bound == 2.0
