"""The OpenID Connect relying party of single sign-on: discovery, the authorization request (state, nonce,
PKCE S256), the code exchange and the ID token's validation, with authlib's client (its httpx OAuth2
client, its ID token claims) and joserfc (authlib's own JOSE library) for the signature.

Every URL the service fetches (the issuer's discovery document, its token endpoint, its keys, its userinfo
endpoint) passes the webhooks' SSRF guard (commands/addresses.py) first: https, and a public address
unless PARLEY_WEBHOOK_ALLOW_PRIVATE=1 (development and tests). Redirects are not followed.

A sign-in in progress is a row of `parley_sso_requests`, keyed by the hash of its `state`: its nonce, its
PKCE verifier and the hash of a random value the browser that started it holds in a cookie (a callback
from another browser, a login CSRF, is refused). The callback deletes the row as it reads it, so a state
works once, and only for `REQUEST_SECONDS`."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from typing import Any

import httpx
from authlib.common.security import generate_token
from authlib.integrations.httpx_client import AsyncOAuth2Client
from authlib.oidc.core import CodeIDToken
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from joserfc.jws import JWSRegistry
from psycopg_pool import AsyncConnectionPool

from commands.addresses import RefusedTarget, parse_target, resolve
from events import types as ev

REQUEST_SECONDS = 600  # how long a sign-in may take at the provider
FETCH_SECONDS = 10
LEEWAY_SECONDS = 60  # clock difference allowed with the provider on the ID token's times
SCOPE = "openid email profile"
BROWSER_COOKIE = "parley_sso"
CALLBACK_PATH = "/api/sso/callback"

DDL = """
CREATE TABLE IF NOT EXISTS parley_sso_requests (
    state_hash text PRIMARY KEY, org_id uuid NOT NULL, nonce text NOT NULL, code_verifier text NOT NULL,
    browser_hash text NOT NULL, expires_at timestamptz NOT NULL);
CREATE INDEX IF NOT EXISTS parley_sso_requests_expiry ON parley_sso_requests (expires_at);
"""
_installed: set[int] = set()  # the pools whose database has the table, in this process


class SignInFailed(Exception):
    """Single sign-on did not sign anyone in; the message says why, for the person at the sign-in page."""


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


async def _install(pool: AsyncConnectionPool) -> None:
    if id(pool) in _installed:
        return
    async with pool.connection() as conn, conn.transaction():
        # concurrent CREATE TABLE IF NOT EXISTS can collide: one process at a time
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext('parley_sso_requests'))")
        await conn.execute(DDL)
    _installed.add(id(pool))


async def _checked(url: str, allow_private: bool) -> str:
    try:
        target = parse_target(url, allow_private=allow_private)
        await resolve(target, allow_private=allow_private)
    except RefusedTarget as exc:
        raise SignInFailed(f"the identity provider's address {url} is refused: {exc}") from None
    return url


async def fetch_json(url: str, allow_private: bool, headers: dict[str, str] | None = None) -> dict[str, Any]:
    await _checked(url, allow_private)
    try:
        async with httpx.AsyncClient(timeout=FETCH_SECONDS, follow_redirects=False) as client:
            response = await client.get(url, headers={"Accept": "application/json", **(headers or {})})
        response.raise_for_status()
        document = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise SignInFailed(f"the identity provider did not answer {url} as expected: {exc}") from None
    if not isinstance(document, dict):
        raise SignInFailed(f"the identity provider's {url} is not a JSON object")
    return document


async def discover(issuer: str, allow_private: bool) -> dict[str, Any]:
    """The issuer's discovery document, checked to name this issuer and the endpoints a sign-in uses."""
    metadata = await fetch_json(issuer.rstrip("/") + "/.well-known/openid-configuration", allow_private)
    if metadata.get("issuer") != issuer:
        raise SignInFailed(f"the discovery document names the issuer {metadata.get('issuer')!r}, not {issuer!r}")
    missing = [name for name in ("authorization_endpoint", "token_endpoint", "jwks_uri")
               if not isinstance(metadata.get(name), str)]
    if missing:
        raise SignInFailed(f"the discovery document lacks {', '.join(missing)}")
    if "S256" not in metadata.get("code_challenge_methods_supported", ["S256"]):
        raise SignInFailed("the identity provider does not support PKCE with S256")
    return metadata


def _client(settings: ev.SsoConfigured, redirect_uri: str) -> AsyncOAuth2Client:
    return AsyncOAuth2Client(client_id=settings.client_id, client_secret=settings.client_secret, scope=SCOPE,
                             redirect_uri=redirect_uri, code_challenge_method="S256",
                             token_endpoint_auth_method="client_secret_basic", timeout=FETCH_SECONDS,
                             follow_redirects=False)


async def start(pool: AsyncConnectionPool, settings: ev.SsoConfigured, redirect_uri: str,
                allow_private: bool) -> tuple[str, str]:
    """The provider's authorization URL to send the browser to, and the value of the browser's cookie."""
    metadata = await discover(settings.issuer, allow_private)
    await _install(pool)
    state, nonce, verifier, browser = (generate_token(43) for _ in range(4))
    async with pool.connection() as conn:
        await conn.execute("DELETE FROM parley_sso_requests WHERE expires_at < now()")
        await conn.execute(
            "INSERT INTO parley_sso_requests (state_hash, org_id, nonce, code_verifier, browser_hash, expires_at) "
            "VALUES (%s, %s, %s, %s, %s, now() + make_interval(secs => %s))",
            (digest(state), settings.org_id, nonce, verifier, digest(browser), REQUEST_SECONDS))
    async with _client(settings, redirect_uri) as client:
        url, _ = client.create_authorization_url(metadata["authorization_endpoint"], state=state, nonce=nonce,
                                                 code_verifier=verifier)
    return url, browser


@dataclass(frozen=True)
class Pending:
    """A started sign-in, taken (once) by its callback."""

    org_id: uuid.UUID
    nonce: str
    code_verifier: str


async def take(pool: AsyncConnectionPool, state: str, browser: str | None) -> Pending:
    """The sign-in this `state` started, which no later callback can take again; refused when unknown,
    used, expired or started by another browser."""
    await _install(pool)
    async with pool.connection() as conn:
        row = await (await conn.execute(
            "DELETE FROM parley_sso_requests WHERE state_hash = %s RETURNING org_id, nonce, code_verifier, "
            "browser_hash, expires_at > now()", (digest(state),))).fetchone()
    if row is None or not row[4]:
        raise SignInFailed("this sign-in expired or was already used; start again")
    if browser is None or digest(browser) != row[3]:
        raise SignInFailed("this sign-in was started in another browser; start again")
    return Pending(row[0], row[1], row[2])


async def verified_email(settings: ev.SsoConfigured, pending: Pending, code: str, redirect_uri: str,
                         allow_private: bool) -> str:
    """The e-mail address the provider vouches for: the code exchanged (with the PKCE verifier), the ID
    token's signature checked with the provider's keys, its issuer, audience, nonce and times checked; the
    address from the ID token, or from the userinfo endpoint for the same subject; it must be verified."""
    metadata = await discover(settings.issuer, allow_private)
    token_endpoint = await _checked(metadata["token_endpoint"], allow_private)
    try:
        async with _client(settings, redirect_uri) as client:
            token = await client.fetch_token(token_endpoint, grant_type="authorization_code", code=code,
                                             code_verifier=pending.code_verifier)
    except Exception as exc:  # authlib's OAuthError, httpx's errors: the provider refused or failed
        raise SignInFailed(f"the identity provider refused the sign-in's code: {exc}") from None
    if "id_token" not in token:
        raise SignInFailed("the identity provider sent no ID token")
    keys = KeySet.import_key_set(await fetch_json(metadata["jwks_uri"], allow_private))
    algorithms = metadata.get("id_token_signing_alg_values_supported") or ["RS256"]
    try:
        decoded = jwt.decode(token["id_token"], keys, registry=JWSRegistry(
            algorithms=[a for a in algorithms if a != "none"], strict_check_header=False))
        claims = CodeIDToken(decoded.claims, decoded.header,
                             {"iss": {"essential": True, "value": settings.issuer},
                              "aud": {"essential": True, "value": settings.client_id},
                              "exp": {"essential": True}},
                             {"nonce": pending.nonce, "client_id": settings.client_id,
                              "access_token": token.get("access_token")})
        claims.validate(leeway=LEEWAY_SECONDS)
    except (JoseError, ValueError) as exc:
        raise SignInFailed(f"the identity provider's ID token is not valid: {exc}") from None
    found: dict[str, Any] = dict(claims)
    if "email" not in found and isinstance(metadata.get("userinfo_endpoint"), str) and token.get("access_token"):
        userinfo = await fetch_json(metadata["userinfo_endpoint"], allow_private,
                                    {"Authorization": f"Bearer {token['access_token']}"})
        if userinfo.get("sub") == claims["sub"]:
            found = userinfo
    email = found.get("email")
    if not isinstance(email, str) or "@" not in email:
        raise SignInFailed("the identity provider did not give an e-mail address")
    if found.get("email_verified") is not True:
        raise SignInFailed(f"the identity provider has not verified {email}")
    return email.strip().lower()
