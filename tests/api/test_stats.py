"""GET /stats, /healthz and /recrawl; and a data directory with no index yet."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from testkit.corpus import build_data_dir
from tests.api.site import GARDEN
from websift.api.app import create_app
from websift.api.settings import Settings
from websift.core.datadir import DataDir
from websift.core.errors import StoreError
from websift.indexer.build import build_index
from websift.indexer.errors import IndexCorrupt
from websift.ranking.errors import RanksCorrupt
from websift.store.views import StoreReader


def test_stats_counts_what_is_there(client: TestClient, site_data: DataDir) -> None:
    stats = client.get("/stats").json()
    with StoreReader.open(site_data.store_path) as store:
        assert stats["pages"] == store.url_count()
        assert stats["links"] == store.link_count()
    assert stats["pages_by_status"]["fetched"] == 28
    assert stats["fetched_pages"] == 28
    assert stats["urls"] == stats["pages"] == sum(stats["pages_by_status"].values())
    assert stats["indexed_docs"] >= 26 and stats["index_segments"] == 1
    assert stats["index_generation"] == 1 and stats["ranks_generation"] == 1


def test_stats_separates_fetched_pages_from_urls_known_from_links(
    tmp_path: Path, make_client: Callable[..., TestClient]
) -> None:
    pages = {url: f"<title>{i}</title><p>flower {i}</p><a href='{url}/more'>more</a>"
             for i, url in enumerate(GARDEN[:3])}
    data = build_data_dir(tmp_path / "data", pages, status={GARDEN[3]: "error"})
    build_index(data)
    stats = make_client(data).get("/stats").json()
    assert stats["fetched_pages"] == 3
    assert stats["link_only_urls"] == 3  # the three /more links, never fetched
    assert stats["urls"] == stats["pages"] == 7  # and the one that failed
    assert stats["pages_by_status"] == {"fetched": 3, "discovered": 3, "error": 1}


def test_healthz(client: TestClient) -> None:
    assert client.get("/healthz").json() == {
        "status": "ok", "index_generation": 1, "ranks_generation": 1}


def test_recrawl_lists_the_schedule_highest_first(client: TestClient) -> None:
    body = client.get("/recrawl", params={"limit": 5}).json()
    assert body["limit"] == 5 and len(body["entries"]) == 5
    prios = [e["priority"] for e in body["entries"]]
    assert prios == sorted(prios, reverse=True)
    assert all(e["last_fetch"] is not None for e in body["entries"])
    r = client.get("/recrawl", params={"limit": 0})
    assert r.status_code == 422 and "limit: must be at least 1" in r.json()["error"]["message"]
    r = client.get("/recrawl", params={"limit": 10**6})
    assert r.status_code == 422 and "limit: must be at most 1000" in r.json()["error"]["message"]


def test_no_index_yet_is_503_then_served_once_built(
    tmp_path: Path, make_client: Callable[..., TestClient]
) -> None:
    data = build_data_dir(tmp_path / "data", {GARDEN[0]: "<title>Roses</title><p>roses</p>"})
    client = make_client(data)
    for path in ("/healthz", "/search?q=roses", "/stats"):
        r = client.get(path)
        assert r.status_code == 503, path
        assert r.json()["error"]["code"] == "index_missing"
        assert "websift index" in r.json()["error"]["message"]
    assert client.get("/", params={"q": "roses"}).status_code == 503
    build_index(data)  # no restart: the next request finds the index (no ranks: text only)
    body = client.get("/search", params={"q": "roses"}).json()
    assert [r["url"] for r in body["results"]] == [GARDEN[0]]
    assert body["results"][0]["signals"]["pagerank"] is None
    assert body["static_score"] == "none"


def test_serve_refuses_a_directory_that_is_not_websift(tmp_path: Path) -> None:
    (tmp_path / "stuff.txt").write_text("x")
    with pytest.raises(StoreError, match="not a websift data directory"):
        create_app(Settings(data=tmp_path))


def test_an_unreadable_index_or_ranks_refuses_to_start(
    site_data: DataDir, tmp_path: Path
) -> None:
    data_root = tmp_path / "data"
    shutil.copytree(site_data.root, data_root)
    data = DataDir.open(data_root)
    ranks_manifest = data.ranks_dir / "manifest.json"
    body = json.loads(ranks_manifest.read_text())
    ranks_manifest.write_text(json.dumps({**body, "version": 99}))
    with pytest.raises(RanksCorrupt, match="99"):
        create_app(Settings(data=data_root))
    ranks_manifest.write_text(json.dumps(body))
    (data.index_dir / "manifest.json").write_text("{not json")
    with pytest.raises(IndexCorrupt):
        create_app(Settings(data=data_root))


def test_recrawl_and_pages_share_one_reading_of_the_schedule(client: TestClient) -> None:
    first = client.get("/recrawl", params={"limit": 3}).json()["entries"]
    assert client.get("/recrawl", params={"limit": 2}).json()["entries"] == first[:2]
    assert client.get("/pages", params={"url": GARDEN[0]}).status_code == 200
    assert client.app.state.schedule_cache.readings == 1  # type: ignore[attr-defined]
