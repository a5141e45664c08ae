"""Authentication and authorization, as the contract's Authentication section states them."""

from __future__ import annotations

import base64
import binascii

from litestar import Request

from commands.admin import hash_secret
from commands.errors import Forbidden, Unauthorized
from commands.principal import ALL_SCOPES, Principal
from readapi.services import ORG_POSITION, services

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
        raise Unauthorized(
            "unsupported Authorization scheme; use Basic (API key), Token (operator) or ChatSession (visitor)")
    if kind == "apikey":
        try:
            value = base64.b64decode(value, validate=True).decode().removesuffix(":")
        except (binascii.Error, UnicodeDecodeError):
            raise Unauthorized("the Basic credential is not valid base64") from None
    return kind, value


# Each lookup also reads the organization's latest write position, as of this moment: what the
# request's reads wait for (read-your-writes), without a query of its own.
ORG_POSITION_COLUMN = "(SELECT position FROM parley_org_positions p WHERE p.org_id = c.org_id)"


async def _lookup(request: Request, kind: str, secret: str) -> tuple[Principal, int] | None:
    async with services(request).pool.connection() as conn:
        if kind == "apikey":
            row = await (await conn.execute(
                f"SELECT id, org_id, scopes, website_id, rate_per_minute, {ORG_POSITION_COLUMN} FROM rm_api_keys c "
                "WHERE secret_hash = %s AND NOT revoked", (hash_secret(secret),))).fetchone()
            return row and (Principal("apikey", row[1], row[0], frozenset(row[2]), website_id=row[3],
                                      rate_per_minute=row[4]), row[5] or 0)
        if kind == "operator":
            row = await (await conn.execute(
                f"SELECT token_id, org_id, operator_id, {ORG_POSITION_COLUMN} FROM rm_operator_tokens c "
                "WHERE token_hash = %s AND NOT revoked", (hash_secret(secret),))).fetchone()
            return row and (Principal("operator", row[1], row[0], ALL_SCOPES, operator_id=row[2]), row[3] or 0)
        row = await (await conn.execute(
            f"SELECT session_id, org_id, website_id, customer_id, {ORG_POSITION_COLUMN} FROM rm_chat_sessions c "
            "WHERE token_hash = %s", (hash_secret(secret),))).fetchone()
        # a visitor holds no scopes: only the routes that accept "chat" credentials let them in
        return row and (Principal("chat", row[1], row[0], frozenset(), website_id=row[2], customer_id=row[3]),
                        row[4] or 0)


IDENTIFIED = "parley.principal"  # scope key: the request's principal (or None), once looked up


async def identify(request: Request) -> Principal | None:
    """The principal of the request's credential, or None without a valid one. Looked up once per
    request: the rate limiter needs it before routing, `authenticate` again in the handler."""
    if IDENTIFIED not in request.scope:
        try:
            found = credential(request)
        except Unauthorized:
            found = None
        principal, position = (await _lookup(request, *found) if found else None) or (None, 0)
        request.scope[IDENTIFIED] = principal  # type: ignore[literal-required]
        request.scope[ORG_POSITION] = position  # type: ignore[literal-required]
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
