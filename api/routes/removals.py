"""``/admin/removals``: take pages out of search and out of the crawl, list, undo (admin token).

``POST`` records a rule (one of url, host, pattern; api/removals.py) and reloads the snapshot at
once, so the next search of this server no longer shows the pages (other servers on the same
data directory: at their next reload check).  ``GET`` lists every rule, undone ones included;
``DELETE /admin/removals/{id}`` undoes one.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, status

from websift.api.dependencies import get_data, get_holder, require_admin
from websift.api.errors import InvalidParameter
from websift.api.models import RemovalIn, RemovalList, RemovalOut, error_responses
from websift.api.removals import WHO_ADMIN, add_removal, list_removals, undo_removal
from websift.api.snapshot import SnapshotHolder
from websift.core.datadir import DataDir
from websift.store.removals import Removal


def removal_out(r: Removal, reindexed: int | None = None) -> RemovalOut:
    return RemovalOut(id=r.id, kind=r.kind, value=r.value, who=r.who, created=r.created,
                      reason=r.reason, active=r.active, undone=r.undone, undone_by=r.undone_by,
                      pages_reindexed=reindexed)


def build_router() -> APIRouter:
    router = APIRouter(tags=["removals"], dependencies=[Depends(require_admin)])

    @router.get("/admin/removals", response_model=RemovalList,
                responses=error_responses(401, 403), summary="Every removal, oldest first (admin)")
    def get_removals(data: Annotated[DataDir, Depends(get_data)]) -> RemovalList:
        return RemovalList(removals=[removal_out(r) for r in list_removals(data)])

    @router.post("/admin/removals", response_model=RemovalOut,
                 status_code=status.HTTP_201_CREATED, responses=error_responses(401, 403, 422),
                 summary="Take a URL, a host or a URL pattern out of search and the crawl (admin)")
    def post_removal(
        body: RemovalIn,
        data: Annotated[DataDir, Depends(get_data)],
        holder: Annotated[SnapshotHolder, Depends(get_holder)],
    ) -> RemovalOut:
        given = [(k, v) for k, v in (("url", body.url), ("host", body.host),
                                     ("pattern", body.pattern)) if v is not None]
        if len(given) != 1:
            raise InvalidParameter("give exactly one of url, host, pattern")
        kind, value = given[0]
        removal = add_removal(data, kind, value, WHO_ADMIN, body.reason)
        holder.refresh(force=True)
        return removal_out(removal)

    @router.delete("/admin/removals/{removal_id}", response_model=RemovalOut,
                   responses=error_responses(401, 403, 404, 409), summary="Undo a removal (admin)")
    def delete_removal(
        removal_id: Annotated[int, Path(ge=1, le=(1 << 63) - 1)],
        data: Annotated[DataDir, Depends(get_data)],
        holder: Annotated[SnapshotHolder, Depends(get_holder)],
    ) -> RemovalOut:
        removal, reindexed = undo_removal(data, removal_id, WHO_ADMIN)
        holder.refresh(force=True)
        return removal_out(removal, reindexed)

    return router
