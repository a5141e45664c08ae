"""Parley's own OAuth 2.1 authorization server for the MCP connection, as the SDK's provider protocol.

The SDK's handlers parse and check the requests (PKCE with S256 only, a registered redirect URI, the
client's secret); this provider keeps the state in PostgreSQL, so any API process answers any step:
registered clients, authorization requests waiting for consent, authorization codes and grants (one per
connection, with its refresh token, stored hashed and rotated on every use). An access token is a
signed JWT (`keys.py`) bound to the grant, the operator and the one organization chosen on the consent
page; every request checks that the grant, the membership and the operator's sessions still stand.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import time
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import jwt
from mcp.server.auth.middleware.client_auth import ClientAuthenticator
from mcp.server.auth.provider import (AccessToken, AuthorizationCode, AuthorizationParams, AuthorizeError,
                                      RefreshToken, RegistrationError, TokenError, construct_redirect_uri)
from mcp.shared.auth import InvalidRedirectUriError, InvalidScopeError, OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl
from starlette.requests import Request

from mcp_server.keys import ACCESS_TOKEN_SECONDS, ALGORITHM, SigningKeys
from events.ids import new_id, parse_id
from commands.principal import Role
from projections.views.operators import admitted_role

READ, WRITE = "parley:read", "parley:write"
SCOPES = [READ, WRITE]
PRODUCT = "parley"
CODE_SECONDS = 300
CONSENT_SECONDS = 900
# Authorization requests a client may have waiting for consent: past it, its oldest is dropped (its
# consent page then says it expired), so whoever knows a client's id cannot lock it out by flooding
PENDING_PER_CLIENT = 100
REFRESH_SECONDS = 30 * 24 * 3600
LOOPBACK = {"127.0.0.1", "[::1]", "localhost"}

DDL = """
CREATE TABLE IF NOT EXISTS parley_oauth_clients (
    client_id text PRIMARY KEY, info jsonb NOT NULL, secret_hash text, created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE IF NOT EXISTS parley_oauth_requests (
    id text PRIMARY KEY, client_id text NOT NULL, params jsonb NOT NULL, csrf_hash text, operator_id uuid,
    expires_at timestamptz NOT NULL);
CREATE INDEX IF NOT EXISTS parley_oauth_requests_client ON parley_oauth_requests (client_id, expires_at);
-- the operator whose password was right and whose two-factor code the consent page asks for next
ALTER TABLE parley_oauth_requests ADD COLUMN IF NOT EXISTS awaiting_code_of uuid;
CREATE TABLE IF NOT EXISTS parley_oauth_codes (
    code_hash text PRIMARY KEY, client_id text NOT NULL, operator_id uuid NOT NULL, org_id uuid NOT NULL,
    scopes text[] NOT NULL, code_challenge text NOT NULL, redirect_uri text NOT NULL,
    redirect_uri_explicit boolean NOT NULL, resource text NOT NULL, expires_at timestamptz NOT NULL, grant_id uuid);
CREATE TABLE IF NOT EXISTS parley_oauth_grants (
    id uuid PRIMARY KEY, client_id text NOT NULL, operator_id uuid NOT NULL, org_id uuid NOT NULL,
    scopes text[] NOT NULL, resource text NOT NULL, refresh_hash text UNIQUE, previous_refresh_hash text,
    refresh_expires_at timestamptz NOT NULL, revoked boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now());
CREATE INDEX IF NOT EXISTS parley_oauth_grants_previous ON parley_oauth_grants (previous_refresh_hash);
"""

# The grant, unless revoked, with the organization's latest write position, which the tools' reads wait
# for (read-your-writes).
UNREVOKED_GRANT = """
SELECT g.operator_id, g.org_id, g.created_at, (SELECT position FROM parley_org_positions p WHERE p.org_id = g.org_id)
FROM parley_oauth_grants g
WHERE g.id = %(grant)s AND g.operator_id = %(operator)s AND g.org_id = %(org)s AND NOT g.revoked
"""


async def grant_stands(conn, grant: uuid.UUID | str, operator: uuid.UUID | str,
                       org: uuid.UUID | str) -> tuple[int, Role] | None:
    """The organization's latest write position and the operator's role there while the grant stands: it is
    not revoked, the operator is still an active member of its organization and no revocation of the
    operator's sessions came after it; else None."""
    row = await (await conn.execute(UNREVOKED_GRANT, {"grant": grant, "operator": operator, "org": org})).fetchone()
    role = row and await admitted_role(conn, row[0], row[1], since=row[2])
    if not role:
        return None
    return row[3] or 0, role


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def is_loopback(uri: str) -> bool:
    parts = urlsplit(uri)
    return parts.scheme == "http" and (parts.hostname or "") in {"127.0.0.1", "::1", "localhost"}


def _without_port(uri: str) -> tuple:
    parts = urlsplit(uri)
    return parts.scheme, parts.hostname, parts.path, parts.query


class ParleyClient(OAuthClientInformationFull):
    """A registered client: redirect URIs match exactly, except that a loopback one matches on any port
    (RFC 8252 section 7.3: a native client listens on whichever port is free). It may ask for any of the
    server's scopes, whatever it registered with: the operator approves them on the consent page, and a
    client steps up from parley:read to parley:write without registering again."""

    def validate_scope(self, requested_scope: str | None) -> list[str] | None:
        if requested_scope is None:
            return None
        requested = requested_scope.split()
        if unknown := [scope for scope in requested if scope not in SCOPES]:
            raise InvalidScopeError(f"unknown scope {unknown[0]}; this server has {' and '.join(SCOPES)}")
        return requested

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        if redirect_uri is not None and self.redirect_uris and is_loopback(str(redirect_uri)):
            wanted = _without_port(str(redirect_uri))
            if any(is_loopback(str(r)) and _without_port(str(r)) == wanted for r in self.redirect_uris):
                return redirect_uri
            raise InvalidRedirectUriError(f"Redirect URI '{redirect_uri}' not registered for client")
        return super().validate_redirect_uri(redirect_uri)


class HashedSecretAuthenticator(ClientAuthenticator):
    """The SDK's client authentication, with client secrets stored as SHA-256 digests: the presented
    secret is checked against the digest, then the SDK authenticates the client as usual, against the
    secret just checked (or against a random one, which fails)."""

    async def authenticate_request(self, request: Request) -> OAuthClientInformationFull:
        form = await request.form()
        client_id = form.get("client_id")
        stored = await self.provider.get_client(str(client_id)) if client_id else None
        if stored is None or not stored.client_secret:
            return await super().authenticate_request(request)
        presented = _presented_secret(request, form)
        matches = presented is not None and hmac.compare_digest(digest(presented), stored.client_secret)
        checked = stored.model_copy(update={"client_secret": presented if matches else secrets.token_hex(32)})
        client = await ClientAuthenticator(_Known(checked)).authenticate_request(request)
        return client.model_copy(update={"client_secret": stored.client_secret})


@dataclass
class _Known:
    client: OAuthClientInformationFull

    async def get_client(self, client_id: str) -> OAuthClientInformationFull:
        return self.client


def _presented_secret(request: Request, form) -> str | None:
    header = request.headers.get("authorization", "")
    if header.startswith("Basic "):
        try:
            return unquote(base64.b64decode(header[6:]).decode().split(":", 1)[1])
        except (ValueError, UnicodeDecodeError, binascii.Error, IndexError):
            return None
    secret = form.get("client_secret")
    return secret if isinstance(secret, str) else None


class ParleyCode(AuthorizationCode):
    org_id: str


class ParleyRefreshToken(RefreshToken):
    grant_id: str
    org_id: str


class ParleyAccessToken(AccessToken):
    grant_id: str
    org_id: str
    position: int = 0  # the organization's latest write position when the token was checked
    role: Role | None = None  # the operator's role in the organization then


@dataclass
class Endpoints:
    """The public URLs: the issuer is the service's base URL; the protected resource is `{base}/mcp`."""

    base_url: str

    @property
    def issuer(self) -> str:
        return self.base_url

    @property
    def resource(self) -> str:
        return self.base_url + "/mcp"

    @property
    def api_resource(self) -> str:
        """The REST API as a resource: `parley login` asks for it, and gets an operator access token."""
        return self.base_url + "/api"

    @property
    def consent(self) -> str:
        return self.base_url + "/oauth/consent"

    @property
    def resource_metadata(self) -> str:
        return self.base_url + "/.well-known/oauth-protected-resource/mcp"


class ParleyAuthorizationServer:
    """The SDK's `OAuthAuthorizationServerProvider`, and its `TokenVerifier`."""

    def __init__(self, pool, keys: SigningKeys, endpoints: Endpoints, operator_tokens=None):
        self.pool = pool
        self.keys = keys
        self.endpoints = endpoints
        self.operator_tokens = operator_tokens  # `cli_tokens.OperatorTokens`: codes made for the REST API

    # -- clients -------------------------------------------------------------------------------------

    async def get_client(self, client_id: str) -> ParleyClient | None:
        async with self.pool.connection() as conn:
            row = await (await conn.execute(
                "SELECT info, secret_hash FROM parley_oauth_clients WHERE client_id = %s", (client_id,))).fetchone()
        return row and ParleyClient.model_validate({**row[0], "client_secret": row[1]})

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        for uri in client_info.redirect_uris or []:
            text = str(uri)
            if urlsplit(text).fragment or not (text.startswith("https://") or is_loopback(text)):
                raise RegistrationError("invalid_redirect_uri",
                                        f"{text}: redirect URIs are https, or http on a loopback address, "
                                        "without a fragment")
        info = client_info.model_dump(mode="json", exclude={"client_secret"}, exclude_none=True)
        secret = client_info.client_secret
        async with self.pool.connection() as conn:
            await conn.execute("INSERT INTO parley_oauth_clients (client_id, info, secret_hash) VALUES (%s, %s, %s)",
                               (client_info.client_id, json.dumps(info), secret and digest(secret)))

    # -- authorization: the consent page completes what this starts ---------------------------------

    def resources(self) -> list[str]:
        return [self.endpoints.resource] + ([self.endpoints.api_resource] if self.operator_tokens else [])

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        if params.resource is None:
            raise AuthorizeError("invalid_target", f"the resource parameter is required: {self.endpoints.resource}")
        if params.resource.rstrip("/") not in self.resources():
            raise AuthorizeError("invalid_target", "this server issues tokens only for "
                                 + " and ".join(self.resources()))
        if params.resource.rstrip("/") == self.endpoints.api_resource and not is_loopback(str(params.redirect_uri)):
            # an operator token for the REST API goes only to a program on the operator's own machine
            # (`parley login`): a client elsewhere, whatever name it gives itself, could phish for one
            raise AuthorizeError("invalid_target", f"{self.endpoints.api_resource} is issued only to a client "
                                 "on a loopback redirect URI (parley login); connect to "
                                 f"{self.endpoints.resource} instead")
        scopes = params.scopes or [READ]
        if unknown := sorted(set(scopes) - set(SCOPES)):
            raise AuthorizeError("invalid_scope", f"unknown scopes {unknown}; known: {SCOPES}")
        request_id = secrets.token_urlsafe(24)
        stored = params.model_dump(mode="json") | {"scopes": scopes}
        async with self.pool.connection() as conn:
            await conn.execute("DELETE FROM parley_oauth_requests WHERE expires_at < now()")
            await conn.execute(
                "INSERT INTO parley_oauth_requests (id, client_id, params, expires_at) "
                f"VALUES (%s, %s, %s, now() + interval '{CONSENT_SECONDS} seconds')",
                (request_id, client.client_id, json.dumps(stored)))
            await conn.execute(
                "DELETE FROM parley_oauth_requests WHERE id IN (SELECT id FROM parley_oauth_requests "
                "WHERE client_id = %s ORDER BY expires_at DESC OFFSET %s)", (client.client_id, PENDING_PER_CLIENT))
        return f"{self.endpoints.consent}?request={request_id}"

    def redirect(self, params: dict, **answer: str | None) -> str:
        """Where the browser goes back to the client: the answer, `state`, and `iss` (RFC 9207)."""
        return construct_redirect_uri(params["redirect_uri"], **answer, state=params.get("state"),
                                      iss=self.endpoints.issuer)

    async def issue_code(self, request_id: str, params: dict, client_id: str, operator_id: uuid.UUID,
                         org_id: uuid.UUID) -> str:
        code = secrets.token_urlsafe(32)
        # the SDK's errors are frozen dataclasses, which a context manager cannot re-raise: raised after it
        async with self.pool.connection() as conn, conn.transaction():
            claimed = await (await conn.execute(
                "DELETE FROM parley_oauth_requests WHERE id = %s RETURNING 1", (request_id,))).fetchone()
            if claimed:
                await conn.execute(
                    "INSERT INTO parley_oauth_codes (code_hash, client_id, operator_id, org_id, scopes, code_challenge, "
                    "redirect_uri, redirect_uri_explicit, resource, expires_at) VALUES "
                    f"(%s, %s, %s, %s, %s, %s, %s, %s, %s, now() + interval '{CODE_SECONDS} seconds')",
                    (digest(code), client_id, operator_id, org_id, params["scopes"], params["code_challenge"],
                     params["redirect_uri"], params["redirect_uri_provided_explicitly"], params["resource"]))
        if not claimed:
            raise AuthorizeError("invalid_request", "this authorization request was already answered")
        return code

    async def load_authorization_code(self, client: OAuthClientInformationFull, authorization_code: str
                                      ) -> ParleyCode | None:
        async with self.pool.connection() as conn:
            row = await (await conn.execute(
                "SELECT client_id, operator_id, org_id, scopes, code_challenge, redirect_uri, redirect_uri_explicit, "
                "resource, extract(epoch FROM expires_at) FROM parley_oauth_codes WHERE code_hash = %s",
                (digest(authorization_code),))).fetchone()
        if row is None:
            return None
        return ParleyCode(code=authorization_code, client_id=row[0], subject=str(row[1]), org_id=str(row[2]),
                          scopes=row[3], code_challenge=row[4], redirect_uri=AnyUrl(row[5]),
                          redirect_uri_provided_explicitly=row[6], resource=row[7], expires_at=float(row[8]))

    async def exchange_authorization_code(self, client: OAuthClientInformationFull, authorization_code: ParleyCode
                                          ) -> OAuthToken:
        """A code is used once: the first exchange claims it; a second one (a stolen code replayed) finds it
        claimed and revokes the grant the first one made (RFC 6749 section 4.1.2). A code made for the
        REST API is exchanged for an operator access token instead (`cli_tokens.py`)."""
        if self.operator_tokens and authorization_code.resource.rstrip("/") == self.endpoints.api_resource:
            return await self.operator_tokens.exchange(authorization_code)
        grant_id, refresh = new_id(), "prt_" + secrets.token_urlsafe(32)
        async with self.pool.connection() as conn:
            async with conn.transaction():
                claimed = await (await conn.execute(
                    "UPDATE parley_oauth_codes SET grant_id = %s WHERE code_hash = %s AND grant_id IS NULL "
                    "AND expires_at > now() RETURNING 1", (grant_id, digest(authorization_code.code)))).fetchone()
                if claimed:
                    await conn.execute(
                        "INSERT INTO parley_oauth_grants (id, client_id, operator_id, org_id, scopes, resource, "
                        "refresh_hash, refresh_expires_at) VALUES (%s, %s, %s, %s, %s, %s, %s, "
                        f"now() + interval '{REFRESH_SECONDS} seconds')",
                        (grant_id, client.client_id, authorization_code.subject, authorization_code.org_id,
                         authorization_code.scopes, authorization_code.resource, digest(refresh)))
            if not claimed:
                await conn.execute(
                    "UPDATE parley_oauth_grants SET revoked = true WHERE id = "
                    "(SELECT grant_id FROM parley_oauth_codes WHERE code_hash = %s)", (digest(authorization_code.code),))
        if not claimed:
            raise TokenError("invalid_grant", "the authorization code was already used or has expired")
        return await self._tokens(grant_id, client.client_id, uuid.UUID(authorization_code.subject),
                                  uuid.UUID(authorization_code.org_id), authorization_code.scopes, refresh)

    async def _tokens(self, grant_id: uuid.UUID, client_id: str, operator_id: uuid.UUID, org_id: uuid.UUID,
                      scopes: list[str], refresh: str) -> OAuthToken:
        now = int(time.time())
        access = await self.keys.sign({
            "iss": self.endpoints.issuer, "sub": str(operator_id), "aud": self.endpoints.resource,
            "product": PRODUCT, "org": str(org_id), "scope": " ".join(scopes), "client_id": client_id,
            "sid": str(grant_id), "iat": now, "exp": now + ACCESS_TOKEN_SECONDS, "jti": secrets.token_urlsafe(16)})
        return OAuthToken(access_token=access, expires_in=ACCESS_TOKEN_SECONDS, scope=" ".join(scopes),
                          refresh_token=refresh)

    # -- refresh: rotated on every use ---------------------------------------------------------------

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str
                                 ) -> ParleyRefreshToken | None:
        async with self.pool.connection() as conn:
            row = await (await conn.execute(
                "SELECT id, client_id, operator_id, org_id, scopes, resource, "
                "extract(epoch FROM refresh_expires_at)::bigint FROM parley_oauth_grants "
                "WHERE refresh_hash = %s AND NOT revoked", (digest(refresh_token),))).fetchone()
            if row is None:  # a rotated-out refresh token presented again: it leaked, so the grant ends
                await conn.execute("UPDATE parley_oauth_grants SET revoked = true WHERE previous_refresh_hash = %s",
                                   (digest(refresh_token),))
                return None
        return ParleyRefreshToken(token=refresh_token, grant_id=str(row[0]), client_id=row[1], subject=str(row[2]),
                                  org_id=str(row[3]), scopes=row[4], resource=row[5], expires_at=row[6])

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: ParleyRefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        fresh = "prt_" + secrets.token_urlsafe(32)
        async with self.pool.connection() as conn:
            stands = await grant_stands(conn, refresh_token.grant_id, refresh_token.subject, refresh_token.org_id)
            rotated = stands is not None and await (await conn.execute(
                "UPDATE parley_oauth_grants SET refresh_hash = %s, previous_refresh_hash = refresh_hash "
                "WHERE id = %s AND refresh_hash = %s AND NOT revoked RETURNING 1",
                (digest(fresh), refresh_token.grant_id, digest(refresh_token.token)))).fetchone()
        if not rotated:
            raise TokenError("invalid_grant", "the connection was revoked, or the refresh token was already used")
        return await self._tokens(uuid.UUID(refresh_token.grant_id), client.client_id,
                                  uuid.UUID(refresh_token.subject), uuid.UUID(refresh_token.org_id), scopes, fresh)

    # -- access tokens -------------------------------------------------------------------------------

    async def load_access_token(self, token: str) -> ParleyAccessToken | None:
        """The token's connection, if its signature, issuer, audience, product and expiry check out and
        its grant still stands; None otherwise."""
        try:
            kid = jwt.get_unverified_header(token).get("kid")
            key = await self.keys.verifying_key(kid) if isinstance(kid, str) else None
            if key is None:
                return None
            claims = jwt.decode(token, key.private.public_key(), algorithms=[ALGORITHM],
                                audience=self.endpoints.resource, issuer=self.endpoints.issuer,
                                options={"require": ["exp", "iat", "jti", "sub", "aud", "iss"]})
        except jwt.PyJWTError:
            return None
        grant, operator, org = (parse_id(claims.get(name)) for name in ("sid", "sub", "org"))
        if claims.get("product") != PRODUCT or None in (grant, operator, org):
            return None
        async with self.pool.connection() as conn:
            stands = await grant_stands(conn, grant, operator, org)
        if stands is None:
            return None
        position, role = stands
        return ParleyAccessToken(token=token, client_id=str(claims.get("client_id")),
                                 scopes=str(claims.get("scope", "")).split(), expires_at=int(claims["exp"]),
                                 resource=self.endpoints.resource, subject=str(operator), claims=claims,
                                 grant_id=str(grant), org_id=str(org), position=position, role=role)

    async def verify_token(self, token: str) -> ParleyAccessToken | None:
        return await self.load_access_token(token)

    async def revoke_token(self, token: Any) -> None:
        """Revoking either token ends the connection: its refresh token and every access token."""
        grant = token.grant_id
        async with self.pool.connection() as conn:
            await conn.execute("UPDATE parley_oauth_grants SET revoked = true WHERE id = %s", (grant,))
