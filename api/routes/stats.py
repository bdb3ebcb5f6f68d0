"""``GET /stats`` (what is in the engine) and ``GET /healthz`` (is it serving)."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends

from api.dependencies import get_holder, get_result_cache, get_snapshot, get_store
from api.models import Health, Stats
from api.result_cache import ResultCache
from api.retrieval import Outcome
from api.snapshot import RankView, Snapshot, SnapshotHolder
from store.crawl_store import CrawlStore


def _last_crawl(store: CrawlStore) -> dict[str, Any] | None:
    row = store.last_crawl()
    if row is None:
        return None
    kind, started, finished, summary = row
    try:
        parsed = json.loads(summary) if summary else None
    except ValueError:
        parsed = {"unparsed": summary}
    return {"kind": kind, "started": started, "finished": finished, "summary": parsed}


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


def build_router() -> APIRouter:
    router = APIRouter(tags=["stats"])

    @router.get("/stats", response_model=Stats, summary="Pages, links, index segments, last runs")
    def stats(
        snap: Annotated[Snapshot, Depends(get_snapshot)],
        store: Annotated[CrawlStore, Depends(get_store)],
        holder: Annotated[SnapshotHolder, Depends(get_holder)],
        cache: Annotated[ResultCache[Outcome], Depends(get_result_cache)],
    ) -> Stats:
        searcher = snap.searcher.value
        view = snap.rank_view
        return Stats(
            pages=store.url_count(),
            pages_by_status=store.status_counts(),
            links=store.link_count(),
            indexed_docs=int(searcher.doc_count()),
            index_segments=int(searcher.segment_count()),
            index_generation=snap.index_generation,
            ranks_generation=snap.ranks_generation,
            last_crawl=_last_crawl(store),
            last_rank=None if view is None else _last_rank(view),
            reloads=holder.reloads,
            reload_failures=dict(holder.reload_failures),
            result_cache={"entries": len(cache), "hits": cache.hits, "misses": cache.misses},
        )

    @router.get(
        "/healthz",
        response_model=Health,
        summary="200 when an index is being served, 503 otherwise",
        responses={503: {"description": "no index yet"}},
    )
    def healthz(snap: Annotated[Snapshot, Depends(get_snapshot)]) -> Health:
        return Health(
            status="ok",
            index_generation=snap.index_generation,
            ranks_generation=snap.ranks_generation,
        )

    return router
