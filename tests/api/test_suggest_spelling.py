"""Did you mean, /suggest and /opensearch.xml over the test site's index, and the speller and
completer on words of their own."""

from __future__ import annotations

import json
import random
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from testkit.corpus import build_data_dir
from websift.api.index_words import FEW_RESULTS
from websift.indexer.analysis import Analyzer
from websift.indexer.build import build_index
from websift.indexer.completion import Completer
from websift.indexer.spelling import Speller

OS = "{http://a9.com/-/spec/opensearch/1.1/}"


def test_a_misspelt_query_gets_did_you_mean_in_json_and_page(client: TestClient) -> None:
    r = client.get("/search", params={"q": "tulps"}).json()
    assert r["total"] == 0 and r["results"] == []  # what was typed is what was searched
    assert r["did_you_mean"] == "tulips"  # the titles' surface form, not the stem "tulip"
    assert client.get("/search", params={"q": "gardning"}).json()["did_you_mean"] == "garden"
    html = client.get("/", params={"q": "tulps", "as_typed": 1}).text  # as typed (see test_web)
    assert 'Did you mean <a href="/?q=tulips">tulips</a>?' in html


def test_a_word_no_page_holds_gets_a_suggestion_though_the_others_find_pages(
        client: TestClient) -> None:
    r = client.get("/search", params={"q": "tulps garden"}).json()
    assert r["total"] > FEW_RESULTS  # "garden" finds pages; "tulps" is in none
    assert r["did_you_mean"] == "tulips garden"
    later = client.get("/search", params={"q": "tulps garden", "offset": 10}).json()
    assert later["did_you_mean"] is None  # offered on the first page only
    assert client.get("/search", params={"q": "tulips garden"}).json()["did_you_mean"] is None


def test_no_suggestion_for_good_words_cjk_or_nonsense(client: TestClient) -> None:
    for q in ("tulips", "garden note", "空间", "zzqxv"):
        assert client.get("/search", params={"q": q}).json()["did_you_mean"] is None, q


def test_operators_and_quotes_are_kept(client: TestClient) -> None:
    r = client.get("/search", params={"q": '"prunning" -soil'}).json()
    assert r["did_you_mean"] == '"pruning" -soil'


def test_suggest_completes_titles_and_words(client: TestClient) -> None:
    r = client.get("/suggest", params={"q": "gar"})
    assert r.headers["content-type"].startswith("application/x-suggestions+json")
    query, found = json.loads(r.text)
    assert query == "gar" and found[0] == "garden"  # the heaviest first
    assert "Garden note 1: tulips" in found and len(found) == 8
    _, found = client.get("/suggest", params={"q": "CODE NOTE 3: gen"}).json()
    assert found == ["Code note 3: generators"]
    assert client.get("/suggest", params={"q": "qqqq"}).json() == ["qqqq", []]
    assert len(client.get("/suggest", params={"q": "gar", "k": 2}).json()[1]) == 2


def test_opensearch_description_is_advertised(client: TestClient) -> None:
    html = client.get("/").text
    assert '<link rel="search" type="application/opensearchdescription+xml"' in html
    r = client.get("/opensearch.xml")
    assert r.headers["content-type"].startswith("application/opensearchdescription+xml")
    urls = {u.get("type"): u.get("template") for u in ET.fromstring(r.text).iter(OS + "Url")}
    assert urls["text/html"] == "http://testserver/?q={searchTerms}"
    assert urls["application/x-suggestions+json"] == "http://testserver/suggest?q={searchTerms}"


def test_speller_prefers_fewer_edits_then_more_documents() -> None:
    en = Analyzer()
    speller = Speller({"asyncio": 40, "asyncore": 3, "async": 90, "sort": 50, "typo": 1},
                      {"sort": "sorting"})
    assert speller.nearest("asyncoi", en) == "asyncio"  # a swap is one edit
    assert speller.nearest("sortin", en) == "sorting"
    assert speller.nearest("asyncio", en) is None
    assert speller.nearest("typ", en) is None  # "typo" is in one page only: no suggestion
    assert speller.nearest("as", en) is None  # too short


def test_a_word_with_its_scripts_combining_marks_gets_a_suggestion() -> None:
    # Hindi: "व्याकरण" (grammar) typed with न for its ण; its vowel signs and virama are not letters
    # to str.isalpha, but they are the word's.
    hi = Analyzer(lang="hi")
    speller = Speller({"व्याकरण": 40, "भाषा": 60}, {})
    assert speller.nearest("व्याकरन", hi) == "व्याकरण"
    assert speller.nearest("व्याकरण", hi) is None


def test_completer_keeps_earlier_words_and_ranks_by_weight() -> None:
    c = Completer([("alpha", "alpha", 1.0), ("alphabet", "alphabet", 5.0),
                   ("beta", "beta", 2.0)])
    assert c.complete("alp") == ["alphabet", "alpha"]
    assert c.complete("beta alp", 1) == ["beta alphabet"]
    assert c.complete("") == [] and c.complete("zz") == []


def test_completer_top_k_equals_a_full_sort_over_wide_ranges() -> None:
    rng = random.Random(3)
    entries = [("".join(rng.choices("abc", k=rng.randint(1, 9))), "x",
                float(rng.randint(1, 10**6))) for _ in range(30_000)]
    c = Completer(entries)
    for _ in range(200):
        p = "".join(rng.choices("abc", k=rng.randint(1, 5)))
        want = sorted((i for i, key in enumerate(c.keys) if key.startswith(p)),
                      key=lambda i: (-c.weights[i], c.keys[i]))[:8]
        assert [c.weights[i] for i in c._range(p, 8)] == [c.weights[i] for i in want], p


def test_a_word_only_a_typo_page_holds_gets_a_suggestion_among_many_results(
        tmp_path: Path, make_client: Callable[..., TestClient]) -> None:
    base = "http://127.0.0.1:8942"
    site = {f"{base}/{i}.html": f"<html><head><title>Threading locks {i}</title></head><body><p>The "
            f"threading module's lock number {i} guards shared state.</p></body></html>"
            for i in range(24)}
    site[f"{base}/typo.html"] = ("<html><head><title>Typo</title></head><body><p>A theading "
                                 "lock, and the zanzibar lock.</p></body></html>")
    data = build_data_dir(tmp_path / "data", site)
    build_index(data)
    client = make_client(data)
    r = client.get("/search", params={"q": "theading lock"}).json()
    assert r["total"] > FEW_RESULTS  # every page holds "lock"; one holds the typo
    assert r["did_you_mean"] == "threading lock"
    # a rare word with no frequent word near it, and common words alone, are left as typed
    assert client.get("/search", params={"q": "zanzibar lock"}).json()["did_you_mean"] is None
    assert client.get("/search", params={"q": "threading lock"}).json()["did_you_mean"] is None


@pytest.mark.parametrize(("title", "body"), [
    # in the titles: the titles analysed in their page's language give the word
    ("Установка пакета", "Установка пакета номер {i} с помощью менеджера пакетов."),  # noqa: RUF001
    # in the text only: the text of a page holding the stem gives the word
    ("Страница", "Здесь описана Установка программы номер {i}."),
])
def test_a_correction_in_another_language_is_shown_as_its_pages_write_it(
        title: str, body: str, tmp_path: Path, make_client: Callable[..., TestClient]) -> None:
    # Russian pages: the index holds the Russian stem ("установк"); the correction shows the
    # word ("установка"), not the stem.
    base = "http://127.0.0.1:8943"
    site = {f"{base}/{i}.html": f"<html lang='ru'><head><title>{title} {i}</title></head>"
            f"<body><p>{body.format(i=i)}</p></body></html>" for i in range(24)}
    data = build_data_dir(tmp_path / "data", site)
    build_index(data)
    r = make_client(data).get("/search", params={"q": "установкаа", "lang": "ru"}).json()
    assert r["did_you_mean"] == "установка"
