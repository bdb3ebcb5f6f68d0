"""``GET /pages?url=``: what the engine knows of one page (JSON)."""


from typing import Annotated

from fastapi import APIRouter, Depends, Query

from websift.api.dependencies import get_app_settings, get_snapshot, get_store
from websift.api.models import PageInfo, error_responses
from websift.api.page_info import page_info
from websift.api.settings import Settings
from websift.api.snapshot import Snapshot
from websift.store.views import StoreReader


def build_router(settings: Settings) -> APIRouter:
    router = APIRouter(tags=["pages"])

    @router.get(
        "/pages",
        response_model=PageInfo,
        responses=error_responses(404),
        summary="One page: fetch status, robots verdict, indexing, importance, links",
    )
    def pages(
        url: Annotated[str, Query(min_length=1, max_length=4096, description="the page's URL")],
        snap: Annotated[Snapshot, Depends(get_snapshot)],
        store: Annotated[StoreReader, Depends(get_store)],
        app_settings: Annotated[Settings, Depends(get_app_settings)],
    ) -> PageInfo:
        return page_info(store, snap, url, app_settings.max_page_links,
                         app_settings.schedule_scan)

    return router
