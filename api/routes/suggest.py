"""``GET /suggest?q=``: completions for the search box; ``GET /opensearch.xml``: websift as a
browser's search engine.

``/suggest`` answers in the OpenSearch suggestions format (``application/x-suggestions+json``:
``[query, [completion, ...]]``), which browsers read as they are and the search page's script
reads too.  Completions come from the served index's titles and words
(``indexer/completion.py``); a front server's from its shards' (api/fanout.py ``complete``).
"""

import json
from typing import Annotated
from xml.sax.saxutils import escape, quoteattr

import anyio
from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from websift.api.index_words import IndexWords
from websift.api.settings import Settings
from websift.api.snapshot import SnapshotHolder

SUGGESTIONS_TYPE = "application/x-suggestions+json"
OPENSEARCH_TYPE = "application/opensearchdescription+xml"
MAX_SUGGESTIONS = 10


def opensearch_xml(base: str) -> str:
    """The OpenSearch 1.1 description of the server at ``base`` (scheme://host[:port])."""
    search = quoteattr(f"{base}/?q={{searchTerms}}")
    suggest = quoteattr(f"{base}/suggest?q={{searchTerms}}")
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<OpenSearchDescription xmlns="http://a9.com/-/spec/opensearch/1.1/">\n'
        "  <ShortName>websift</ShortName>\n"
        "  <Description>Search the pages websift crawled</Description>\n"
        "  <InputEncoding>UTF-8</InputEncoding>\n"
        f'  <Url type="text/html" method="get" template={search}/>\n'
        f'  <Url type="{SUGGESTIONS_TYPE}" method="get" template={suggest}/>\n'
        f"  <Url type=\"{OPENSEARCH_TYPE}\" rel=\"self\" "
        f"template={quoteattr(escape(base) + '/opensearch.xml')}/>\n"
        "</OpenSearchDescription>\n")


def build_router(settings: Settings) -> APIRouter:
    router = APIRouter(tags=["search"])

    @router.get(
        "/suggest",
        summary="Completions of a partly typed query (OpenSearch suggestions JSON)",
        response_class=Response,
        responses={200: {"content": {SUGGESTIONS_TYPE: {}},
                         "description": "[query, [completion, ...]]"}},
    )
    def suggest(
        request: Request,
        q: Annotated[str, Query(max_length=settings.max_query_chars,
                                description="what is typed so far")] = "",
        k: Annotated[int, Query(ge=1, le=MAX_SUGGESTIONS,
                                description="completions to return")] = 8,
    ) -> Response:
        holder: SnapshotHolder | None = request.app.state.holder
        words: IndexWords = request.app.state.index_words
        found: list[str] = []
        if holder is not None and q.strip():
            with holder.lease() as snap:
                found = words.of(snap).completer.complete(q, k)
        elif q.strip():  # a front server: its shards' completions (this runs in a thread)
            found = anyio.from_thread.run(request.app.state.engine.complete, q, k)
        body = json.dumps([q, found], ensure_ascii=False)
        return Response(body, media_type=SUGGESTIONS_TYPE)

    @router.get("/opensearch.xml", include_in_schema=False)
    def opensearch(request: Request) -> Response:
        base = str(request.base_url).rstrip("/")
        return Response(opensearch_xml(base), media_type=OPENSEARCH_TYPE)

    return router
