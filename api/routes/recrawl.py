"""``GET /recrawl?limit=N``: the refresh schedule, as ``websift recrawl --dry-run`` prints it.

The first entries of the schedule as the server last read it (``api/schedule_cache.py``: at
most ``Settings.schedule_max_age_ms`` old), so a call costs a slice, not a scan of the store.
"""


from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request

from websift.api.dependencies import get_schedule_cache, with_store
from websift.api.models import RecrawlEntry, RecrawlResponse
from websift.api.page_info import iso
from websift.api.schedule_cache import ScheduleCache
from websift.api.settings import Settings


def build_router(settings: Settings) -> APIRouter:
    router = APIRouter(tags=["recrawl"])

    @router.get(
        "/recrawl",
        response_model=RecrawlResponse,
        summary="Pages to refetch first: highest refresh priority (OPIC cash) first",
    )
    async def recrawl(
        request: Request,
        schedule: Annotated[ScheduleCache, Depends(get_schedule_cache)],
        limit: Annotated[
            int, Query(ge=1, le=settings.max_recrawl_limit, description="entries to list")
        ] = settings.default_recrawl_limit,
    ) -> RecrawlResponse:
        items = (await with_store(request, schedule.get)).items[:limit]
        entries = [
            RecrawlEntry(
                url=e.url,
                priority=float(e.priority),
                last_fetch=e.fetched_at,
                last_fetch_iso=iso(e.fetched_at),
            )
            for e in items
        ]
        return RecrawlResponse(limit=limit, entries=entries)

    return router
