"""The browser code in `web/`, served as the repository's own files (no build step): the widget, the
mascot and its pets, and the dashboard. They are not API operations, so they stay out of the OpenAPI
document."""

from __future__ import annotations

import hashlib
from pathlib import Path

from litestar import Request, Response, get
from litestar.params import FromPath
from litestar.response import Redirect

from readapi.openapi import undocumented
from readapi.problems import problem

BROWSER_CODE = undocumented("the repository's browser code, not an API operation")

WEB_ROOT = Path(__file__).resolve().parents[2] / "web"

# Litestar's Response adds "; charset=utf-8" to every text/ type itself.
CONTENT_TYPES = {
    ".js": "text/javascript",
    ".mjs": "text/javascript",
    ".css": "text/css",
    ".html": "text/html",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".webp": "image/webp",
    ".ico": "image/x-icon",
}


# The dashboard runs only its own files: no inline script or style (user text is never parsed as markup
# anyway), no other origin, and no framing by another site. Images may be `blob:` URLs: the pet preview
# shows an atlas the operator picked, from this browser's memory.
DASHBOARD_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
                               "connect-src 'self'; font-src 'self'; frame-src 'self'; base-uri 'none'; "
                               "form-action 'self'; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
}
# The widget's preview, which the dashboard frames: the widget's own code, whose shadow roots carry their
# style elements (as on a customer's page), so inline style is allowed there, and only there.
PREVIEW_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                               "img-src 'self' data: blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
                               "frame-ancestors 'self'",
    "Referrer-Policy": "no-referrer",
}


def web_file(relative: str, request: Request, *, within: str = "", cross_origin: bool = False,
             extra_headers: dict[str, str] | None = None) -> Response:
    """One file under web/ (and under its folder `within`), revalidated by its ETag on every use, so a
    changed file is seen at once.

    `cross_origin` lets pages on other sites read it (a pet atlas a mascot draws onto a canvas, the
    modules the widget and the mascot import)."""
    path = (WEB_ROOT / relative).resolve()
    if not path.is_relative_to(WEB_ROOT / within) or not path.is_file() or path.suffix not in CONTENT_TYPES:
        return problem(404, f"no file /{relative}")
    body = path.read_bytes()
    etag = '"' + hashlib.blake2b(body, digest_size=12).hexdigest() + '"'
    headers = {"ETag": etag, "Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}
    if cross_origin:
        headers["Access-Control-Allow-Origin"] = "*"
    headers.update(extra_headers or {})
    if request.headers.get("if-none-match") == etag:
        return Response(b"", status_code=304, headers=headers)
    return Response(body, media_type=CONTENT_TYPES[path.suffix], headers=headers)


@BROWSER_CODE
@get("/")
async def root() -> Redirect:
    return Redirect("/app/")


@BROWSER_CODE
@get("/widget.js")
async def widget_script(request: Request) -> Response:
    return web_file("widget.js", request)


@BROWSER_CODE
@get("/parley-core.js")
async def core_script(request: Request) -> Response:
    """What the widget and the mascot share (one session, one queue): an ES module both import, which a
    page on another origin may load only with CORS."""
    return web_file("parley-core.js", request, cross_origin=True)


@BROWSER_CODE
@get("/core/{path:path}")
async def core_module(request: Request, path: FromPath[str]) -> Response:
    """The parts parley-core.js imports (the session and its transport, the chat view, the styles)."""
    return web_file("core/" + path.lstrip("/"), request, within="core", cross_origin=True)


@BROWSER_CODE
@get("/mascot.js")
async def mascot_script(request: Request) -> Response:
    return web_file("mascot.js", request)


@BROWSER_CODE
@get("/pets/{path:path}")
async def pet_file(request: Request, path: FromPath[str]) -> Response:
    return web_file("pets/" + path.lstrip("/"), request, within="pets", cross_origin=True)


VISITOR_CHAT_MODULES = frozenset({"dom.js", "rich-text.js"})


@BROWSER_CODE
@get(["/app", "/app/{path:path}"])
async def dashboard_file(request: Request, path: FromPath[str] = "/") -> Response:
    """The dashboard is one page that routes in the browser: a path that is not a file is that page.

    Its element builder, dom.js, and its rich-text inserter, rich-text.js, are the visitor chat's too:
    parley-core.js imports them from other sites."""
    relative = path.lstrip("/")
    if relative and (WEB_ROOT / "app" / relative).resolve().is_file():
        return web_file("app/" + relative, request, within="app", cross_origin=relative in VISITOR_CHAT_MODULES,
                        extra_headers=DASHBOARD_HEADERS)
    return web_file("app/index.html", request, within="app", extra_headers=DASHBOARD_HEADERS)


@BROWSER_CODE
@get(["/preview", "/preview/{path:path}"])
async def preview_file(request: Request, path: FromPath[str] = "/") -> Response:
    """The dashboard's live preview of the widget and the mascot (web/preview/)."""
    return web_file("preview/" + (path.lstrip("/") or "index.html"), request, within="preview",
                    extra_headers=PREVIEW_HEADERS)


ROUTES = [root, widget_script, core_script, core_module, mascot_script, pet_file, dashboard_file, preview_file]
