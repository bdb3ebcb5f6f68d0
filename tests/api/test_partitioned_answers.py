"""A partitioned crawl's shards answer as one store of the same pages: the same ranked list,
the same scores, for queries with ties and with pages no shard fetched.

Two shards split by host, as ``crawl --partitioned`` splits them: each store numbers its URLs
its own way (one store numbers them a third way), ``rank --shard`` gives them global ranks,
each is indexed with the other's anchor export (indexer/anchor_exchange.py), each is served
by a real shard server on loopback, and a front server merges them (api/fanout.py).  Against
them, one store holding every page, ranked, indexed and served alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient

from testkit.corpus import build_data_dir
from tests.api.live import live_server
from websift.api.app import create_app
from websift.api.cli import main
from websift.api.settings import Settings
from websift.core.datadir import DataDir
from websift.indexer.searcher import IndexQuery, Searcher
from websift.store.views import StoreReader

A = "http://a.example"
B = "http://b.example"
C = "http://c.example"  # no shard's host: its page is known only from links
D = "http://d.example"  # a host split over the two shards (a partition's lease moved mid-crawl)
TOKEN = "partitioned-answers"
PATIENT_MS = 30_000  # a loaded machine must not drop a shard


def page(title: str, body: str, links: list[tuple[str, str]]) -> str:
    return (f"<html><head><title>{title}</title></head><body><main><h1>{title}</h1>"
            f"<p>{body}</p>" + "".join(f'<a href="{u}">{t}</a> ' for u, t in links)
            + "</main></body></html>")


# Two pages of b that are twins (the same words, the same links in and out): the same score,
# a tie only the URL breaks.  One page of c that no shard fetched, linked from both hosts with
# different texts: one anchor-only document with both texts.
TWINS = [f"{B}/zeta-marsh", f"{B}/alpha-marsh"]
NEVER = f"{C}/garden"
SHARD_A = {
    f"{A}/": page("Harbour office", "tides ferries and the harbour office",
                  [(f"{A}/ferries", "ferry times"), (f"{B}/", "the other bank"),
                   (NEVER, "walled garden")]),
    f"{A}/ferries": page("Ferries", "ferry times across the marsh estuary",
                         [(f"{A}/", "harbour office"), (f"{B}/", "marsh walks")]),
    # the only page in French: in one store of every page, and in shard A, queries are told
    # apart by language and an English query's English pages gain the language prior; shard
    # B alone holds English pages only
    f"{A}/marais": page("Le marais salant", "Le sentier du marais salant longe les roseaux "
                        "et les hérons, puis rejoint le port de la ville par la digue.",
                        [(f"{A}/", "le bureau du port")]).replace("<html>", '<html lang="fr">'),
}
SHARD_B = {
    f"{B}/": page("Marsh walks", "walks on the marsh by the estuary",
                  [(u, "salt marsh trail") for u in TWINS]
                  + [(f"{A}/", "harbour"), (NEVER, "secret garden")]),
    **{u: page("Salt marsh trail", "reeds herons and a salt marsh trail",
               [(f"{B}/", "marsh walks")]) for u in TWINS},
}


def dune(n: int, words: str) -> str:
    """Page n of host d: a navigation menu and a closing line on every page (d's template and
    navigation anchor texts, measured on all six pages in one store: three in each shard,
    under TEMPLATE_MIN_PAGES and ANCHOR_TEMPLATE_MIN_PAGES alone), and a described link."""
    return (f"<html><head><title>Dune {words}</title></head><body>"
            f'<nav><a href="{D}/">Home</a> <a href="{dune_url(n + 1)}">Next page</a></nav>'
            f"<main><h1>Dune {words}</h1><p>The {words} of the dunes by the sea.</p>"
            f'<p><a href="{dune_url(n + 2)}">{DUNE_WORDS[(n + 2) % 6]} of the dunes</a></p>'
            "<p>Dune society notes, kept by the wardens since the survey.</p>"
            "</main></body></html>")


def dune_url(n: int) -> str:
    return f"{D}/" if n % 6 == 0 else f"{D}/{n % 6}"


DUNE_WORDS = ["marram grass", "sand lizards", "wardens hut", "blowout hollow", "sea holly",
              "wind ripples"]
SPLIT = {dune_url(n): dune(n, w) for n, w in enumerate(DUNE_WORDS)}
SPLIT_A = dict(list(SPLIT.items())[:3])
SPLIT_B = dict(list(SPLIT.items())[3:])
DUNE_QUERIES = ["dune", "dunes sea", "wardens", "home dune", "next page", "society notes",
                "sand lizards", "marram"]
QUERIES = ["salt marsh", "marsh trail", "garden", "walled garden secret", "marsh", "harbour",
           "estuary ferry", "herons"]


def ranked(client: TestClient, q: str) -> list[dict[str, Any]]:
    response = client.get("/search", params={"q": q, "k": 10})
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()["results"]
    return results


@dataclass
class Served:
    alone: TestClient  # one store's server
    front: TestClient  # the front over the two shard servers
    shards: dict[str, DataDir]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("partitioned")
    # one store numbers the twins zeta first; shard B alpha first
    one = build_data_dir(root / "one", {**SHARD_A, **SHARD_B, **SPLIT})
    a = build_data_dir(root / "a", {**SHARD_A, **SPLIT_A})
    b = build_data_dir(root / "b", {**dict(reversed(SHARD_B.items())), **SPLIT_B})
    ids = []
    for d in (one, b):
        with StoreReader.open(d.store_path) as store:
            ids.append([store.url_id(u) or 0 for u in TWINS])
    assert (ids[0][0] < ids[0][1]) != (ids[1][0] < ids[1][1])  # URL IDs order them apart
    assert main(["rank", "--quiet", "--data", str(one.root)]) == 0
    assert main(["rank", "--quiet", "--shard", str(a.root), str(b.root)]) == 0
    assert main(["index", "--quiet", "--data", str(one.root)]) == 0
    for d in (a, b):
        assert main(["anchors", "export", "--data", str(d.root),
                     "--out", str(root / f"{d.root.name}.json")]) == 0
    for d, other in ((a, b), (b, a)):
        assert main(["index", "--quiet", "--data", str(d.root),
                     "--anchors-from", str(root / f"{other.root.name}.json")]) == 0
    with ExitStack() as stack:
        shard_urls = [stack.enter_context(live_server(d, shard_server=True, shard_token=TOKEN))
                      for d in (a, b)]
        alone = stack.enter_context(TestClient(create_app(Settings(
            data=one.root, reload_check_ms=0))))
        front = stack.enter_context(TestClient(create_app(Settings(
            shards=shard_urls, shard_token=TOKEN, shard_timeout_ms=PATIENT_MS,
            reload_check_ms=0))))
        yield Served(alone, front, {"a": a, "b": b})


def test_the_front_over_two_shards_ranks_as_one_store(
        served: Served) -> None:
    alone, front = served.alone, served.front
    for q in QUERIES:
        want, got = ranked(alone, q), ranked(front, q)
        assert want, q  # every query finds something: the comparison can fail
        assert [r["url"] for r in got] == [r["url"] for r in want], q
        for x, y in zip(want, got, strict=True):
            assert math.isclose(x["score"], y["score"], rel_tol=1e-9), (q, x["url"])
            assert math.isclose(x["signals"]["text"], y["signals"]["text"], rel_tol=1e-9), q


def test_a_host_split_over_the_shards_ranks_as_one_store(served: Served) -> None:
    # its navigation texts ("Home", "Next page") and template (the footer) are measured on
    # its pages of both shards together, as one store measures them on all of its pages
    alone, front = served.alone, served.front
    for q in DUNE_QUERIES:
        want, got = ranked(alone, q), ranked(front, q)
        assert [r["url"] for r in got] == [r["url"] for r in want], q
        for x, y in zip(want, got, strict=True):
            assert math.isclose(x["score"], y["score"], rel_tol=1e-9), (q, x["url"])
    assert {r["url"] for r in ranked(alone, "dune")} == set(SPLIT)  # it can fail
    # in one store the closing line is template: it finds no page
    assert not ranked(alone, "society notes")


def test_twins_tie_and_the_smaller_url_comes_first(
        served: Served) -> None:
    alone, front = served.alone, served.front
    for client in (alone, front):
        hits = [r for r in ranked(client, "salt marsh trail") if r["url"] in TWINS]
        assert [r["url"] for r in hits] == sorted(TWINS)
        assert hits[0]["score"] == hits[1]["score"]  # a tie: the test tells the orders apart


def test_a_page_no_shard_fetched_is_one_document_with_every_shards_texts(
        served: Served) -> None:
    for client in (served.alone, served.front):
        response = client.get("/search", params={"q": "walled secret", "explain": "true"})
        hits = [r for r in response.json()["results"] if r["url"] == NEVER]
        assert len(hits) == 1 and hits[0]["fetched"] is False
        # its anchor field holds the texts of both hosts' links: "walled" from a, "secret"
        # from b
        terms = hits[0]["explain"]["text"]["terms"]
        assert sorted(terms) == ["secret", "wall"]
        assert all(t["tf"] == {"anchor": 1} for t in terms.values())


def test_one_shard_holds_the_page_no_shard_fetched(served: Served) -> None:
    held = {name: NEVER in urls(d) for name, d in served.shards.items()}
    # a's source URL is the smaller: a holds it (with b's text), b leaves it out
    assert held == {"a": True, "b": False}


def urls(data: DataDir) -> set[str]:
    """The URLs of the live documents of a data directory's index."""
    return {h.url for h in Searcher.open(data).search(IndexQuery("garden walled secret")).hits}
