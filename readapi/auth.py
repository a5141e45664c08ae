"""Authentication and authorization, as the contract's Authentication section states them."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, replace
from typing import Any, Awaitable, Callable, Literal, TypeVar

from litestar import Request
from litestar.connection import ASGIConnection
from litestar.di import NamedDependency, Provide
from litestar.handlers import BaseRouteHandler

from commands.admin import hash_secret
from commands.errors import Forbidden, TwoFactorEnrolmentRequired, Unauthorized
from commands.principal import Principal, Role
from events import origin
from events.store import CredentialsChanged
from projections.views.credentials import Found, principal_of
from projections.views.identities import OperatorIdentity
from readapi.clientaddress import CLIENT_ADDRESS
from readapi.cors import check_origin
from readapi.services import ORG_POSITION, decode_body, run_command, services

T = TypeVar("T")
SCHEMES = {"basic": "apikey", "token": "operator", "chatsession": "chat"}
OPT_KEY = "parley_operation"  # route handler opt: the route's OpenAPI description (readapi/openapi.py)
Kind = Literal["operator", "apikey", "chat"]

# kind -> (security scheme name, its definition, the challenge a 401 names it with)
SECURITY_SCHEMES: dict[str, tuple[str, dict[str, Any], str]] = {
    "apikey": ("apiKey", {"type": "http", "scheme": "basic", "description":
                          "An API key: `Authorization: Basic base64(<key secret>:)` (the secret as the user "
                          "name, no password). What it may do is limited by its scopes."}, 'Basic realm="parley"'),
    "operator": ("operatorToken", {"type": "http", "scheme": "Token", "description":
                                   "An operator access token (from `POST /api/operators/sessions` or "
                                   "`parley admin`): `Authorization: Token <token>`. It holds every scope."},
                 'Token realm="parley"'),
    "chat": ("chatSession", {"type": "http", "scheme": "ChatSession", "description":
                             "A visitor's chat session (from `POST /api/chat/sessions`): "
                             "`Authorization: ChatSession <token>`."}, 'ChatSession realm="parley"'),
}
KIND_NAMES = {"operator": "an operator token", "apikey": "an API key", "chat": "a visitor's chat session"}


@dataclass(frozen=True)
class Auth:
    """Who may call a route: the credential kinds it accepts and the API key scope it needs. Stated once, in
    the route's description: the OpenAPI document and the guard below both read it."""

    accept: tuple[Kind, ...] = ("operator", "apikey")
    scope: str | None = None
    # the least operator role in the organization (owner > admin > agent); API keys are held to `scope`
    role: Role | None = None
    # a hot write: its handler authenticates through `with_principal`, which trusts a principal this process
    # kept from an earlier request (no lookup) because the store refuses the append once it was revoked
    kept: bool = False
    # open to an operator who must enrol in two-factor sign-in first (Principal.must_enrol): their profile,
    # the enrolment and sign-out; every other route answers 403 two-factor-enrolment-required
    enrolling: bool = False

    @property
    def guarded(self) -> bool:
        """Whether the route's guard authenticates before its handler runs: a route that accepts credentials,
        but a hot write (`kept`), which authenticates in `with_principal`."""
        return bool(self.accept) and not self.kept

    def challenge(self) -> str:
        """`WWW-Authenticate` of a 401: the schemes this route accepts. A public route refuses only what its
        body presents (the sign-in's password, a visitor's identity signature); its 401 names the token
        schemes but not Basic, whose challenge has a browser ask for a user name and password in a dialog of
        its own, over the dashboard's sign-in page."""
        kinds = self.accept or tuple(kind for kind in SECURITY_SCHEMES if kind != "apikey")
        return ", ".join(SECURITY_SCHEMES[kind][2] for kind in kinds)


PUBLIC = Auth(())
OPERATOR = Auth(("operator",))
OPERATOR_ENROLLING = Auth(("operator",), enrolling=True)
ADMIN = Auth(("operator",), role="admin")  # websites' settings, webhooks, API keys, the team, campaigns, exports
OWNER = Auth(("operator",), role="owner")  # the organization's own settings
VISITOR = Auth(("chat",))


def described_auth(route_handler: Any) -> Auth:
    """The Auth of the route's description (readapi/openapi.py's `Operation`); PUBLIC for a route without one."""
    operation = route_handler.opt.get(OPT_KEY) if route_handler is not None else None
    return operation.auth if operation else PUBLIC


def challenge(route_handler: Any) -> str:
    """`WWW-Authenticate` of a 401 on this route, from its description."""
    return described_auth(route_handler).challenge()


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


async def _lookup(request: Request, kind: str, secret_hash: str) -> Found | None:
    async with services(request).pool.connection() as conn:
        return await principal_of(conn, kind, secret_hash)


IDENTIFIED = "parley.principal"  # scope key: the request's principal (or None), once identified
LOOKED_UP = "parley.looked_up"  # scope key: whether it was looked up for this request (else it was kept)
AUTHOR = "parley.author"  # scope key: how the principal's messages name their author (`Found.author`)


async def identify(request: Request, *, kept: bool = False, again: bool = False) -> Principal | None:
    """The principal of the request's credential, or None without a valid one. Looked up once per
    request (the rate limiter needs it before routing, `authenticate` again in the handler) unless
    `kept` allows one this process knows already; `again` looks it up even if it was this request."""
    scope = request.scope
    # this request's principal serves unless asked again, or unless it was kept and a lookup is wanted
    if IDENTIFIED in scope and not again and (kept or scope[LOOKED_UP]):  # type: ignore[literal-required]
        return scope[IDENTIFIED]  # type: ignore[literal-required]
    try:
        presented = credential(request)
    except Unauthorized:
        presented = None
    key = presented and (presented[0], hash_secret(presented[1]))
    known = services(request).credentials
    found = known.get(key) if key and kept and not again else None
    looked_up = found is None
    if looked_up and key:
        found = await _lookup(request, *key)
        if found is None:
            known.forget(key)
        else:
            known.keep(key, found)
    if looked_up:
        scope[ORG_POSITION] = found.position if found else 0  # type: ignore[literal-required]
    scope[LOOKED_UP] = looked_up  # type: ignore[literal-required]
    scope[IDENTIFIED] = found and found.principal  # type: ignore[literal-required]
    scope[AUTHOR] = found and found.author  # type: ignore[literal-required]
    return scope[IDENTIFIED]  # type: ignore[literal-required]


def author(request: Request) -> OperatorIdentity | None:
    """How a message written by the request's principal names its author: an operator's identity as the
    principal's lookup found it (kept with it, and current as long as its generation is), None for others."""
    return request.scope.get(AUTHOR)  # type: ignore[return-value]


async def authenticate(request: Request, auth: Auth, *, kept: bool = False, again: bool = False) -> Principal:
    """The request's principal; 401 without a valid credential, 403 for a kind `auth` does not accept or
    a missing scope."""
    if credential(request) is None:
        raise Unauthorized("credentials are required")
    principal = await identify(request, kept=kept, again=again)
    if principal is None:
        raise Unauthorized("the credential is invalid or revoked")
    if principal.kind not in auth.accept:
        raise Forbidden(f"this endpoint does not accept {principal.kind} credentials")
    if principal.must_enrol and not auth.enrolling:
        raise TwoFactorEnrolmentRequired("the organization requires two-factor sign-in: turn it on "
                                         "(POST /api/operators/me/totp, then confirm a code) to continue")
    if auth.scope is not None and auth.scope not in principal.scopes:
        raise Forbidden(f"the API key lacks the {auth.scope} scope")
    if auth.role is not None and principal.is_operator and not principal.has_role(auth.role):
        raise Forbidden(f"this needs the {auth.role} role or above; yours is {principal.role}")
    if principal.kind == "chat":
        await check_origin(request, principal.website_id)
    origin.acting(principal.origin(request.scope.get(CLIENT_ADDRESS)))
    request.state.principal = principal
    return principal


async def authenticated_as_described(connection: ASGIConnection, route_handler: BaseRouteHandler) -> None:
    """The guard of every route whose Auth is `guarded` (`describe` sets it): the route authenticates
    exactly as its description's Auth says, before its parameters or body are read. A route without it pays
    nothing for it: Litestar copies the route handler for each guard of each request."""
    await authenticate(connection, described_auth(route_handler))  # type: ignore[arg-type]


def described_principal(request: Request) -> Principal:
    """The `principal` a handler declares: the one the guard authenticated."""
    return request.state.principal


async def described_body(request: Request) -> Any:
    """The `payload` a handler declares: the body decoded as its description's `body` shape, by
    `decode_body`'s rules; None for an empty body where the description has `body_required=False`."""
    operation = request.route_handler.opt[OPT_KEY]
    if not operation.body_required and not await request.body():
        return None
    return await decode_body(request, operation.body)


# What every handler may declare, by name: `principal: Authenticated` and `payload: Decoded[TheShape]`
# (`body` and `data` are Litestar's own names, the raw body and its own decoding).
DEPENDENCIES = {"principal": Provide(described_principal, sync_to_thread=False),
                "payload": Provide(described_body)}
Authenticated = NamedDependency[Principal]
Decoded = NamedDependency


async def with_principal(request: Request, command: Callable[..., Awaitable[T]]) -> T:
    """Runs a hot write (its Auth `kept`), `command` with the body decoded as the route's description
    says, for the request's principal, kept from an earlier request when this process has it: no lookup.
    Its append is refused (`CredentialsChanged`) if a credential was revoked since; then, or if the write
    fails otherwise (a revoked credential answers 401, whatever else is wrong with the request), the
    credential is looked up before anything is answered, and a refused append runs once more for the
    principal just looked up."""
    operation = request.route_handler.opt[OPT_KEY]

    async def write(principal: Principal) -> T:
        return await run_command(request, command, principal, await decode_body(request, operation.body))

    try:
        return await write(await authenticate(request, operation.auth, kept=True))
    except Exception as exc:
        if request.scope.get(LOOKED_UP, True) and not isinstance(exc, CredentialsChanged):
            raise  # looked up for this request: its answer stands
        principal = await authenticate(request, operation.auth, again=True)
        if not isinstance(exc, CredentialsChanged):
            raise
    return await write(replace(principal, generation=None))  # just looked up: nothing to check again


def operator_only(principal: Principal) -> None:
    if not principal.is_operator:
        raise Forbidden("this endpoint accepts only an operator access token")
