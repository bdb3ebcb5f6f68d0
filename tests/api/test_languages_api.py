"""Languages through the API: each result's ``lang`` in /search's JSON and the query's, the
``lang`` parameter and Accept-Language, /pages' ``lang``; the search page marks each result's
language and direction, and headless Chromium lays an Arabic result out right to left."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from testkit.corpus import build_data_dir
from websift.core.datadir import DataDir
from websift.indexer.build import build_index
from websift.ranking.rank_job import run_rank

CHROMIUM = "/usr/bin/chromium"
AR = "http://lang.example/ar"
FR = "http://lang.example/fr"
EN = "http://lang.example/en"


def _page(lang: str, title: str, body: str) -> str:
    return (f'<html lang="{lang}"><head><title>{title}</title></head><body><p>{body}</p>'
            f'<a href="{EN}">en</a> <a href="{FR}">fr</a> <a href="{AR}">ar</a></body></html>')


PAGES = {
    AR: _page("ar", "الشبكة", "إعداد الشبكة والحزم على الحاسوب. تصف هذه الصفحة كيفية إعداد "
              "الشبكة وتثبيت الحزم."),
    FR: _page("fr", "Réseau", "La configuration du réseau et des paquets installés sur le "
              "système, par l'administrateur."),
    EN: _page("en", "Network", "Configuring the network and the packages installed on the "
              "system, by the administrator."),
}


@pytest.fixture(scope="module")
def lang_data(tmp_path_factory: pytest.TempPathFactory) -> DataDir:
    data = build_data_dir(tmp_path_factory.mktemp("langapi") / "d", PAGES)
    build_index(data, procs=1)
    run_rank(data)
    return data


def test_search_json_says_each_language(lang_data: DataDir,
                                        make_client: Callable[..., TestClient]) -> None:
    client = make_client(lang_data)
    body = client.get("/search", params={"q": "reseau"}).json()
    assert [(r["url"], r["lang"]) for r in body["results"]] == [(FR, "fr")]
    assert client.get("/search", params={"q": "الشبكة"}).json()["results"][0]["lang"] == "ar"
    # The lang parameter, then Accept-Language, say which language the query is in.
    assert client.get("/search", params={"q": "installation", "lang": "fr"}).json()[
        "lang"] == "fr"
    asked = client.get("/search", params={"q": "installation"},
                       headers={"Accept-Language": "fr-FR,fr;q=0.9,en;q=0.5"}).json()
    assert asked["lang"] == "fr" and asked["results"][0]["url"] == FR
    assert client.get("/pages", params={"url": FR}).json()["lang"] == "fr"


def test_search_page_marks_language_and_direction(
        lang_data: DataDir, make_client: Callable[..., TestClient]) -> None:
    html = make_client(lang_data).get("/", params={"q": "الشبكة"}).text
    assert 'lang="ar" dir="rtl"' in html
    html = make_client(lang_data).get("/", params={"q": "network"}).text
    assert 'lang="en" dir="ltr"' in html


@pytest.mark.slow
@pytest.mark.chromium
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing")
def test_arabic_result_is_laid_out_right_to_left(
        lang_data: DataDir, make_client: Callable[..., TestClient], tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    html = make_client(lang_data).get("/", params={"q": "الشبكة OR network"}).text
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"])
        try:
            page = browser.new_page()
            page.set_content(html)
            direction = page.eval_on_selector_all(
                "li.result p.snippet",
                "els => els.map(e => [e.lang, getComputedStyle(e).direction])")
            assert ["ar", "rtl"] in direction and ["en", "ltr"] in direction
            # Right to left: the Arabic snippet's text starts at its box's right edge.
            box = page.eval_on_selector(
                "li.result p.snippet[lang=ar]", """e => {
                    const r = document.createRange(); r.selectNodeContents(e);
                    const t = r.getBoundingClientRect(), b = e.getBoundingClientRect();
                    return [b.right - t.right, t.left - b.left]; }""")
            assert box[0] < box[1]
        finally:
            browser.close()
