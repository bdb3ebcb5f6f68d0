"""``GET /admin``: the operator's page (behind the admin token), server-rendered, no script.

Each part of ``websift up`` with its state and restarts (``DATA/up-status.json``), the last
hours as inline SVG sparklines drawn here from the server's own samples (api/admin_series.py),
and the removed list.  The token is sent as ``Authorization: Bearer <token>`` or, from a
browser, through the login form (``POST /admin/login``), which sets a cookie (HttpOnly,
SameSite=Strict, path /admin) holding an HMAC of the token, never the token itself.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from markupsafe import Markup

from websift.api.admin_series import Sampler, charts, human, sparkline
from websift.api.routes.web import HTML_HEADERS
from websift.api.settings import Settings
from websift.api.up_status import ago, read_status, span, status_path
from websift.core.datadir import DataDir
from websift.core.errors import CheckedFileError, WebsiftError
from websift.store.views import StoreReader

COOKIE = "websift_admin"
MAX_LOGIN_BODY = 4096  # bytes of the login form read


def _cookie_value(token: str) -> str:
    return hmac.new(token.encode(), b"websift admin page", hashlib.sha256).hexdigest()


def _admitted(request: Request, settings: Settings) -> int:
    """200 when the request carries the token (header or cookie); 403 disabled, 401 otherwise."""
    token = settings.admin_token.get_secret_value() if settings.admin_token else ""
    if not token:
        return 403
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode()):
        return 200
    cookie = request.cookies.get(COOKIE, "")
    if cookie and hmac.compare_digest(cookie.encode(), _cookie_value(token).encode()):
        return 200
    return 401


def removed_list(data: DataDir) -> tuple[list[dict[str, Any]], str | None]:
    """The operator's removals (store/removals.py, as ``websift removed`` lists them), newest
    first, or why they could not be read."""
    if not data.store_path.exists():
        return [], None
    try:
        with StoreReader.open(data.store_path) as store:
            rows = store.removals()
    except WebsiftError as exc:
        return [], f"crawl store unreadable: {exc}"
    return [{"id": r.id, "kind": r.kind, "value": r.value, "who": r.who,
             "created": time.strftime("%Y-%m-%d %H:%M", time.gmtime(r.created)),
             "reason": r.reason, "active": r.active} for r in reversed(rows)], None


def _parts(data: DataDir, now: float) -> tuple[list[dict[str, str]], str]:
    try:
        status = read_status(status_path(data.root))
    except CheckedFileError as exc:
        return [], f"websift up's status file is damaged: {exc}"
    if status is None:
        return [], "websift up has not run over this data directory"
    head = (f"websift up {status.state}, pid {status.pid}, for {span(now - status.started)}"
            if status.running(now) else
            f"websift up not running (last state {status.state}, status written "
            f"{ago(status.updated, now)})")
    return [{"name": p.name, "state": p.state, "pid": "-" if p.pid is None else str(p.pid),
             "restarts": str(p.restarts), "last_success": ago(p.last_success, now),
             "lag": "-" if p.lag is None else span(p.lag)} for p in status.parts], head


def build_router(templates: Jinja2Templates) -> APIRouter:
    router = APIRouter(include_in_schema=False)  # HTML pages, like the search page

    def login_page(request: Request, status: int, message: str) -> HTMLResponse:
        return templates.TemplateResponse(
            request, "admin_login.html", {"message": message}, status_code=status,
            headers=HTML_HEADERS)

    @router.get("/admin", response_class=HTMLResponse)
    def admin(request: Request) -> HTMLResponse:
        settings: Settings = request.app.state.settings
        admitted = _admitted(request, settings)
        if admitted == 403:
            return login_page(request, 403, "The operator page is disabled: set "
                              "WEBSIFT_ADMIN_TOKEN to enable it.")
        if admitted == 401:
            return login_page(request, 401, "Give the admin token to see the operator page.")
        data: DataDir = request.app.state.data
        sampler: Sampler = request.app.state.admin_sampler
        now = time.time()
        parts, up_line = _parts(data, now)
        samples = sampler.samples()
        shown = [{"title": c.title, "last": human(c.last, c.unit),
                  "svg": Markup(sparkline(c.points)),  # numbers only: safe markup
                  "points": len(c.points)} for c in charts(samples)]
        removed, removed_error = removed_list(data)
        window = span(samples[-1].t - samples[0].t) if len(samples) > 1 else "0s"
        return templates.TemplateResponse(request, "admin.html", {
            "parts": parts, "up_line": up_line, "charts": shown, "samples": len(samples),
            "window": window, "every": human(settings.admin_sample_seconds, "s"),
            "failures": sorted(sampler.failures.items()),
            "removed": removed, "removed_error": removed_error,
        }, headers={**HTML_HEADERS, "Cache-Control": "no-store"})

    @router.post("/admin/login", response_class=HTMLResponse)
    async def login(request: Request) -> Response:
        settings: Settings = request.app.state.settings
        token = settings.admin_token.get_secret_value() if settings.admin_token else ""
        if not token:
            return login_page(request, 403, "The operator page is disabled: set "
                              "WEBSIFT_ADMIN_TOKEN to enable it.")
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_LOGIN_BODY:
                return login_page(request, 413, "Login form too large.")
        given = parse_qs(body.decode("utf-8", "replace")).get("token", [""])[0]
        if not hmac.compare_digest(given.encode(), token.encode()):
            return login_page(request, 403, "Wrong admin token.")
        answer = RedirectResponse("/admin", status_code=303)
        answer.set_cookie(COOKIE, _cookie_value(token), httponly=True, samesite="strict",
                          path="/admin")
        return answer

    return router
