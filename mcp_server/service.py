"""The MCP server's place in the API: the exact paths the API's ASGI layer routes to it, and its life.

The app (`mcp_server/app.py`: the SDK, the OAuth server, the tools) is imported and built in the
background once the application has started, and the SDK's session manager runs from then until the
application stops (a mounted app's own lifespan would not run): the SDK's import costs seconds of CPU,
which the server's start need not wait for. A request that comes before it is ready waits for it.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from contextlib import asynccontextmanager, suppress
from typing import AsyncIterator

from mcp_server.pages import CONSENT_PATH, HEADERS as PAGE_HEADERS, refusal

log = logging.getLogger("parley.mcp")

PROTECTED_RESOURCE = "/.well-known/oauth-protected-resource"
AUTHORIZE_PATH = "/oauth/authorize"
PATHS = frozenset({
    "/mcp", PROTECTED_RESOURCE, PROTECTED_RESOURCE + "/mcp", "/.well-known/oauth-authorization-server",
    "/.well-known/jwks.json", "/oauth/register", AUTHORIZE_PATH, CONSENT_PATH, "/oauth/token",
    "/oauth/revoke",
})
# Counted per client address, whatever method (but a CORS preflight) and whatever they present: each takes
# a password, a code or a refresh token to try, or writes a row (a client, an authorization request)
SIGN_IN_PATHS = frozenset({AUTHORIZE_PATH, CONSENT_PATH, "/oauth/token", "/oauth/register", "/oauth/revoke"})
# What a person's browser opens: refused with a page, not JSON
BROWSER_PATHS = frozenset({AUTHORIZE_PATH, CONSENT_PATH})
READY_WAIT_SECONDS = 60.0


class McpService:
    """The MCP server as the API mounts it (readapi.mounted.MountedApp)."""

    paths = PATHS
    sign_in_paths = SIGN_IN_PATHS

    def __init__(self, services):
        self.services = services
        self.app = None
        self.ready: asyncio.Event | None = None

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        self.ready, stop = asyncio.Event(), asyncio.Event()
        running = asyncio.create_task(self._run(stop), name="mcp")
        try:
            yield
        finally:
            stop.set()
            with suppress(asyncio.CancelledError):
                await running

    async def _run(self, stop: asyncio.Event) -> None:
        try:
            app_module = await asyncio.to_thread(importlib.import_module, "mcp_server.app")
            app, session_manager = await app_module.build(self.services)
            async with session_manager.run():
                self.app = app
                self.ready.set()
                await stop.wait()
        except Exception:
            log.exception("the MCP server could not start")
        finally:
            self.app = None
            self.ready.set()  # whoever waits gets its answer: 503 once the server is not running

    def refusal_page(self, path: str, title: str, message: str) -> tuple[str, dict[str, str]] | None:
        return (refusal(title, message), PAGE_HEADERS) if path in BROWSER_PATHS else None

    async def __call__(self, scope, receive, send) -> None:
        if self.app is None and self.ready is not None:
            with suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.ready.wait(), READY_WAIT_SECONDS)
        if self.app is None:
            body = b'{"error": "temporarily_unavailable", "error_description": "the MCP server is not running"}'
            await send({"type": "http.response.start", "status": 503,
                        "headers": [(b"content-type", b"application/json"), (b"retry-after", b"5")]})
            return await send({"type": "http.response.body", "body": body})
        await self.app(scope, receive, send)
