"""The MCP server's ASGI app: `/mcp` (the SDK's Streamable HTTP app, stateless, so any API process
answers any request), the OAuth endpoints and their metadata. `mcp_server/service.py` builds it in the
application's lifespan and routes `PATHS` to it."""

from __future__ import annotations

import json

from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.metadata import MetadataHandler, ProtectedResourceMetadataHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.errors import stringify_pydantic_error
from mcp.server.auth.handlers.revoke import RevocationErrorResponse, RevocationRequest
from mcp.server.auth.json_response import PydanticJSONResponse
from mcp.server.auth.middleware.client_auth import AuthenticationError
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import construct_redirect_uri
from mcp.server.auth.routes import cors_middleware
from mcp.server.auth.settings import ClientRegistrationOptions
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata
from starlette.applications import Starlette
from starlette.authentication import AuthCredentials
from pydantic import ValidationError
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcp_server import oauth
from mcp_server.cli_tokens import OperatorTokens
from mcp_server.consent import ConsentPage
from mcp_server.keys import SigningKeys, ensure_signing_key
from mcp_server.service import PROTECTED_RESOURCE
from mcp_server.oauth import READ, SCOPES, WRITE, Endpoints, HashedSecretAuthenticator, ParleyAuthorizationServer
from mcp_server.tools import REPLIES_DDL, WRITE_TOOLS, build_server
from projections.runner import lock_key


LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]


def _listed(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def transport_security(settings, base_url: str) -> TransportSecuritySettings:
    """Hosts and origins /mcp accepts (DNS-rebinding protection): the setting's, else the public URL's
    and loopback's."""
    host = base_url.split("://", 1)[1]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=_listed(settings.mcp_allowed_hosts) or [host, *LOOPBACK_HOSTS],
        allowed_origins=_listed(settings.mcp_allowed_origins) or [base_url, *LOOPBACK_ORIGINS])


async def _whole_body(receive, limit: int) -> bytes | None:
    body, more = b"", True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body += message.get("body", b"")
        more = message.get("more_body", False)
        if len(body) > limit:
            return None
    return body


def _calls_write_tool(body: bytes) -> str | None:
    """The write tool a JSON-RPC body calls, if any (a batch counts if any of its calls does)."""
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested too deep for it: the SDK answers it
        return None
    for message in payload if isinstance(payload, list) else [payload]:
        if isinstance(message, dict) and message.get("method") == "tools/call":
            name = (message.get("params") or {}).get("name") if isinstance(message.get("params"), dict) else None
            if name in WRITE_TOOLS:
                return name
    return None


async def _refuse(send, status: int, challenge: str, error: str, description: str) -> None:
    body = json.dumps({"error": error, "error_description": description}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", challenge.encode())]})
    await send({"type": "http.response.body", "body": body})


# Stateless, the transport has no session: a GET stream could never carry a message and there is no
# session to DELETE. The Streamable HTTP transport lets a server answer both 405.
STATELESS_REFUSED = frozenset({"GET", "DELETE"})


async def _not_allowed(send) -> None:
    body = json.dumps({"error": "method_not_allowed", "error_description":
                       "this server is stateless: POST JSON-RPC requests to /mcp"}).encode()
    await send({"type": "http.response.start", "status": 405, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), (b"allow", b"POST")]})
    await send({"type": "http.response.body", "body": body})


class BearerGate:
    """In front of /mcp: no valid token, 401 naming the resource metadata and the read scope; a write
    tool called without `parley:write`, 403 `insufficient_scope` naming it (the step-up the SDK's client
    answers by asking for the wider scope). The token's connection goes on to the tools as the request's
    authenticated user."""

    def __init__(self, inner, server: ParleyAuthorizationServer, max_body: int):
        self.inner = inner
        self.server = server
        self.max_body = max_body

    async def __call__(self, scope, receive, send) -> None:
        if scope["method"] in STATELESS_REFUSED:
            return await _not_allowed(send)
        metadata = self.server.endpoints.resource_metadata
        header = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
        token = header[7:].strip() if header[:7].lower() == "bearer " else ""
        access = await self.server.load_access_token(token) if token else None
        if access is None:
            error = ', error="invalid_token"' if token else ""
            return await _refuse(send, 401, f'Bearer resource_metadata="{metadata}", scope="{READ}"{error}',
                                 "invalid_token", "a valid access token for this server is required")
        replay = receive
        if scope["method"] == "POST":
            body = await _whole_body(receive, self.max_body)
            if body is None:
                return await _refuse(send, 413, "Bearer", "invalid_request", "the request body is too large")
            if (tool := _calls_write_tool(body)) and WRITE not in access.scopes:
                return await _refuse(
                    send, 403, f'Bearer error="insufficient_scope", scope="{READ} {WRITE}", '
                    f'resource_metadata="{metadata}", error_description="{tool} needs the {WRITE} scope"',
                    "insufficient_scope", f"{tool} needs the {WRITE} scope")
            replay = _replaying(body, receive)
        user = AuthenticatedUser(access)
        scope = {**scope, "user": user, "auth": AuthCredentials(access.scopes)}
        reset = auth_context_var.set(user)
        try:
            await self.inner(scope, replay, send)
        finally:
            auth_context_var.reset(reset)


def _replaying(body: bytes, receive):
    sent = False

    async def replay():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()
    return replay


class RevocationForm(RevocationRequest):
    """RFC 7009 as a public client sends it: `token` and `client_id`, no `client_secret` (the SDK's model
    requires the field, even empty). A confidential client still authenticates with its secret."""

    client_secret: str | None = None


class Revocation:
    """The SDK's revocation endpoint, which a public client can call without a `client_secret` field:
    the client is authenticated as at the token endpoint, a token that is not the client's is ignored,
    and the answer is 200 whether or not the token was known (RFC 7009 section 2.2)."""

    def __init__(self, server: ParleyAuthorizationServer, authenticator: HashedSecretAuthenticator):
        self.server = server
        self.authenticator = authenticator

    async def handle(self, request) -> Response:
        try:
            client = await self.authenticator.authenticate_request(request)
        except AuthenticationError as exc:
            return PydanticJSONResponse(status_code=401, content=RevocationErrorResponse(
                error="unauthorized_client", error_description=exc.message))
        try:
            form = RevocationForm.model_validate(dict(await request.form()))
        except ValidationError as exc:
            return PydanticJSONResponse(status_code=400, content=RevocationErrorResponse(
                error="invalid_request", error_description=stringify_pydantic_error(exc)))
        token = (await self.server.load_access_token(form.token)
                 or await self.server.load_refresh_token(client, form.token))
        if token is not None and token.client_id == client.client_id:
            await self.server.revoke_token(token)
        return Response(status_code=200, headers={"Cache-Control": "no-store", "Pragma": "no-cache"})


async def build(services) -> tuple[Starlette, object]:
    """The app and the SDK's session manager (which the caller runs), once the public base URL is known
    (a port of 0 is chosen when the socket is bound)."""
    base_url = (services.settings.public_url or services.base_url).rstrip("/")
    async with services.pool.connection() as conn:
        await ensure_signing_key(conn)
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key("oauth-tables"),))
            await conn.execute(oauth.DDL + REPLIES_DDL)
    keys = SigningKeys(services.pool)
    await keys.load()
    server = ParleyAuthorizationServer(services.pool, keys, Endpoints(base_url), OperatorTokens(services))
    mcp = build_server(services)
    mcp.streamable_http_app(stateless_http=True, json_response=True,
                            transport_security=transport_security(services.settings, base_url))
    return Starlette(routes=_routes(services, server, mcp, keys)), mcp.session_manager


def _routes(services, server: ParleyAuthorizationServer, mcp, keys: SigningKeys) -> list[Route]:
    endpoints = server.endpoints
    authenticator = HashedSecretAuthenticator(server)
    registration = ClientRegistrationOptions(enabled=True, valid_scopes=SCOPES, default_scopes=SCOPES)
    # plain strings: the models keep a path-less issuer without a trailing slash (issuers compare exactly)
    metadata = OAuthMetadata.model_validate({
        "issuer": endpoints.issuer, "authorization_endpoint": endpoints.base_url + "/oauth/authorize",
        "token_endpoint": endpoints.base_url + "/oauth/token",
        "registration_endpoint": endpoints.base_url + "/oauth/register",
        "revocation_endpoint": endpoints.base_url + "/oauth/revoke",
        "revocation_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic", "none"],
        "scopes_supported": SCOPES, "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic", "none"],
        "code_challenge_methods_supported": ["S256"], "authorization_response_iss_parameter_supported": True,
    })
    resource = ProtectedResourceMetadata.model_validate({
        "resource": endpoints.resource, "authorization_servers": [endpoints.issuer], "scopes_supported": SCOPES,
        "resource_name": "Parley", "bearer_methods_supported": ["header"]})
    consent = ConsentPage(server, services.settings.signin_failures_per_account, services.store, services.sealer)
    authorization = AuthorizationHandler(server)

    async def authorize(request):
        """The SDK's authorization endpoint; its error redirects to the client gain `iss` (RFC 9207), as
        the consent page's answers have it."""
        response = await authorization.handle(request)
        location = response.headers.get("location")
        if location and not location.startswith(endpoints.consent + "?"):
            response.headers["location"] = construct_redirect_uri(location, iss=endpoints.issuer)
        return response

    async def jwks(request):
        return JSONResponse(await keys.jwks(), headers={"Cache-Control": "public, max-age=300"})

    def public(handler, methods):
        return cors_middleware(handler, methods)

    return [
        Route("/mcp", endpoint=BearerGate(StreamableHTTPASGIApp(mcp.session_manager), server,
                                         services.settings.max_body_bytes)),
        Route(PROTECTED_RESOURCE, public(ProtectedResourceMetadataHandler(resource).handle, ["GET", "OPTIONS"])),
        Route(PROTECTED_RESOURCE + "/mcp",
              public(ProtectedResourceMetadataHandler(resource).handle, ["GET", "OPTIONS"])),
        Route("/.well-known/oauth-authorization-server",
              public(MetadataHandler(metadata).handle, ["GET", "OPTIONS"])),
        Route("/.well-known/jwks.json", public(jwks, ["GET", "OPTIONS"])),
        Route("/oauth/register", public(RegistrationHandler(server, registration).handle, ["POST", "OPTIONS"]),
              methods=["POST", "OPTIONS"]),
        Route("/oauth/authorize", authorize, methods=["GET", "POST"]),
        Route("/oauth/consent", consent.show, methods=["GET"]),
        Route("/oauth/consent", consent.submit, methods=["POST"]),
        Route("/oauth/token", public(TokenHandler(server, authenticator).handle, ["POST", "OPTIONS"]),
              methods=["POST", "OPTIONS"]),
        Route("/oauth/revoke", public(Revocation(server, authenticator).handle, ["POST", "OPTIONS"]),
              methods=["POST", "OPTIONS"]),
    ]
