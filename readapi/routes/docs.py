"""The API's own description: the OpenAPI document and an interactive reference at /docs, served from
Swagger UI's assets as the swagger-ui-bundle package ships them (no CDN: it works offline)."""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from pathlib import Path
from typing import Any

import msgspec
import swagger_ui_bundle
from litestar import Request, Response, get
from litestar.params import FromPath

from commands.errors import NotFound
from readapi.auth import PUBLIC
from readapi.openapi import build_document, describe, undocumented

ASSETS_DIR = Path(swagger_ui_bundle.swagger_ui_path)
# the files the page loads, and nothing else of the package's directory
ASSETS = {"swagger-ui.css": "text/css", "swagger-ui-bundle.js": "text/javascript", "favicon-32x32.png": "image/png"}
SCRIPT = 'SwaggerUIBundle({url: "/schema/openapi.json", dom_id: "#swagger-ui", deepLinking: true});'
PAGE = f"""<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Parley API</title>
  <link rel="icon" href="/docs/assets/favicon-32x32.png">
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script>{SCRIPT}</script>
</body>
</html>
""".encode()
# Its own files and its one inline script (by hash); Swagger UI sets inline styles and draws data: images;
# "Try it out" calls this origin; no other site may frame it.
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self' 'sha256-"
                               + base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode() + "'; "
                               "style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; "
                               "font-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
}


@cache
def asset(name: str) -> bytes:
    return (ASSETS_DIR / name).read_bytes()


def document(request: Request) -> bytes:
    """Built once per app, on first request: every route is registered by then."""
    state = request.app.state
    if "openapi" not in state:
        state.openapi = msgspec.json.encode(build_document(request.app))
    return state.openapi


@describe("The OpenAPI document of this API", PUBLIC, answer=dict[str, Any], tag="docs",
          operation_id="getOpenApiDocument")
@get("/schema/openapi.json")
async def openapi_document(request: Request) -> Response:
    return Response(document(request), media_type="application/json")


@describe("The interactive API reference (Swagger UI)", PUBLIC, answer=str, media_type="text/html", tag="docs",
          operation_id="getApiReference")
@get("/docs")
async def docs_page() -> Response:
    return Response(PAGE, media_type="text/html", headers=PAGE_HEADERS)


@undocumented("Swagger UI's static assets for /docs")
@get("/docs/assets/{name:str}")
async def docs_asset(name: FromPath[str]) -> Response:
    if name not in ASSETS:
        raise NotFound("no such asset")
    return Response(asset(name), media_type=ASSETS[name], headers={"Cache-Control": "public, max-age=86400"})


ROUTES = [openapi_document, docs_page, docs_asset]
