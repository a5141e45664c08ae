"""Authentication and authorization, as the contract's Authentication section states them."""

from __future__ import annotations

import base64
import binascii

from litestar import Request

from commands.admin import hash_secret
from commands.errors import Forbidden, Unauthorized
from commands.principal import ALL_SCOPES, Principal
from readapi.services import services

SCHEMES = {"basic": "apikey", "token": "operator", "chatsession": "chat"}


def credential(request: Request) -> tuple[str, str] | None:
    """(kind, secret) from the Authorization header, or None when there is none."""
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    kind = SCHEMES.get(scheme.lower())
    value = value.strip()
    if kind is None or not value:
        raise Unauthorized("unsupported Authorization scheme; use Basic (API key) or Token (operator)")
    if kind == "apikey":
        try:
            value = base64.b64decode(value, validate=True).decode().removesuffix(":")
        except (binascii.Error, UnicodeDecodeError):
            raise Unauthorized("the Basic credential is not valid base64") from None
    return kind, value


async def _lookup(request: Request, kind: str, secret: str) -> Principal | None:
    async with services(request).pool.connection() as conn:
        if kind == "apikey":
            row = await (await conn.execute(
                "SELECT id, org_id, scopes, website_id, rate_per_minute FROM rm_api_keys "
                "WHERE secret_hash = %s AND NOT revoked", (hash_secret(secret),))).fetchone()
            return row and Principal("apikey", row[1], row[0], frozenset(row[2]), website_id=row[3],
                                     rate_per_minute=row[4])
        if kind == "operator":
            row = await (await conn.execute(
                "SELECT token_id, org_id, operator_id FROM rm_operator_tokens WHERE token_hash = %s AND NOT revoked",
                (hash_secret(secret),))).fetchone()
            return row and Principal("operator", row[1], row[0], ALL_SCOPES, operator_id=row[2])
    lookup = services(request).extras.get("chat_session_lookup")
    return await lookup(request, secret) if lookup else None


IDENTIFIED = "parley.principal"  # scope key: the request's principal (or None), once looked up


async def identify(request: Request) -> Principal | None:
    """The principal of the request's credential, or None without a valid one. Looked up once per
    request: the rate limiter needs it before routing, `authenticate` again in the handler."""
    if IDENTIFIED not in request.scope:
        try:
            found = credential(request)
        except Unauthorized:
            found = None
        request.scope[IDENTIFIED] = await _lookup(request, *found) if found else None  # type: ignore[literal-required]
    return request.scope[IDENTIFIED]  # type: ignore[literal-required]


async def authenticate(request: Request, *, accept: tuple[str, ...] = ("operator", "apikey"),
                       scope: str | None = None) -> Principal:
    """The request's principal; 401 without a valid credential, 403 for the wrong kind or a missing scope."""
    if credential(request) is None:
        raise Unauthorized("credentials are required")
    principal = await identify(request)
    if principal is None:
        raise Unauthorized("the credential is invalid or revoked")
    if principal.kind not in accept:
        raise Forbidden(f"this endpoint does not accept {principal.kind} credentials")
    if scope is not None and scope not in principal.scopes:
        raise Forbidden(f"the API key lacks the {scope} scope")
    request.state.principal = principal
    return principal


def operator_only(principal: Principal) -> None:
    if not principal.is_operator:
        raise Forbidden("this endpoint accepts only an operator access token")
