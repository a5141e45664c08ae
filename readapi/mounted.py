"""What the API's ASGI layer needs of an application mounted beside the REST routes (the MCP server and its
OAuth endpoints, built by the composition root): the exact paths it answers, those whose requests count as
sign-in attempts, its life, and the page a person at one of its forms sees when refused."""

from __future__ import annotations

from typing import AsyncContextManager, Protocol


class MountedApp(Protocol):
    paths: frozenset[str]
    sign_in_paths: frozenset[str]  # every request there but a CORS preflight is a sign-in attempt

    def lifespan(self) -> AsyncContextManager[None]: ...

    async def __call__(self, scope, receive, send) -> None: ...

    def refusal_page(self, path: str, title: str, message: str) -> tuple[str, dict[str, str]] | None:
        """The HTML page and its headers for a refusal at `path` when a person's browser is there; None
        where the client is a program (it gets problem JSON)."""
        ...
