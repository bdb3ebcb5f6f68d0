"""GET /metrics: Prometheus text that Prometheus's own parser reads, with the search latency
histogram and the running crawl's figures; and those figures in GET /stats.

The crawl figures here are written into a private copy of the test site's store with the
store's own methods, as a crawl writes them; tests/crawler/test_continuous.py reads them from a
real continuous crawl through a real ``websift serve``.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from tests.api.conftest import ADMIN_TOKEN
from websift.api.prometheus import Exposition, Histogram
from websift.core.datadir import DataDir
from websift.indexer.manifest import read_manifest, write_manifest
from websift.store.crawl_store import CrawlStore


def families(text: str) -> dict[str, object]:
    return {f.name: f for f in text_string_to_metric_families(text)}


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """(sample name, sorted labels) -> value, for every sample the parser reads."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_metrics_parse_and_time_every_search(client: TestClient) -> None:
    before = samples(client.get("/metrics").text)
    count_before = before[("websift_search_latency_seconds_count", ())]
    for q in ("roses", "functions", "compost soil", "roses"):
        assert client.get("/search", params={"q": q}).status_code == 200
    assert client.get("/search", params={"q": ""}).status_code == 422  # timed too, as a 422

    r = client.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = r.text
    fams = families(text)  # raises on anything Prometheus could not read
    assert fams["websift_search_latency_seconds"].type == "histogram"  # type: ignore[attr-defined]
    for line in text.splitlines():  # every family says what it is
        if line.startswith("# TYPE "):
            name = line.split()[2]
            assert f"# HELP {name} " in text
    got = samples(text)
    assert got[("websift_search_latency_seconds_count", ())] == count_before + 5
    buckets = sorted(
        (float(dict(labels)["le"]), value) for (name, labels), value in got.items()
        if name == "websift_search_latency_seconds_bucket"
    )
    counts = [v for _, v in buckets]
    assert counts == sorted(counts)  # cumulative
    assert buckets[-1] == (math.inf, count_before + 5)
    assert got[("websift_search_latency_seconds_sum", ())] > 0
    assert got[("websift_search_requests_total", (("status", "422"),))] >= 1
    assert got[("websift_search_requests_total", (("status", "200"),))] >= 4
    assert got[("websift_index_up", ())] == 1
    assert got[("websift_generation", (("part", "index"),))] == 1
    assert got[("websift_crawl_running", ())] == 0  # the site was stored, never crawled


ADMIN = {"authorization": f"Bearer {ADMIN_TOKEN}"}


def test_a_swap_is_timed_in_stats_and_metrics(
    fresh_data: DataDir, make_client: Callable[..., TestClient]
) -> None:
    client = make_client(fresh_data, reload_check_ms=0)  # each request checks, and swaps
    assert client.get("/search", params={"q": "roses"}).status_code == 200
    stats = client.get("/stats").json()
    assert stats["reloads"] == 0 and stats["reload_seconds"]["count"] == 0
    manifest = read_manifest(fresh_data.index_dir)
    manifest.generation += 1  # the same segments, a new generation: one swap
    write_manifest(fresh_data.index_dir, manifest)
    assert client.get("/search", params={"q": "roses"}).status_code == 200
    stats = client.get("/stats").json()
    times = stats["reload_seconds"]
    assert stats["reloads"] == 1 and times["count"] == 1
    assert times["p50"] == times["max"] == times["last"] == times["total"] > 0
    assert times["cpu_total"] > 0 and times["state_total"] > 0
    assert stats["reload_cpu_seconds"] >= 0  # no reload thread with reload_check_ms 0
    got = samples(client.get("/metrics").text)
    assert got[("websift_snapshot_reloads_total", ())] == 1
    assert got[("websift_snapshot_reload_seconds_total", ())] == times["total"]
    assert got[("websift_snapshot_reload_seconds", (("stat", "max"),))] == times["max"]
    assert got[("websift_snapshot_reload_phase_seconds_total", (("phase", "state"),))] > 0


def test_live_crawl_figures_in_metrics_and_stats(
    fresh_data: DataDir, make_client: Callable[..., TestClient]
) -> None:
    now = time.time()
    live = {
        "pid": os.getpid(), "kind": "crawl", "continuous": True, "state": "running",
        "started": now - 60, "updated": now, "pages": 120, "discovery_fetches": 100,
        "refresh_fetches": 21, "pages_per_second": 2.0, "recent_pages_per_second": 3.5,
        "in_flight": 4, "errors": {"failure/http_404": 3, 'failure/odd "reason"\\': 1},
        "frontier": {"pending_unread": 17.0, "known": 140.0}, "virtual_cash": 0.125,
    }
    with CrawlStore.open(fresh_data.store_path) as store:
        cid = store.start_crawl("crawl", json.dumps({"scope": {}, "settings": {}}))
        store.update_crawl(cid, json.dumps({"scope": {}, "settings": {}, "live": live}))
    client = make_client(fresh_data, admin_token=ADMIN_TOKEN)

    got = samples(client.get("/metrics").text)
    assert got[("websift_crawl_running", ())] == 1
    assert got[("websift_crawl_fetches_total", (("kind", "discovery"),))] == 100
    assert got[("websift_crawl_fetches_total", (("kind", "refresh"),))] == 21
    assert got[("websift_crawl_errors_total", (("reason", "http_404"),))] == 3
    assert got[("websift_crawl_errors_total", (("reason", 'odd "reason"\\'),))] == 1  # escaped
    assert got[("websift_crawl_frontier", (("figure", "pending_unread"),))] == 17
    assert got[("websift_crawl_virtual_cash", ())] == 0.125
    assert got[("websift_crawl_pages_per_second", (("over", "recent"),))] == 3.5
    assert got[("websift_crawl_in_flight", ())] == 4

    assert client.get("/stats").json()["live_crawl"]["pid"] is None  # with the admin token only
    stats = client.get("/stats", headers=ADMIN).json()["live_crawl"]
    assert stats["running"] is True and stats["pid"] == os.getpid()
    assert (stats["discovery_fetches"], stats["refresh_fetches"]) == (100, 21)
    assert stats["errors"]["failure/http_404"] == 3
    assert stats["frontier"] == {"pending_unread": 17.0, "known": 140.0}
    assert stats["virtual_cash"] == 0.125 and stats["finished"] is None


def test_a_killed_crawl_is_not_running(
    fresh_data: DataDir, make_client: Callable[..., TestClient]
) -> None:
    old = time.time() - 3600  # a run that stopped writing an hour ago and never finished
    with CrawlStore.open(fresh_data.store_path) as store:
        cid = store.start_crawl("crawl", None)
        store.update_crawl(cid, json.dumps({"live": {"updated": old, "state": "running"}}))
    client = make_client(fresh_data)
    assert samples(client.get("/metrics").text)[("websift_crawl_running", ())] == 0
    live = client.get("/stats").json()["live_crawl"]
    assert live["running"] is False and live["age_seconds"] >= 3599


def test_exposition_writer() -> None:
    h = Histogram((0.1, 1.0))
    for v in (0.05, 0.1, 0.5, 3.0):
        h.observe(v)
    out = Exposition()
    out.histogram("x_seconds", "a histogram", h)
    out.gauge("g", "multi\nline \\ help", [({"a": "1"}, 1.5), ({"a": "2"}, float("nan"))])
    out.counter("c_total", "a counter", [({}, 7)])
    with pytest.raises(ValueError, match="added twice"):
        out.gauge("g", "again", [])
    with pytest.raises(ValueError, match="_total"):
        out.counter("c", "no suffix", [])
    got = samples(out.render())
    assert got[("x_seconds_bucket", (("le", "0.1"),))] == 2  # le: the bound itself counts
    assert got[("x_seconds_bucket", (("le", "1.0"),))] == 3
    assert got[("x_seconds_bucket", (("le", "+Inf"),))] == 4
    assert got[("x_seconds_count", ())] == 4 and got[("x_seconds_sum", ())] == pytest.approx(3.65)
    assert got[("g", (("a", "1"),))] == 1.5 and math.isnan(got[("g", (("a", "2"),))])
    assert families(out.render())["g"].documentation == "multi\nline \\ help"  # type: ignore[attr-defined]
