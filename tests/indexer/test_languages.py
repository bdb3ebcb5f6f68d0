"""Languages (indexer/languages.py): a page's language from its lang attribute, its
Content-Language or its text; stemming per language (Snowball), no English stemming on
another language's page; the query's language from a ``lang`` parameter, a ``lang:``
operator or its own words."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from testkit.corpus import build_data_dir, field_lengths
from testkit.testweb import Answer, TestWeb, html
from websift.core.datadir import DataDir
from websift.indexer.analysis import Analyzer
from websift.indexer.build import build_index
from websift.indexer.languages import (
    ENGLISH_STOP_WORDS,
    analysis_language,
    normalise_lang,
    page_language,
    query_language,
    stoplist_for,
)
from websift.indexer.parse import parse_html
from websift.indexer.query import split_lang
from websift.indexer.searcher import IndexQuery, Searcher
from websift.indexer.segment import SegmentReader

FRENCH = ("La configuration du réseau se fait avec le gestionnaire de paquets. Les réseaux "
          "sont configurés par l'administrateur du système, qui installe les paquets.")
GERMAN = ("Die Pakete werden mit dem Paketmanager installiert und entfernt. Ein Paket "
          "enthält Dateien, die das System braucht.")
RUSSIAN = ("Настройка сети и сетевых интерфейсов. Эта страница описывает, как настроить "
           "сеть на вашем компьютере.")
ENGLISH = ("Running the installer: packages are installed and removed with the package "
           "manager running on the system.")


def page(lang: str | None, title: str, body: str, meta: str = "") -> str:
    attr = f' lang="{lang}"' if lang else ""
    return (f"<html{attr}><head><title>{title}</title>{meta}</head>"
            f"<body><p>{body}</p></body></html>")


def test_english_stop_words_are_whooshs() -> None:
    # written out to spare start-up the import of whoosh.analysis: they must stay Whoosh's
    from whoosh.analysis import STOP_WORDS

    assert ENGLISH_STOP_WORDS == STOP_WORDS
    assert stoplist_for("en") == STOP_WORDS


def test_tags_and_analysis_languages() -> None:
    assert normalise_lang("fr-CA") == "fr"
    assert normalise_lang("en_US") == "en"
    assert normalise_lang("fr-CH, fr;q=0.9, en;q=0.8") == "fr"  # Accept-Language
    assert normalise_lang("") is None and normalise_lang("x-klingon") is None
    assert analysis_language(None) == "en"  # unknown: English, as before languages
    assert analysis_language("ru") == "ru"
    assert analysis_language("ja") == "none"  # no Snowball stemmer: no stemming


def test_a_page_language_from_its_declaration_or_its_text() -> None:
    assert page_language("de", GERMAN) == "de"
    assert page_language(None, RUSSIAN) == "ru"
    assert page_language("en", FRENCH) == "fr"  # a template's lang the text contradicts
    assert page_language("fr", "OK") == "fr"  # too short to judge: the declaration
    assert page_language(None, "OK") is None
    # Names and numbers give the identifier no confident guess: unknown (English analysis),
    # not a language picked at 6% (which stemmed them with Finnish rules).
    assert page_language(None, "persimmon number3 " * 20) is None


def test_content_language_meta_is_a_declaration() -> None:
    html = page(None, "t", "x", '<meta http-equiv="Content-Language" content="nl-BE">')
    assert parse_html(html.encode(), "http://h.example/").lang == "nl-BE"
    assert parse_html(page("fi", "t", "x").encode(), "http://h.example/").lang == "fi"


def test_stemming_per_language() -> None:
    ru, de, fr = Analyzer(lang="ru"), Analyzer(lang="de"), Analyzer(lang="fr")
    assert ru.terms("сеть") == ru.terms("сети")  # one word in two cases
    assert de.terms("Paket") == de.terms("Pakete")
    assert fr.terms("réseaux") == fr.terms("réseau") == fr.terms("reseau")
    # English's analysis is Porter's; a French page's English-looking words are not stemmed
    # with it.
    assert Analyzer().terms("installed") == Analyzer().terms("installation") == ["instal"]
    assert fr.terms("installation") == fr.terms("installe") == ["install"]
    assert Analyzer(lang="none").terms("installed") == ["installed"]


def test_query_language() -> None:
    many = {"en": 5, "fr": 3, "ru": 2}
    assert query_language("anything", explicit="fr-FR", index_langs=many) == ("fr", True)
    assert query_language("сети", index_langs=many) == ("ru", True)  # its script says so
    assert query_language("x", index_langs={"de": 3}) == ("de", True)  # the only one
    lang, sure = query_language("ab", hint="fr", index_langs=many)
    assert lang == "fr" and not sure  # Accept-Language when the words do not tell
    assert query_language("ab", hint="sv", index_langs=many) == ("en", False)  # most common
    assert split_lang("paquets lang:fr réseau") == ("paquets réseau", "fr")
    assert split_lang("lang") == ("lang", None)


PAGES = {
    "http://l.example/fr": page("fr", "Réseau", FRENCH),
    "http://l.example/de": page("de", "Pakete verwalten", GERMAN),
    "http://l.example/ru": page(None, "Сеть", RUSSIAN),
    "http://l.example/en": page("en", "Installer", ENGLISH),
}


@pytest.fixture(scope="module")
def searcher(tmp_path_factory: pytest.TempPathFactory) -> Searcher:
    data = build_data_dir(tmp_path_factory.mktemp("langs") / "d", PAGES)
    build_index(DataDir.open(data.root), procs=1)
    return Searcher.open(data)


def _urls(s: Searcher, q: str, **kw: str) -> list[str]:
    return [h.url.rsplit("/", 1)[1] for h in s.search(IndexQuery(q, **kw)).hits]  # type: ignore[arg-type]


def test_each_page_is_stored_with_its_language(searcher: Searcher) -> None:
    assert searcher.index_langs == {"fr": 1, "de": 1, "ru": 1, "en": 1}
    hits = searcher.search(IndexQuery("réseau")).hits
    assert [(h.url.rsplit("/", 1)[1], h.lang) for h in hits] == [("fr", "fr")]


def test_search_in_each_language(searcher: Searcher) -> None:
    assert _urls(searcher, "сеть") == _urls(searcher, "сети") == ["ru"]
    assert _urls(searcher, "Paket")[0] == _urls(searcher, "Pakete")[0] == "de"
    assert _urls(searcher, "reseau") == _urls(searcher, "réseaux") == ["fr"]
    # A word's punctuation ("Pakete." typed as a heading ends) does not keep it from the other
    # languages' forms.
    assert _urls(searcher, "Pakete.")[0] == _urls(searcher, "Pakete")[0] == "de"
    assert _urls(searcher, "réseaux,") == ["fr"]
    # "installation" in English finds the English page's "installed" (Porter: "instal"), not
    # the French page's "installe" (French Snowball: "install"); asked in French, the other.
    assert _urls(searcher, "installation lang:en") == ["en"]
    assert _urls(searcher, "installation lang:fr") == ["fr"]


def test_the_query_language_as_asked(searcher: Searcher) -> None:
    assert searcher.search(IndexQuery("paquets", lang="fr")).lang == "fr"
    assert searcher.search(IndexQuery("paquets lang:de", lang="fr")).lang == "de"
    assert searcher.search(IndexQuery("сети")).lang == "ru"
    found = searcher.search(IndexQuery("paquets", lang_hint="fr-FR,fr;q=0.9"))
    assert found.lang == "fr" and found.hits[0].url.endswith("/fr")


def test_pages_in_the_query_language_are_preferred(tmp_path: Path) -> None:
    # The same short text (too short to identify) declared in two languages: the prior of
    # the query's language (BM25FSettings.lang_prior) orders them, nothing else does.
    same = {"http://p.example/de": page("de", "Linux", "Kernel Linux"),
            "http://p.example/nl": page("nl", "Linux", "Kernel Linux")}
    data = build_data_dir(tmp_path / "d", same)
    build_index(data, procs=1)
    s = Searcher.open(data)
    for lang in ("de", "nl"):
        hits = s.search(IndexQuery("kernel", lang=lang)).hits
        assert hits[0].url.endswith("/" + lang) and hits[0].score > hits[1].score
    flat = Searcher(s.manifest, s.segments, replace(s.settings, lang_prior=0.0))
    hits = flat.search(IndexQuery("kernel", lang="nl")).hits
    assert hits[0].score == hits[1].score


def test_pages_of_unknown_language_are_found_beside_another_language(tmp_path: Path) -> None:
    # An index of Finnish pages and one page of unknown language (too short to identify,
    # no declaration: analysed as English).  The query is searched in English's forms too,
    # so that page is found for its word, not only in the Finnish form of the word.
    pages = {f"http://f.example/{i}": page("fi", f"Sivu {i}", "Paketit asennetaan ja "
                                           "poistetaan paketinhallinnalla. Paketti sisältää "
                                           "tiedostoja, joita järjestelmä tarvitsee.")
             for i in range(5)}
    pages["http://f.example/x"] = page(None, "Notes", "durian replaces persimmon")
    data = build_data_dir(tmp_path / "d", pages)
    build_index(data, procs=1)
    s = Searcher.open(data)
    assert [h.url for h in s.search(IndexQuery("durian")).hits] == ["http://f.example/x"]
    assert [h.url for h in s.search(IndexQuery("replaces")).hits] == ["http://f.example/x"]


def test_a_merge_keeps_each_page_language_and_its_terms(tmp_path: Path) -> None:
    from websift.indexer.merge import merge_segments
    from websift.indexer.segment_writer import SegmentWriter

    w = SegmentWriter(tmp_path / "a", 1 << 20)
    w.add_document(1, host="t", url="http://t/ru", title="Сети", text=RUSSIAN,
                   fields=["Сети", "", RUSSIAN], lang="ru")
    w.add_document(2, host="t", url="http://t/x", title="x", text="x", fields=["x"])
    w.finish()
    seg = SegmentReader(tmp_path / "a")
    assert seg.langs() == {"ru": 1, "": 1}
    merge_segments([seg], [np.ones(2, dtype=bool)], tmp_path / "m", 1 << 20)
    merged = SegmentReader(tmp_path / "m")
    assert [merged.head(o)["lang"] for o in range(2)] == ["ru", ""]
    assert merged.langs() == {"ru": 1, "": 1}
    assert merged.term_row(Analyzer(lang="ru").terms("сети")[0]) is not None


def test_a_word_counts_toward_length_as_its_own_page_s_language_says(tmp_path: Path) -> None:
    """"die" is a German stop word and an English word: on an English page it counts toward
    the field length whichever page's language a worker met it in first (here the German page,
    analysed first), so an index does not depend on how its pages were spread over workers."""
    site = "http://lens.example"
    pages = {f"{site}/a": page("de", "Deutsch", GERMAN),
             f"{site}/b": page("en", "Plants", ENGLISH + " The plants die in winter."),
             f"{site}/c": page("en", "Plants", ENGLISH + " The plants grow in winter.")}
    data = build_data_dir(tmp_path / "d", pages)
    build_index(DataDir.open(data.root), procs=1)
    lens = field_lengths(data)
    assert lens[f"{site}/b"] == lens[f"{site}/c"]
    german_only = sum(lens[f"{site}/a"])
    assert german_only < sum(lens[f"{site}/b"])  # its stop words ("die", "mit") are no length


def test_a_page_that_declares_its_language_only_in_http_is_analysed_in_it(
        tmp_path: Path, run_websift: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    """A real crawl of a loopback site whose pages say their language only in the HTTP
    ``Content-Language`` header (texts too short for the identifier): the index takes it from
    the WARC record; a page's own ``lang`` wins over the header."""
    web = TestWeb()
    site = web.add_site("langs", "127.0.0.83", robots=None)
    with web:
        links = "".join(f"<a href='/{n}'>{n}</a> " for n in ("de", "fr", "own"))
        site.page("/", Answer(body=html("home", f"<p>{links}</p>")))
        site.page("/de", Answer(body=html("Pakete", "<p>Die Pakete</p>"),
                                headers={"Content-Language": "de-DE, en"}))
        site.page("/fr", Answer(body=html("Paquets", "<p>Les paquets</p>"),
                                headers={"Content-Language": "fr"}))
        site.page("/own", Answer(body=b"<html lang='it'><head><title>Pacchetti</title></head>"
                                      b"<body><p>I pacchetti</p></body></html>",
                                 headers={"Content-Language": "fr"}))
        data = tmp_path / "data"
        run = run_websift("crawl", site.url("/"), "--data", str(data), "--delay", "0",
                          "--allow-private", "--quiet", "--no-signals")
        assert run.returncode == 0, run.stderr
    assert run_websift("index", "--quiet", "--data", str(data)).returncode == 0
    s = Searcher.open(DataDir.open(data))
    langs = {h.url.rsplit("/", 1)[1]: h.lang
             for q in ("pakete", "paquets", "pacchetti") for h in s.search(IndexQuery(q)).hits}
    assert langs == {"de": "de", "fr": "fr", "own": "it"}
