"""Rules every request meets before routing: the rate limit, the API version, credentials kept out
of URLs, and the visitor routes' CORS (`readapi/cors.py`).

As an ASGI wrapper around the whole application, it also stamps on every response, whichever layer
produced it (a handler, an error handler, Litestar's own 404, or this wrapper's refusals): `API-Version`,
the `RateLimit` headers of `/api/` requests and of POSTs to the OAuth endpoints, the `Deprecation` headers of a
deprecated route, and `frame-ancestors 'none'` on an HTML answer that has no Content-Security-Policy."""

from __future__ import annotations

import logging
from urllib.parse import parse_qsl

from litestar import Litestar, Request
from litestar.routes import HTTPRoute
from litestar.utils import normalize_path

from readapi import cors
from readapi.auth import identify
from readapi.clientaddress import CLIENT_ADDRESS, TrustedProxies
from readapi.deprecation import deprecation_headers
from readapi.problems import problem_body
from readapi.unavailable import DATABASE_DOWN, DATABASE_UNAVAILABLE, RETRY_AFTER_SECONDS
from readapi.mounted import MountedApp
from readapi.ratelimit import Decision, RateLimiter, bucket_for, chat_sessions_limit, policy_for, sign_in_limit
from readapi.services import Services

log = logging.getLogger("parley.api")

API_VERSION = "1"
SUPPORTED_VERSIONS = frozenset({API_VERSION})
CREDENTIAL_PARAMETERS = frozenset({"api_key", "apikey", "key", "token", "access_token", "secret"})
LIMITED_PREFIX = "/api/"
SANDBOX_PREFIX = "/api/sandbox/"  # keyless: a credential sent there is ignored, the address is counted
CHAT_SESSIONS_PATH = "/api/chat/sessions"


class ContractMiddleware:
    def __init__(self, app: Litestar, services: Services, mounted: MountedApp | None = None):
        self.app = app
        self.mounted = mounted  # the MCP server and its OAuth endpoints, which answer their exact paths
        self.settings = services.settings
        self.limiter = RateLimiter(services.pool)
        self.proxies = TrustedProxies(services.settings.trusted_proxies)
        # Litestar's automatic OPTIONS answer lists only the methods of the first handler registered for a
        # path; `Allow` must name every method the path serves
        self.allowed = {route.path: ", ".join(sorted(route.methods)).encode()
                        for route in app.routes if isinstance(route, HTTPRoute)}

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        stamped = [(b"api-version", API_VERSION.encode())]
        origin = next((v for k, v in scope["headers"] if k.lower() == b"origin"), None)
        if origin is not None and cors.is_visitor_path(scope["path"]):
            if scope["method"] == "OPTIONS" and any(k.lower() == b"access-control-request-method"
                                                    for k, _ in scope["headers"]):
                return await _preflight(send, origin)
            stamped.extend(cors.response_headers(origin))

        async def send_stamped(message):
            if message["type"] == "http.response.start":
                handler = scope.get("route_handler")
                allow = self.allowed.get(next(iter(handler.paths))) if handler and scope["method"] == "OPTIONS" else None
                message["headers"] = [
                    *[h for h in message.get("headers", []) if h[0].lower() != b"api-version"
                      and not (allow and h[0].lower() == b"allow")],
                    *([(b"allow", allow)] if allow else []),
                    *stamped, *deprecation_headers(scope.get("route_handler") or self._route_of(scope)),
                    *_unframeable(message.get("headers", [])),
                ]
            await send(message)

        if scope["path"].startswith(LIMITED_PREFIX) or self._signs_in(scope):
            try:
                decision = await self._count(scope, receive)
            except DATABASE_UNAVAILABLE:
                return await _refuse(send_stamped, 503, DATABASE_DOWN,
                                     headers=((b"retry-after", str(RETRY_AFTER_SECONDS).encode()),))
            except Exception:
                log.exception("rate limiting failed on %s %s", scope.get("method"), scope["path"])
                return await _refuse(send_stamped, 500, "an unexpected error occurred; it has been logged")
            stamped.extend(decision.headers())
            if not decision.allowed:
                detail = f"more than {decision.policy.quota} requests in a minute; retry in {decision.reset_seconds} s"
                page = self.mounted and self.mounted.refusal_page(
                    scope["path"], "Too many sign-in attempts", f"This address made {detail}.")
                if page:  # a person at a sign-in form: a page, not JSON
                    return await _refuse_page(send_stamped, 429, *page)
                return await _refuse(send_stamped, 429, detail)
        headers = dict(scope["headers"])
        requested = headers.get(b"api-version", API_VERSION.encode()).decode("latin-1").strip()
        if requested not in SUPPORTED_VERSIONS:
            return await _refuse(send_stamped, 400, f"API-Version {requested!r} is not supported; use 1",
                                 "API-Version")
        query = scope.get("query_string", b"").decode("latin-1")
        parameters = parse_qsl(query, keep_blank_values=True)
        leaked = sorted({k.lower() for k, _ in parameters} & CREDENTIAL_PARAMETERS)
        if leaked:
            return await _refuse(send_stamped, 400,
                                 "credentials must never appear in a URL; send them in the Authorization header",
                                 leaked[0])
        if "\x00" in scope["path"] or "%00" in query:
            # PostgreSQL text cannot hold it: a filter or an id naming it could only fail
            return await _refuse(send_stamped, 400, "a URL cannot contain U+0000 (NUL)",
                                 next((k for k, v in parameters if "\x00" in v and "\x00" not in k), None))
        if self.mounted is not None and scope["path"] in self.mounted.paths:
            return await self.mounted(scope, receive, send_stamped)
        await self.app(scope, receive, send_stamped)

    def _route_of(self, scope):
        """The route handler a request refused before routing (429, 400) would have reached, if any."""
        try:
            return self.app.asgi_router.handle_routing(path=normalize_path(scope["path"]), method=scope["method"])[1]
        except Exception:  # noqa: BLE001 - no such route or method: nothing to stamp
            return None

    def _signs_in(self, scope) -> bool:
        return (self.mounted is not None and scope["method"] != "OPTIONS"
                and scope["path"] in self.mounted.sign_in_paths)

    async def _count(self, scope, receive) -> Decision:
        """Counts the request against its credential's limit, or its client address's without one; a
        request to the OAuth endpoints against its address's sign-in limit, and a new chat
        session against its address's chat-session limit."""
        forwarded_for = b",".join(v for k, v in scope["headers"] if k.lower() == b"x-forwarded-for")
        client = scope.get("client")
        address = self.proxies.client_address(client[0] if client else None, forwarded_for.decode("latin-1"))
        scope[CLIENT_ADDRESS] = address
        if self._signs_in(scope):
            return await self.limiter.hit(*sign_in_limit(address, self.settings))
        if scope["method"] == "POST" and scope["path"] == CHAT_SESSIONS_PATH:
            return await self.limiter.hit(*chat_sessions_limit(address, self.settings))
        principal = None
        if not scope["path"].startswith(SANDBOX_PREFIX):
            scope["app"] = scope["litestar_app"] = self.app  # what a Request needs before Litestar's turn
            principal = await identify(Request(scope, receive), kept=True)  # counting needs no lookup
        return await self.limiter.hit(bucket_for(principal, address), policy_for(principal, self.settings))


def _unframeable(headers) -> list[tuple[bytes, bytes]]:
    """A page no other site may frame (a signed-in page framed by another could be clicked through): an
    HTML answer without a policy of its own gets one that says only that."""
    names = {name.lower(): value for name, value in headers}
    if names.get(b"content-type", b"").lower().startswith(b"text/html") and b"content-security-policy" not in names:
        return [(b"content-security-policy", b"frame-ancestors 'none'")]
    return []


async def _preflight(send, origin: bytes) -> None:
    await send({"type": "http.response.start", "status": 204, "headers": cors.preflight_headers(origin)})
    await send({"type": "http.response.body", "body": b""})


async def _refuse_page(send, status: int, page: str, headers: dict[str, str]) -> None:
    body = page.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(body)).encode()),
                            *[(k.lower().encode(), v.encode()) for k, v in headers.items()]]})
    await send({"type": "http.response.body", "body": body})


async def _refuse(send, status: int, detail: str, field: str | None = None,
                  headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    body = problem_body(status, detail, field)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/problem+json"),
                            (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})
