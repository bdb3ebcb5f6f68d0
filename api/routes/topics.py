"""``GET/POST /topics`` and ``DELETE /topics/{name}``: the topic sets of ``websift topics``.

Changing a topic computes its PageRank vector (``ranking.topics.add_topic``) and writes it
atomically; the holder then reloads so the next search can use it.  Changes need the admin token.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, status

from websift.api.dependencies import get_data, get_holder, require_admin
from websift.api.models import TopicIn, TopicList, TopicOut, error_responses
from websift.api.snapshot import SnapshotHolder
from websift.core.datadir import DataDir
from websift.ranking.topics import TopicInfo, TopicSet, add_topic, remove_topic, topic_infos


def _out(info: TopicInfo) -> TopicOut:
    topic = info.topic
    return TopicOut(
        name=topic.name,
        urls=list(topic.urls),
        hosts=list(topic.hosts),
        patterns=list(topic.patterns),
        pages=info.pages,
    )


def build_router() -> APIRouter:
    router = APIRouter(tags=["topics"])

    @router.get("/topics", response_model=TopicList, summary="The topic sets")
    def get_topics(data: Annotated[DataDir, Depends(get_data)]) -> TopicList:
        return TopicList(topics=[_out(t) for t in topic_infos(data)])

    @router.post(
        "/topics",
        response_model=TopicOut,
        status_code=status.HTTP_201_CREATED,
        dependencies=[Depends(require_admin)],
        responses=error_responses(401, 403),
        summary="Add or replace a topic set and compute its PageRank (admin)",
    )
    def post_topic(
        body: TopicIn,
        data: Annotated[DataDir, Depends(get_data)],
        holder: Annotated[SnapshotHolder, Depends(get_holder)],
    ) -> TopicOut:
        topic = TopicSet(
            name=body.name,
            urls=tuple(body.urls),
            hosts=tuple(body.hosts),
            patterns=tuple(body.patterns),
        )
        info = add_topic(data, topic)
        holder.refresh(force=True)
        return _out(info)

    @router.delete(
        "/topics/{name}",
        status_code=status.HTTP_204_NO_CONTENT,
        dependencies=[Depends(require_admin)],
        responses=error_responses(401, 403, 404),
        summary="Remove a topic set (admin)",
    )
    def delete_topic(
        name: Annotated[str, Path(min_length=1, max_length=64)],
        data: Annotated[DataDir, Depends(get_data)],
        holder: Annotated[SnapshotHolder, Depends(get_holder)],
    ) -> None:
        remove_topic(data, name)
        holder.refresh(force=True)

    return router
