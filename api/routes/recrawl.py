"""``GET /recrawl?limit=N``: the refresh schedule, as ``websift recrawl --dry-run`` prints it."""


from typing import Annotated

from fastapi import APIRouter, Depends, Query

from websift.api.dependencies import get_store
from websift.api.models import RecrawlEntry, RecrawlResponse
from websift.api.page_info import iso
from websift.api.settings import Settings
from websift.crawler.recrawl import recrawl_schedule
from websift.store.views import StoreReader


def build_router(settings: Settings) -> APIRouter:
    router = APIRouter(tags=["recrawl"])

    @router.get(
        "/recrawl",
        response_model=RecrawlResponse,
        summary="Pages to refetch first: highest refresh priority (OPIC cash) first",
    )
    def recrawl(
        store: Annotated[StoreReader, Depends(get_store)],
        limit: Annotated[
            int, Query(ge=1, le=settings.max_recrawl_limit, description="entries to list")
        ] = settings.default_recrawl_limit,
    ) -> RecrawlResponse:
        entries = [
            RecrawlEntry(
                url=e.url,
                priority=float(e.priority),
                last_fetch=e.fetched_at,
                last_fetch_iso=iso(e.fetched_at),
            )
            for e in recrawl_schedule(store, limit)
        ]
        return RecrawlResponse(limit=limit, entries=entries)

    return router
