"""The interactive API docs, ``GET /docs`` (Swagger UI), served whole by this server.

FastAPI's own ``/docs`` page loads Swagger UI from a CDN: blank on a machine with no internet,
and a third party learns who reads the docs.  Here the page's script, style sheet and icon come
from the ``fastapi-offline`` package (it ships Swagger UI's release files and nothing else we
load) under :data:`ASSETS`; no JavaScript is copied into this repository.

The search page's CSP allows no script at all (``api/routes/web.py``); Swagger UI is a script,
so ``/docs`` gets its own policy: scripts from this origin, plus the one inline script that
starts Swagger UI, pinned by its SHA-256 (the page is the same for every request, so the hash is
computed once).  Nothing else runs, and the page can fetch only from this origin.
"""

from __future__ import annotations

import base64
import hashlib
import re

from fastapi import APIRouter, FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

DOCS = "/docs"
ASSETS = "/docs/assets"
ASSET_PACKAGE = ("fastapi_offline", "static")  # swagger-ui-bundle.js, swagger-ui.css, favicon.png
# Swagger UI would otherwise send the OpenAPI document's URL to validator.swagger.io for a badge.
SWAGGER_PARAMETERS = {"validatorUrl": None}
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)


def docs_page(title: str, openapi_url: str) -> tuple[bytes, dict[str, str]]:
    """The ``/docs`` HTML and the headers to send with it (its CSP names the inline script)."""
    body = bytes(
        get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{title} - API docs",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon.png",
            oauth2_redirect_url=None,  # no OAuth here; the admin token is a plain bearer token
            swagger_ui_parameters=SWAGGER_PARAMETERS,
        ).body
    )
    inline = _INLINE_SCRIPT.findall(body.decode())
    if len(inline) != 1:  # FastAPI changed its page: say so rather than serve a blank one
        raise RuntimeError(
            f"expected one inline script in FastAPI's Swagger UI page, found {len(inline)}"
        )
    digest = base64.b64encode(hashlib.sha256(inline[0].encode()).digest()).decode()
    headers = {
        "Content-Security-Policy": (
            f"default-src 'self'; script-src 'self' 'sha256-{digest}'; img-src 'self' data:; "
            "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
        ),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
    }
    return body, headers


def add_docs(app: FastAPI) -> None:
    """Serve Swagger UI at :data:`DOCS` from local assets (create the app with docs_url=None)."""
    if app.openapi_url is None:
        return
    body, headers = docs_page(app.title, app.openapi_url)
    app.mount(ASSETS, StaticFiles(packages=[ASSET_PACKAGE]), name="docs-assets")
    router = APIRouter(include_in_schema=False)

    @router.get(DOCS, response_class=HTMLResponse)
    def docs() -> HTMLResponse:
        return HTMLResponse(body, headers=headers)

    app.include_router(router)
