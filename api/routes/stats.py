"""``GET /stats`` (what is in the engine) and ``GET /healthz`` (is it serving).

``/stats`` answers anyone with counts; what says how and where the engine runs (process IDs,
a run's scope, seeds and settings, the shared frontier's crawlers and error text) is added only
for a caller holding the admin token (``Authorization: Bearer $WEBSIFT_ADMIN_TOKEN``), and the
answer says ``"redacted": true`` otherwise.
"""

from __future__ import annotations

import gc
import json
import os
import time
from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request

from websift.api.dependencies import (
    get_holder,
    get_result_cache,
    get_snapshot,
    get_store,
    is_admin,
)
from websift.api.models import Health, LiveCrawl, Stats
from websift.api.result_cache import ResultCache
from websift.api.retrieval import LocalSearch, Outcome, SearchEngine
from websift.api.snapshot import RankView, Snapshot, SnapshotHolder
from websift.api.up_status import read_status, status_path, status_summary
from websift.core.datadir import DataDir
from websift.core.errors import CheckedFileError
from websift.core.gc_pauses import gc_pauses
from websift.crawler.runs import LiveRun, read_live
from websift.store.schema import DISCOVERED, FETCHED
from websift.store.views import StoreReader


def _last_crawl(store: StoreReader) -> dict[str, Any] | None:
    row = store.last_crawl()
    if row is None:
        return None
    kind, started, finished, summary = row
    try:
        parsed = json.loads(summary) if summary else None
    except ValueError:
        parsed = {"unparsed": summary}
    return {"kind": kind, "started": started, "finished": finished, "summary": parsed}


def live_crawl(run: LiveRun) -> LiveCrawl:
    """The response model of a run's live figures (figures a run did not write stay unset)."""
    known = {k: v for k, v in run.figures.items() if k in LiveCrawl.model_fields}
    return LiveCrawl(**{
        **known,
        "kind": run.kind,
        "running": run.running,
        "started": run.started,
        "finished": run.finished,
        "age_seconds": round(run.age, 3),
    })


def _live_crawl(store: StoreReader) -> LiveCrawl | None:
    run = read_live(store, time.time())
    return None if run is None else live_crawl(run)


def _last_rank(view: RankView) -> dict[str, Any]:
    """The live ranks generation as its manifest describes it."""
    manifest = view.ranks.manifest
    stats = manifest.get("stats") or {}
    return {
        "generation": view.generation,
        "created": manifest.get("created"),
        "nodes": manifest.get("node_count"),
        "params": manifest.get("params"),
        "iterations": stats.get("iterations"),
        "converged": stats.get("converged"),
        "topics": sorted(view.topics),
    }


def _frontier(client: Any) -> dict[str, Any] | None:
    """The shared frontier's figures; an unreachable frontier is reported, not a failure of
    /stats (the index is still served)."""
    if client is None:
        return None
    from websift.crawler.redis_admin import frontier_figures

    return frontier_figures(client)


# What a run's summary holds that only an operator should see (crawler/runs.py): where it was
# told to go and how, and the crawling process.
PRIVATE_RUN_KEYS = frozenset({"scope", "settings", "seeds", "seeds_failed", "pid"})


def public_run(run: dict[str, Any] | None) -> dict[str, Any] | None:
    """``last_crawl`` without its scope, seeds, settings and process ID."""
    if run is None or not isinstance(run.get("summary"), dict):
        return run
    summary = {k: v for k, v in run["summary"].items() if k not in PRIVATE_RUN_KEYS}
    if isinstance(summary.get("live"), dict):
        summary["live"] = {k: v for k, v in summary["live"].items() if k != "pid"}
    return {**run, "summary": summary}


def public_frontier(figures: dict[str, Any] | None) -> dict[str, Any] | None:
    """The shared frontier's counts, without its crawlers (IDs, hosts, PIDs) or the text of a
    connection error (it names the frontier's address)."""
    if figures is None:
        return None
    if "error" in figures:
        return {"error": "frontier unavailable (details with the admin token)"}
    return {k: v for k, v in figures.items() if k != "crawlers"}


def _up(data: DataDir) -> dict[str, Any] | None:
    """What ``websift up`` last wrote of its parts (api/up_status.py), if it ran here; a
    damaged file is reported as such (the rest of /stats is still served)."""
    try:
        status = read_status(status_path(data.root))
    except CheckedFileError as exc:
        return {"error": str(exc)}
    return None if status is None else status_summary(status, time.time())


def public_up(up: dict[str, Any] | None) -> dict[str, Any] | None:
    """``up`` without the process IDs of the supervisor and its parts."""
    if up is None or not isinstance(up.get("parts"), dict):
        return up
    parts = {name: {k: v for k, v in part.items() if k != "pid"}
             for name, part in up["parts"].items()}
    return {**{k: v for k, v in up.items() if k != "pid"}, "parts": parts}


def _gc_figures(holder: SnapshotHolder) -> dict[str, Any]:
    """This process's garbage collector: objects frozen (out of its reach), per generation the
    collections run and the objects collected, the collections' pauses since the timer was
    installed, and the reload thread's settles and reclaims (api/gc_policy.py)."""
    generations = gc.get_stats()
    return {"frozen": gc.get_freeze_count(),
            "collections": [g["collections"] for g in generations],
            "collected": [g["collected"] for g in generations],
            "pauses": gc_pauses().as_dict(),
            "settler": None if holder.heap is None else holder.heap.as_dict()}


def build_router() -> APIRouter:
    router = APIRouter(tags=["stats"])

    @router.get("/stats", response_model=Stats, summary="Pages, links, index segments, last runs")
    def stats(
        request: Request,
        snap: Annotated[Snapshot, Depends(get_snapshot)],
        store: Annotated[StoreReader, Depends(get_store)],
        holder: Annotated[SnapshotHolder, Depends(get_holder)],
        cache: Annotated[ResultCache[Outcome], Depends(get_result_cache)],
    ) -> Stats:
        searcher = snap.searcher.value
        view = snap.rank_view
        by_status = store.status_counts()
        urls = sum(by_status.values())
        admin = is_admin(request)
        last_crawl = _last_crawl(store)
        live = _live_crawl(store)
        frontier = _frontier(request.app.state.frontier)
        up = _up(request.app.state.data)
        if not admin:
            last_crawl, frontier = public_run(last_crawl), public_frontier(frontier)
            up = public_up(up)
            if live is not None:
                live.pid = None
        return Stats(
            redacted=not admin,
            pid=os.getpid() if admin else None,
            pages=urls,
            urls=urls,
            fetched_pages=by_status.get(FETCHED, 0),
            link_only_urls=by_status.get(DISCOVERED, 0),
            pages_by_status=by_status,
            links=store.link_count(),
            indexed_docs=int(searcher.doc_count()),
            index_segments=int(searcher.segment_count()),
            index_generation=snap.index_generation,
            index_outdated=searcher.outdated,
            ranks_generation=snap.ranks_generation,
            last_crawl=last_crawl,
            live_crawl=live,
            last_rank=None if view is None else _last_rank(view),
            reloads=holder.reloads,
            reload_seconds=holder.reload_times.figures(),
            reload_cpu_seconds=holder.reload_cpu_seconds,
            reload_failures=dict(holder.reload_failures),
            result_cache=asdict(cache.stats()),
            searches=_searches(request.app.state.engine),
            search_caches={name: asdict(c.stats()) for name, c in searcher.caches().items()},
            words=request.app.state.index_words.figures(),
            gc=_gc_figures(holder),
            frontier=frontier,
            indexnow={**request.app.state.indexnow.figures(),
                      **dict(zip(("stored", "taken"), store.push_counts(), strict=True))},
            up=up,
        )

    @router.get(
        "/healthz",
        response_model=Health,
        summary="200 when an index is being served, 503 otherwise",
        responses={503: {"description": "no index yet"}},
    )
    async def healthz(snap: Annotated[Snapshot, Depends(get_snapshot)]) -> Health:
        # on the event loop (a few attribute reads): answered while the thread pool is busy
        return Health(
            status="ok",
            index_generation=snap.index_generation,
            ranks_generation=snap.ranks_generation,
        )

    return router


def _searches(engine: SearchEngine) -> dict[str, int]:
    """Where this process's searches ran (a fanning-out server runs none itself)."""
    return dict(engine.searches) if isinstance(engine, LocalSearch) else {}
