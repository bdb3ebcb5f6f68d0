"""``GET /metrics``: the engine's figures in Prometheus text format, for operators who watch a
crawl that runs for weeks.

Crawl figures come from the newest run's row in the crawl store (written by the crawler at each
batch commit: ``crawler/runs.py``), so they are there whether or not an index exists yet; the
serving figures (search latency histogram, answers by status, caches, snapshot generations) come
from this process.  Everything read is cheap: one store row, no table scan, so a scrape every few
seconds costs nothing.  Counters restart with each run or server (Prometheus handles resets).
"""

from __future__ import annotations

import time
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import PlainTextResponse

from websift.api.dependencies import get_data, get_holder, get_result_cache
from websift.api.prometheus import CONTENT_TYPE, Exposition, RequestMetrics
from websift.api.result_cache import ResultCache
from websift.api.retrieval import Outcome
from websift.api.snapshot import SnapshotHolder
from websift.api.up_status import UpStatus, read_status, status_path
from websift.core.datadir import DataDir
from websift.core.errors import CheckedFileError, WebsiftError
from websift.core.gc_pauses import gc_pauses
from websift.crawler.runs import LiveRun, read_live
from websift.store.views import StoreReader


def _live_run(data: DataDir) -> LiveRun | None:
    if not data.store_path.exists():
        return None  # nothing crawled yet: no crawl figures
    with StoreReader.open(data.store_path) as store:
        return read_live(store, time.time())


def _crawl_metrics(out: Exposition, run: LiveRun | None) -> None:
    figures = run.figures if run is not None else {}

    def number(key: str) -> float:
        value = figures.get(key)
        return float(value) if isinstance(value, int | float) else 0.0

    out.gauge("websift_crawl_running", "1 while a crawl runs (not finished, figures fresh)",
              [({}, 1.0 if run is not None and run.running else 0.0)])
    if run is None:
        return
    out.gauge("websift_crawl_info", "The newest run: its kind and state (value always 1)",
              [({"kind": run.kind, "state": str(figures.get("state", "unknown")),
                 "continuous": str(bool(figures.get("continuous"))).lower()}, 1.0)])
    out.gauge("websift_crawl_started_timestamp_seconds", "Unix time the newest run started",
              [({}, run.started)])
    out.gauge("websift_crawl_figures_age_seconds",
              "Seconds since the newest run last wrote its figures", [({}, run.age)])
    out.counter("websift_crawl_pages_total",
                "Pages answered or finally failed in the newest run", [({}, number("pages"))])
    out.counter("websift_crawl_fetches_total",
                "Page fetches started in the newest run: discovery (never read) or refresh",
                [({"kind": "discovery"}, number("discovery_fetches")),
                 ({"kind": "refresh"}, number("refresh_fetches"))])
    errors = figures.get("errors")
    out.counter("websift_crawl_errors_total", "Failures in the newest run, by reason",
                [({"reason": str(k).removeprefix("failure/")}, float(v))
                 for k, v in (errors.items() if isinstance(errors, dict) else ())])
    out.gauge("websift_crawl_pages_per_second", "Fetch rate over the last minute and the run",
              [({"over": "recent"}, number("recent_pages_per_second")),
               ({"over": "run"}, number("pages_per_second"))])
    out.gauge("websift_crawl_in_flight", "Requests in flight", [({}, number("in_flight"))])
    frontier = figures.get("frontier")
    out.gauge("websift_crawl_frontier", "The frontier's figures (Frontier.stats), by name",
              [({"figure": str(k)}, float(v))
               for k, v in (frontier.items() if isinstance(frontier, dict) else ())])
    out.gauge("websift_crawl_virtual_cash", "The OPIC virtual page's cash",
              [({}, number("virtual_cash"))])
    collector = figures.get("gc")
    collections = collector.get("pauses") if isinstance(collector, dict) else None
    out.counter("websift_crawl_gc_pause_seconds_total",
                "Seconds the crawling process spent in garbage collections, by generation",
                [({"generation": str(k)}, float(v.get("seconds", 0.0)))
                 for k, v in (collections.items() if isinstance(collections, dict) else ())
                 if isinstance(v, dict)])


def _up_metrics(out: Exposition, status: UpStatus | None) -> None:
    """Each part of ``websift up`` (api/up_status.py): running or not, restarts, last success;
    nothing when up never ran over this data directory."""
    if status is None:
        return
    now = time.time()
    out.gauge("websift_up_running", "1 while websift up runs (its status is fresh)",
              [({}, 1.0 if status.running(now) else 0.0)])
    alive = status.running(now)
    out.gauge("websift_up_part_running", "1 while the part runs under websift up",
              [({"part": p.name}, 1.0 if alive and p.state == "running" else 0.0)
               for p in status.parts])
    out.gauge("websift_up_part_info", "Each part's state (value always 1)",
              [({"part": p.name, "state": p.state}, 1.0) for p in status.parts])
    out.counter("websift_up_part_restarts_total",
                "Deaths of the part that websift up restarted (failed runs, for rank)",
                [({"part": p.name}, float(p.restarts)) for p in status.parts])
    out.gauge("websift_up_part_last_success_timestamp_seconds",
              "Unix time the part last did its work (crawl committed, index published, rank "
              "finished, server answered)",
              [({"part": p.name}, p.last_success) for p in status.parts
               if p.last_success is not None])
    out.gauge("websift_up_part_lag_seconds", "How far behind the part's work is, where known",
              [({"part": p.name}, p.lag) for p in status.parts if p.lag is not None])


def _reload_metrics(out: Exposition, holder: SnapshotHolder) -> None:
    """What swapping in new generations cost (api/reload_times.py)."""
    times = holder.reload_times.figures()
    out.counter("websift_snapshot_reload_seconds_total",
                "Wall time spent swapping in new generations (opening them, caches carried)",
                [({}, times["total"])])
    out.counter("websift_snapshot_reload_cpu_seconds_total",
                "CPU time of the reload thread: checks for new generations and swaps",
                [({}, holder.reload_cpu_seconds)])
    out.counter("websift_snapshot_reload_phase_seconds_total",
                "Wall time of swaps by phase: segments opened, whole-index state built, "
                "caches carried over, ranks opened",
                [({"phase": k.removesuffix("_total")}, v) for k, v in times.items()
                 if k.endswith("_total") and k not in ("total", "cpu_total")])
    out.gauge("websift_snapshot_reload_seconds",
              "One swap's wall time: median of the recent ones, the longest, the last",
              [({"stat": k}, times[k]) for k in ("p50", "max", "last")])
    pauses = gc_pauses().generations
    out.counter("websift_gc_pause_seconds_total",
                "Time the cyclic garbage collector held the interpreter, by generation",
                [({"generation": str(i)}, g.seconds) for i, g in enumerate(pauses)])
    out.counter("websift_gc_collections_timed_total",
                "Collections timed (since the server started), by generation",
                [({"generation": str(i)}, g.count) for i, g in enumerate(pauses)])
    out.gauge("websift_gc_longest_pause_seconds",
              "The longest collection of each generation since the server started",
              [({"generation": str(i)}, g.longest) for i, g in enumerate(pauses)])


def _serving_metrics(out: Exposition, request: Request, holder: SnapshotHolder,
                     cache: ResultCache[Outcome]) -> None:
    search: RequestMetrics = request.app.state.search_metrics
    out.histogram("websift_search_latency_seconds", "Time to answer GET /search",
                  search.latency)
    out.counter("websift_search_requests_total", "Answers to GET /search, by HTTP status",
                [({"status": str(code)}, n) for code, n in search.statuses().items()])
    stats = cache.stats()
    out.counter("websift_result_cache_hits_total", "Query-result cache hits", [({}, stats.hits)])
    out.counter("websift_result_cache_misses_total", "Query-result cache misses",
                [({}, stats.misses)])
    out.counter("websift_snapshot_reloads_total", "Newer index or ranks generations swapped in",
                [({}, holder.reloads)])
    _reload_metrics(out, holder)
    out.counter("websift_snapshot_reload_failures_total",
                "Newer generations that could not be opened yet, by error",
                [({"error": k}, v) for k, v in sorted(holder.reload_failures.items())])
    try:
        with holder.lease() as snap:
            generations = [({"part": "index"}, float(snap.index_generation))]
            if snap.ranks_generation is not None:
                generations.append(({"part": "ranks"}, float(snap.ranks_generation)))
            docs = float(snap.searcher.value.doc_count())
        up = 1.0
    except WebsiftError:  # no index yet (or none readable): said by websift_index_up 0
        generations, docs, up = [], 0.0, 0.0
    out.gauge("websift_index_up", "1 when an index is being served", [({}, up)])
    out.gauge("websift_generation", "Generation being served, by part", generations)
    out.gauge("websift_index_docs", "Documents in the served index", [({}, docs)])


def build_router() -> APIRouter:
    router = APIRouter(tags=["stats"])

    @router.get(
        "/metrics",
        response_class=PlainTextResponse,
        summary="Crawl and serving figures in Prometheus text format",
        responses={200: {"content": {CONTENT_TYPE: {}}, "description": "Prometheus text"}},
    )
    def metrics(
        request: Request,
        data: Annotated[DataDir, Depends(get_data)],
        holder: Annotated[SnapshotHolder, Depends(get_holder)],
        cache: Annotated[ResultCache[Outcome], Depends(get_result_cache)],
    ) -> PlainTextResponse:
        out = Exposition()
        _crawl_metrics(out, _live_run(data))
        try:
            up = read_status(status_path(data.root))
        except CheckedFileError:
            up = None  # damaged: /stats says so in its "up" object
        _up_metrics(out, up)
        _serving_metrics(out, request, holder, cache)
        pushes = request.app.state.indexnow.figures()
        out.counter("websift_indexnow_submissions_total",
                    "Site owners' pushes (POST/GET /indexnow) answered, by outcome",
                    [({"outcome": k}, float(v)) for k, v in pushes.items() if k != "urls"])
        out.counter("websift_indexnow_urls_total", "Pushed URLs written to the crawl store",
                    [({}, float(pushes["urls"]))])
        return PlainTextResponse(out.render(), media_type=CONTENT_TYPE)

    return router
