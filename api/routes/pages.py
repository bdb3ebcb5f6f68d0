"""``GET /pages?url=``: what the engine knows of one page (JSON)."""


from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response

from websift.api.dependencies import get_app_settings, get_schedule_cache, get_snapshot, with_store
from websift.api.models import PageInfo, error_responses
from websift.api.page_info import page_info
from websift.api.schedule_cache import ScheduleCache
from websift.api.settings import Settings
from websift.api.snapshot import Snapshot


def build_router(settings: Settings) -> APIRouter:
    router = APIRouter(tags=["pages"])

    @router.get(
        "/pages",
        response_model=PageInfo,
        responses=error_responses(404),
        summary="One page: fetch status, robots verdict, indexing, importance, links",
    )
    async def pages(
        request: Request,
        url: Annotated[str, Query(min_length=1, max_length=4096, description="the page's URL")],
        snap: Annotated[Snapshot, Depends(get_snapshot)],
        app_settings: Annotated[Settings, Depends(get_app_settings)],
        schedule: Annotated[ScheduleCache, Depends(get_schedule_cache)],
    ) -> Response:
        # made and serialised in the worker thread: the event loop only sends it (a response,
        # so FastAPI does not validate the model again on the loop)
        body = await with_store(request, lambda store: page_info(
            store, snap, url, app_settings.max_page_links, schedule).model_dump_json())
        return Response(body, media_type="application/json")

    return router
