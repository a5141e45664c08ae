"""Cross-origin access for the visitor routes, which the widget calls from the customer's own pages.

Only those routes answer CORS: `/api/chat/...` and the visitor's rating and reaction. Browsers preflight
them (the `Authorization` header makes every call non-simple); the preflight carries no credential, so
it cannot name the website and is answered for any origin. The website's own rule is enforced on the
call itself: a browser call from an origin the website does not allow is refused (403) before anything
runs, so a restricted website's visitor routes do nothing for other pages. Calls without `Origin` (not
from a browser page) are not restricted: CORS protects browsers' users, not the API."""

from __future__ import annotations

import re
import uuid

from litestar import Request

from commands.errors import Forbidden
from projections.views.websites import allowed_origins
from readapi.services import services

VISITOR_PATH = re.compile(r"^/api/chat/|^/api/messages/[^/]+/(rating|reaction/customer)$")
ALLOW_METHODS = b"GET, POST, PUT, DELETE"
ALLOW_HEADERS = b"Authorization, Content-Type, Last-Event-ID, API-Version"
EXPOSE_HEADERS = b"API-Version, Parley-Position, RateLimit, RateLimit-Policy, Retry-After"
PREFLIGHT_MAX_AGE = b"600"


def is_visitor_path(path: str) -> bool:
    return VISITOR_PATH.match(path) is not None


def response_headers(origin: bytes) -> list[tuple[bytes, bytes]]:
    """On every response of a visitor route to a browser call: its page may read the answer."""
    return [(b"access-control-allow-origin", origin), (b"access-control-expose-headers", EXPOSE_HEADERS),
            (b"vary", b"Origin")]


def preflight_headers(origin: bytes) -> list[tuple[bytes, bytes]]:
    return [(b"access-control-allow-origin", origin), (b"access-control-allow-methods", ALLOW_METHODS),
            (b"access-control-allow-headers", ALLOW_HEADERS), (b"access-control-max-age", PREFLIGHT_MAX_AGE),
            (b"vary", b"Origin"), (b"content-length", b"0")]


async def check_origin(request: Request, website_id: uuid.UUID | None) -> None:
    """403 when a browser page of an origin the website does not allow makes the call."""
    origin = request.headers.get("origin")
    if origin is None or website_id is None:
        return
    async with services(request).pool.connection() as conn:
        allowed = await allowed_origins(conn, website_id)
    if allowed and origin.lower() not in allowed:
        raise Forbidden(f"this website's chat does not answer pages of {origin}", "Origin")
