"""Rules every request meets before routing: the API version and credentials kept out of URLs.

As an ASGI wrapper around the whole application, it also stamps `API-Version` on every response,
whichever layer produced it."""

from __future__ import annotations

from urllib.parse import parse_qsl

from readapi.problems import problem_body

API_VERSION = "1"
SUPPORTED_VERSIONS = frozenset({API_VERSION})
CREDENTIAL_PARAMETERS = frozenset({"api_key", "apikey", "key", "token", "access_token", "secret"})


class ContractMiddleware:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        requested = headers.get(b"api-version", API_VERSION.encode()).decode("latin-1").strip()

        async def send_with_version(message):
            if message["type"] == "http.response.start":
                message["headers"] = [
                    *[h for h in message.get("headers", []) if h[0].lower() != b"api-version"],
                    (b"api-version", API_VERSION.encode()),
                ]
            await send(message)

        if requested not in SUPPORTED_VERSIONS:
            return await _refuse(send_with_version, f"API-Version {requested!r} is not supported; use 1", "API-Version")
        query = scope.get("query_string", b"").decode("latin-1")
        leaked = sorted({k.lower() for k, _ in parse_qsl(query, keep_blank_values=True)} & CREDENTIAL_PARAMETERS)
        if leaked:
            return await _refuse(send_with_version,
                                 "credentials must never appear in a URL; send them in the Authorization header",
                                 leaked[0])
        await self.app(scope, receive, send_with_version)


async def _refuse(send, detail: str, field: str) -> None:
    body = problem_body(400, detail, field)
    await send({"type": "http.response.start", "status": 400,
                "headers": [(b"content-type", b"application/problem+json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
