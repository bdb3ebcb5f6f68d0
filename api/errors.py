"""From websift's exceptions to HTTP: the one place that knows status codes.

Every package raises its own :class:`~core.errors.WebsiftError` subclasses; this module maps
them to a status and a short machine-readable code, and every error response has the body
``{"error": {"code": ..., "message": ...}}``.  Request validation errors (FastAPI's 422) get the
same body with a message that names the parameter and what is wrong with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from websift.core.errors import StoreError, WebsiftError
from websift.crawler.errors import RemovalError, ScopeError
from websift.indexer.errors import IndexAnalyzerMismatch, IndexCorrupt, IndexMissing, QueryError
from websift.ranking.errors import GraphError, RanksCorrupt, RanksMissing, TopicError, UnknownTopic


class ApiError(WebsiftError):
    """An error raised by ``api/`` itself; its class carries the HTTP status and code."""

    status: int = 400
    code: str = "bad_request"


class Unauthorized(ApiError):
    status = 401
    code = "unauthorized"


class Forbidden(ApiError):
    status = 403
    code = "forbidden"


class NotFound(ApiError):
    status = 404
    code = "not_found"


class UnknownRemoval(ApiError):
    status = 404
    code = "unknown_removal"


class RemovalUndone(ApiError):
    status = 409
    code = "removal_undone"


class InvalidParameter(ApiError):
    status = 422
    code = "invalid_parameter"


# Most specific first: the first class the exception is an instance of decides.
_STATUS: Sequence[tuple[type[BaseException], int, str]] = (
    (QueryError, 400, "bad_query"),
    (RemovalError, 422, "bad_removal"),
    (ScopeError, 400, "bad_url"),
    (UnknownTopic, 404, "unknown_topic"),
    (TopicError, 422, "bad_topic"),
    (GraphError, 400, "bad_graph_request"),
    (IndexMissing, 503, "index_missing"),
    (IndexAnalyzerMismatch, 503, "index_outdated"),
    (IndexCorrupt, 503, "index_corrupt"),
    (RanksMissing, 503, "ranks_missing"),
    (RanksCorrupt, 503, "ranks_corrupt"),
    (StoreError, 503, "store_unavailable"),
    (WebsiftError, 400, "bad_request"),
)


def status_of(exc: WebsiftError) -> tuple[int, str]:
    """The HTTP status and error code for one of websift's exceptions."""
    if isinstance(exc, ApiError):
        return exc.status, exc.code
    for cls, status, code in _STATUS:
        if isinstance(exc, cls):
            return status, code
    return 400, "bad_request"  # pragma: no cover - WebsiftError is last in the table


def error_body(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def describe_validation_errors(errors: Sequence[Any]) -> str:
    """One line per problem, naming the parameter: ``k: must be at most 100 (got 1000)``."""
    parts: list[str] = []
    for err in errors:
        loc = [str(p) for p in err.get("loc", ()) if p not in ("query", "body", "path", "header")]
        where = ".".join(loc) or "request"
        kind = str(err.get("type", ""))
        ctx = err.get("ctx") or {}
        got = err.get("input")
        if kind == "missing":
            msg = "is required"
        elif kind in ("less_than_equal", "less_than") and ctx:
            bound = ctx.get("le", ctx.get("lt"))
            msg = f"must be at most {bound}"
        elif kind in ("greater_than_equal", "greater_than") and ctx:
            bound = ctx.get("ge", ctx.get("gt"))
            msg = f"must be at least {bound}"
        elif kind == "string_too_long" and ctx:
            msg = f"must be at most {ctx.get('max_length')} characters"
        elif kind == "string_too_short" and ctx:
            n = ctx.get("min_length")
            msg = "must not be empty" if n == 1 else f"must be at least {n} characters"
        else:
            msg = str(err.get("msg", "is invalid")).removeprefix("Value error, ")
        if got is not None and not isinstance(got, dict | list) and kind != "missing":
            shown = str(got)
            if len(shown) > 40:
                shown = shown[:40] + "..."
            msg += f" (got {shown!r})"
        parts.append(f"{where}: {msg}")
    return "; ".join(parts) or "the request is invalid"
