"""``/indexnow``: site owners push changed URLs (the IndexNow protocol; api/indexnow.py).

``POST /indexnow`` takes ``{"host", "key", "keyLocation"?, "urlList": [...]}`` (JSON); ``GET
/indexnow?url=...&key=...&keyLocation=...`` one URL (its host is the URL's).  202 with the count
written; 400 malformed, 403 key not valid, 422 a URL not on the host (or none in scope), 429
too many submissions for the host.  No token: the key file on the site is the proof.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, status
from starlette.concurrency import run_in_threadpool

from websift.api.dependencies import get_data
from websift.api.indexnow import IndexNow, PushBadRequest, PushResult
from websift.api.models import error_responses
from websift.core.datadir import DataDir
from websift.crawler.urls import UrlError, canonicalize, host_of


def _answer(result: PushResult) -> dict[str, Any]:
    return {"host": result.host, "accepted": result.accepted,
            "refused": [{"url": u, "reason": r} for u, r in result.refused]}


def _body(raw: bytes) -> tuple[str, str, str | None, list[str]]:
    """(host, key, keyLocation, urlList) of a POST body; PushBadRequest when malformed."""
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise PushBadRequest(f"the body is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise PushBadRequest("the body must be a JSON object")
    host, key, where, urls = (doc.get(k) for k in ("host", "key", "keyLocation", "urlList"))
    if not isinstance(host, str) or not host:
        raise PushBadRequest("host: a non-empty string is required")
    if not isinstance(key, str):
        raise PushBadRequest("key: a string is required")
    if where is not None and not isinstance(where, str):
        raise PushBadRequest("keyLocation: must be a string")
    if not isinstance(urls, list) or not all(isinstance(u, str) for u in urls):
        raise PushBadRequest("urlList: a list of URL strings is required")
    return host, key, where, urls


def build_router(pushes: IndexNow) -> APIRouter:
    router = APIRouter(tags=["indexnow"])

    @router.post("/indexnow", status_code=status.HTTP_202_ACCEPTED,
                 responses=error_responses(400, 403, 422, 429),
                 summary="Site owners push changed URLs (IndexNow JSON body)")
    async def post_indexnow(
        request: Request, data: Annotated[DataDir, Depends(get_data)],
    ) -> dict[str, Any]:
        raw = await request.body()
        try:
            host, key, where, urls = _body(raw)
        except PushBadRequest:
            pushes.count("bad_request")
            raise
        result = await run_in_threadpool(pushes.submit, data, host, key, where, urls)
        return _answer(result)

    @router.get("/indexnow", status_code=status.HTTP_202_ACCEPTED,
                responses=error_responses(400, 403, 422, 429),
                summary="Site owners push one changed URL (IndexNow query form)")
    async def get_indexnow(
        data: Annotated[DataDir, Depends(get_data)],
        url: Annotated[str, Query(max_length=2048)],
        key: Annotated[str, Query(max_length=128)],
        key_location: Annotated[str | None, Query(alias="keyLocation", max_length=2048)] = None,
    ) -> dict[str, Any]:
        try:
            host = host_of(canonicalize(url))
        except UrlError as exc:
            pushes.count("bad_request")
            raise PushBadRequest(f"bad url {url!r}: {exc}") from None
        result = await run_in_threadpool(pushes.submit, data, host, key, key_location, [url])
        return _answer(result)

    return router
